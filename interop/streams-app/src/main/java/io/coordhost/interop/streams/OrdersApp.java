package io.coordhost.interop.streams;

import java.time.Duration;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Joined;
import org.apache.kafka.streams.kstream.KStream;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;

/**
 * The interop suite's heavier Kafka Streams application: two sub-topologies,
 * a stream-table join, a repartition topic and two changelogged aggregates.
 *
 * <p>Topology: orders (key customer "k"+i, value "n,producedMs") are joined
 * to the customers table (key "k"+i, value its region "r"+j) into
 * "n,producedMs,region". Each enriched order updates (1) a per-customer
 * aggregate "count,sum,lastN,lastProducedMs" written to the output topic under
 * key "a-"+customer — the same format as {@link App}, checked by the same
 * verifier — and (2), re-keyed by region through the repartition topic
 * "by-region", a per-region aggregate "count,sum,customer,n,producedMs" (the
 * order that caused the update last) written to the regions topic. A missing
 * customer joins as region "none", which the verifier counts as wrong. Record
 * caching is off, so every order yields exactly one output of each kind.
 *
 * <p>Arguments are StreamsConfig properties as key=value plus orders.topic,
 * customers.topic, output.topic, regions.topic and close.leave.group (as in
 * {@link App}). Defaults are {@link App}'s with two stream threads.
 */
public final class OrdersApp {
    private OrdersApp() {}

    public static void main(String[] args) throws Exception {
        Properties props = App.defaults();
        props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, "2");
        String orders = "orders";
        String customers = "customers";
        String output = "output";
        String regions = "regions";
        boolean leaveOnClose = false;
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("argument " + arg + " is not key=value");
            }
            String k = arg.substring(0, eq);
            String v = arg.substring(eq + 1);
            switch (k) {
                case "orders.topic" -> orders = v;
                case "customers.topic" -> customers = v;
                case "output.topic" -> output = v;
                case "regions.topic" -> regions = v;
                case "close.leave.group" -> leaveOnClose = Boolean.parseBoolean(v);
                default -> props.put(k, v);
            }
        }
        KafkaStreams streams = new KafkaStreams(topology(orders, customers, output, regions), props);
        CountDownLatch done = new CountDownLatch(1);
        streams.setStateListener((now, old) -> {
            System.out.println("STATE " + now + " " + old);
            System.out.flush();
            if (now == KafkaStreams.State.NOT_RUNNING || now == KafkaStreams.State.ERROR) {
                done.countDown();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            System.out.println("UNCAUGHT " + e);
            e.printStackTrace(System.out);
            return org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler
                .StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
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

    /** The join, the per-customer aggregate and the repartitioned per-region aggregate. */
    static Topology topology(String orders, String customers, String output, String regions) {
        StreamsBuilder b = new StreamsBuilder();
        KTable<String, String> table = b.table(customers, Consumed.with(Serdes.String(), Serdes.String()),
            Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as("customers")
                .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()).withCachingDisabled());
        KStream<String, String> enriched = b.stream(orders, Consumed.with(Serdes.String(), Serdes.String()))
            .leftJoin(table, (order, region) -> order + "," + (region == null ? "none" : region),
                Joined.with(Serdes.String(), Serdes.String(), Serdes.String(), "orders-customers"));
        enriched.groupByKey(Grouped.with("per-customer", Serdes.String(), Serdes.String()))
            .aggregate(() -> "0,0,0,0", App::add, store("per-customer"))
            .toStream()
            .map((k, v) -> KeyValue.pair("a-" + k, v))
            .to(output, Produced.with(Serdes.String(), Serdes.String()));
        enriched.map((k, v) -> KeyValue.pair(v.split(",")[2], k + "," + v))
            .groupByKey(Grouped.with("by-region", Serdes.String(), Serdes.String()))
            .aggregate(() -> "0,0,-,0,0", OrdersApp::addRegion, store("per-region"))
            .toStream()
            .to(regions, Produced.with(Serdes.String(), Serdes.String()));
        return b.build();
    }

    private static Materialized<String, String, KeyValueStore<Bytes, byte[]>> store(String name) {
        return Materialized.<String, String, KeyValueStore<Bytes, byte[]>>as(name)
            .withKeySerde(Serdes.String()).withValueSerde(Serdes.String()).withCachingDisabled();
    }

    /** Folds "customer,n,producedMs,region" into "count,sum,customer,n,producedMs". */
    static String addRegion(String region, String value, String agg) {
        String[] in = value.split(",");
        String[] a = agg.split(",");
        long n = Long.parseLong(in[1]);
        long count = Long.parseLong(a[0]) + 1;
        long sum = Long.parseLong(a[1]) + n;
        return count + "," + sum + "," + in[0] + "," + n + "," + in[2];
    }
}
