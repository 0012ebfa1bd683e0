package org.apache.kafka.streams.processor.internals.assignment;

import org.apache.kafka.streams.processor.assignment.ProcessId;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * JMH benchmark of Kafka Streams 4.4.0's HighAvailabilityTaskAssignor on
 * ha-parity input files (the shapes of plugins/assignor-ha's benchmarks,
 * written by its TestJMH): average time of one rebalance's assignment. The
 * input is parsed once; each operation builds plain ClientState objects
 * from it as StreamsPartitionAssignor does every rebalance
 * (addPreviousTasksAndOffsetSums, computeTaskLags) and then calls assign(),
 * so construction is inside the timed operation, as the Go port's Assign
 * builds its state from the request. Run through TestJMH, or by hand:
 *
 *   java -cp target/classes:$(cat target/classpath.txt) org.openjdk.jmh.Main HaBench \
 *       -f 1 -wi 3 -i 5 -p input=FILE.in [-p name=CASE]
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
public class HaBench {
    /** An ha-parity input file. */
    @Param({""})
    public String input;

    /** The case of the file to run; empty: the file's only case. */
    @Param({""})
    public String name;

    private HaParity.Case in;

    @Setup
    public void load() throws IOException {
        if (input.isEmpty()) {
            throw new IllegalArgumentException("set the input file with -p input=FILE.in");
        }
        final List<HaParity.Case> cases = HaParity.Case.read(Path.of(input));
        if (name.isEmpty() && cases.size() != 1) {
            throw new IllegalArgumentException(input + " holds " + cases.size() + " cases: choose one with -p name=CASE");
        }
        in = name.isEmpty() ? cases.get(0) : cases.stream().filter(c -> c.name.equals(name)).findFirst()
            .orElseThrow(() -> new IllegalArgumentException(input + " has no case " + name));
    }

    @Benchmark
    public Map<ProcessId, ClientState> assign() {
        final Map<ProcessId, ClientState> clients = in.clients(ClientState::new);
        in.assign(clients);
        return clients;
    }
}
