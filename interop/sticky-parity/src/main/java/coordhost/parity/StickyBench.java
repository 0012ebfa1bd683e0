package coordhost.parity;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.coordinator.group.api.streams.assignor.GroupAssignment;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * JMH benchmark of Kafka 4.4.0's StickyTaskAssignor on parity input files
 * (the shapes of plugins/assignor-sticky's benchmarks, written by its
 * TestJMH): average time of one assign() call, the input parsed once.
 * Run through TestJMH, or by hand:
 *
 *   java -cp target/classes:$(cat target/classpath.txt) org.openjdk.jmh.Main StickyBench \
 *       -f 1 -wi 3 -i 5 -p input=FILE.in
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
public class StickyBench {
    /** A parity input file. */
    @Param({""})
    public String input;

    private StickyParity.Input in;

    @Setup
    public void load() throws IOException {
        if (input.isEmpty()) {
            throw new IllegalArgumentException("set the input file with -p input=FILE.in");
        }
        in = StickyParity.Input.parse(Files.readAllLines(Path.of(input)));
    }

    @Benchmark
    public GroupAssignment assign() {
        return in.assign();
    }
}
