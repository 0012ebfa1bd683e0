package io.coordhost.interop.streams;

import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;

/**
 * The stateful Kafka Streams test application of the interop suite.
 *
 * <p>Topology: input (key k, value "n,producedMs") is re-keyed to "a-"+k (a
 * repartition topic), aggregated into "count,sum,lastN,lastProducedMs" (a
 * RocksDB store with a changelog topic), and every update is written to the
 * output topic. With record caching off every input record yields exactly one
 * output record, so {@link LoadGen} can check each output exactly.
 *
 * <p>Arguments are StreamsConfig properties as key=value (bootstrap.servers,
 * application.id, group.protocol, application.server, num.standby.replicas,
 * group.instance.id, state.dir, ...) plus input.topic, output.topic and
 * close.leave.group (true: leave the group on close; default false). The
 * process prints "STATE new old" on every state change and closes cleanly on
 * SIGTERM. A stream thread dying ends the process with exit status 1.
 */
public final class App {
    private App() {}

    public static void main(String[] args) throws Exception {
        Properties props = defaults();
        String input = "input";
        String output = "output";
        boolean leaveOnClose = false;
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("argument " + arg + " is not key=value");
            }
            String k = arg.substring(0, eq);
            String v = arg.substring(eq + 1);
            switch (k) {
                case "input.topic" -> input = v;
                case "output.topic" -> output = v;
                case "close.leave.group" -> leaveOnClose = Boolean.parseBoolean(v);
                default -> props.put(k, v);
            }
        }
        KafkaStreams streams = new KafkaStreams(topology(input, output), props);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, old) -> {
            System.out.println("STATE " + now + " " + old);
            System.out.flush();
            if (now == KafkaStreams.State.NOT_RUNNING || now == KafkaStreams.State.ERROR) {
                done.countDown();
            }
        });
        // A dead stream thread fails the run: shut the client down, so the
        // driver sees the process exit at once instead of waiting for RUNNING.
        streams.setUncaughtExceptionHandler(e -> {
            System.out.println("UNCAUGHT " + e);
            e.printStackTrace(System.out);
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
                .StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        // Kafka Streams' default close keeps a dynamic member in the group
        // until its session times out; close.leave.group=true leaves at once
        // (KIP-812's CloseOptions, the one API of 3.9, 4.2 and 4.4 alike;
        // 4.4 maps it to GroupMembershipOperation.LEAVE_GROUP).
        final boolean leave = leaveOnClose;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            @SuppressWarnings("deprecation")
            KafkaStreams.CloseOptions close = new KafkaStreams.CloseOptions()
                .timeout(Duration.ofSeconds(20)).leaveGroup(leave);
            streams.close(close);
            System.out.println("CLOSED");
            System.out.flush();
        }));
        streams.start();
        done.await();
        if (streams.state() == KafkaStreams.State.ERROR) {
            System.exit(1);
        }
    }

    static Properties defaults() {
        Properties p = new Properties();
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, "100");
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, "0");
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "1");
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, "1");
        p.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
        p.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class.getName());
        // Classic protocol: the suite's 10 s session timeout (the streams protocol
        // takes it from the coordinator's group config instead).
        p.put("session.timeout.ms", "10000");
        p.put("heartbeat.interval.ms", "1000");
        p.put("auto.offset.reset", "earliest");
        return p;
    }

    /** The aggregation: repartition by a new key, then a changelogged aggregate. */
    static Topology topology(String input, String output) {
        StreamsBuilder b = new StreamsBuilder();
        b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .groupBy((k, v) -> "a-" + k, Grouped.with("by-key", Serdes.String(), Serdes.String()))
            .aggregate(() -> "0,0,0,0", App::add,
                Materialized.<String, String, org.apache.kafka.streams.state.KeyValueStore<
                    org.apache.kafka.common.utils.Bytes, byte[]>>as("agg")
                    .withKeySerde(Serdes.String()).withValueSerde(Serdes.String())
                    .withCachingDisabled())
            .toStream()
            .to(output, Produced.with(Serdes.String(), Serdes.String()));
        return b.build();
    }

    /** Folds input "n,producedMs" into aggregate "count,sum,lastN,lastProducedMs". */
    static String add(String key, String value, String agg) {
        String[] in = value.split(",");
        String[] a = agg.split(",");
        long n = Long.parseLong(in[0]);
        long count = Long.parseLong(a[0]) + 1;
        long sum = Long.parseLong(a[1]) + n;
        return count + "," + sum + "," + n + "," + in[1];
    }
}
