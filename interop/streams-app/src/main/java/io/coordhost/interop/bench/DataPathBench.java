package io.coordhost.interop.bench;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.Callback;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The Java client's side of the data-path comparison (interop/benchgateway_test.go):
 * the same phases as the Go clients', run by Kafka's own producer and consumer.
 *
 * <p>One process serves every side of a run, so the JIT has compiled the same code
 * for each. Commands come on stdin, one a line; each answers with one "RESULT" line
 * (or "ERROR ..."):
 *
 * <ul>
 *   <li>{@code produce BOOTSTRAP TOPIC RECORDS SIZE}: a producer with the client's
 *       defaults but acks=all and no compression; once it has the topic's metadata it
 *       prints "READY" and waits for a line "go" (the driver reads the processes' CPU
 *       then), sends RECORDS records of SIZE incompressible bytes and flushes.
 *       "RESULT produce nanos=N records=N errors=N".
 *   <li>{@code fetch BOOTSTRAP TOPIC RECORDS}: a consumer with the client's defaults,
 *       no group, every partition assigned from the start; "READY", "go", then polls
 *       until RECORDS records came. "RESULT fetch nanos=N records=N bytes=N".
 *   <li>{@code latency BOOTSTRAP TOPIC RATE WARM TOTAL SIZE}: a producer with linger.ms=0
 *       sends RATE records of SIZE bytes (at least 16) a second, each stamped with its send time and number, and a
 *       consumer of the same topic (fetch.max.wait.ms=100) takes the time from the send
 *       to its poll of each record after the first WARM. "RESULT latency p50us=N
 *       p99us=N records=N".
 *   <li>{@code quit}.
 * </ul>
 */
public final class DataPathBench {
    private DataPathBench() {}

    /** How long a phase may take before it fails. */
    private static final Duration PHASE_LIMIT = Duration.ofMinutes(3);

    public static void main(String[] argv) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        System.out.println("STARTED");
        System.out.flush();
        for (String line; (line = in.readLine()) != null; ) {
            String[] f = line.trim().split("\\s+");
            try {
                switch (f[0]) {
                    case "produce" -> produce(in, f[1], f[2], Integer.parseInt(f[3]), Integer.parseInt(f[4]));
                    case "fetch" -> fetch(in, f[1], f[2], Integer.parseInt(f[3]));
                    case "latency" -> latency(f[1], f[2], Integer.parseInt(f[3]), Integer.parseInt(f[4]), Integer.parseInt(f[5]),
                            Integer.parseInt(f[6]));
                    case "quit" -> {
                        return;
                    }
                    default -> System.out.println("ERROR unknown command: " + line);
                }
            } catch (Exception e) {
                System.out.println("ERROR " + f[0] + ": " + e);
                e.printStackTrace(System.out);
            }
            System.out.flush();
        }
    }

    private static Properties producerProps(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", "all");
        p.put("compression.type", "none");
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        return p;
    }

    private static Properties consumerProps(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        return p;
    }

    /** Bytes that do not compress, the same in every run. */
    private static byte[] value(int size) {
        byte[] v = new byte[size];
        new Random(0x6777).nextBytes(v);
        return v;
    }

    /** Prints READY and waits for the driver's "go". */
    private static void ready(BufferedReader in) throws IOException {
        System.out.println("READY");
        System.out.flush();
        String line = in.readLine();
        if (!"go".equals(line)) {
            throw new IOException("expected \"go\", got " + line);
        }
    }

    private static List<TopicPartition> partitions(KafkaConsumer<byte[], byte[]> c, String topic) {
        List<TopicPartition> tps = new ArrayList<>();
        for (PartitionInfo pi : c.partitionsFor(topic, Duration.ofSeconds(30))) {
            tps.add(new TopicPartition(pi.topic(), pi.partition()));
        }
        if (tps.isEmpty()) {
            throw new IllegalStateException("topic " + topic + " has no partitions");
        }
        return tps;
    }

    private static void produce(BufferedReader in, String bootstrap, String topic, int records, int size) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProps(bootstrap))) {
            producer.partitionsFor(topic);
            byte[] v = value(size);
            AtomicLong errors = new AtomicLong();
            AtomicReference<Exception> first = new AtomicReference<>();
            Callback cb = (md, e) -> {
                if (e != null) {
                    errors.incrementAndGet();
                    first.compareAndSet(null, e);
                }
            };
            ready(in);
            long start = System.nanoTime();
            for (int i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>(topic, v), cb);
            }
            producer.flush();
            long nanos = System.nanoTime() - start;
            if (first.get() != null) {
                System.out.println("ERROR produce: " + errors.get() + " records failed, the first with " + first.get());
            }
            System.out.printf("RESULT produce nanos=%d records=%d errors=%d%n", nanos, records, errors.get());
        }
    }

    private static void fetch(BufferedReader in, String bootstrap, String topic, int records) throws Exception {
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProps(bootstrap))) {
            List<TopicPartition> tps = partitions(consumer, topic);
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            ready(in);
            long start = System.nanoTime();
            long deadline = start + PHASE_LIMIT.toNanos();
            long n = 0;
            long bytes = 0;
            while (n < records) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofSeconds(1))) {
                    n++;
                    bytes += r.value().length;
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new IllegalStateException(n + " of " + records + " records fetched within " + PHASE_LIMIT);
                }
            }
            long nanos = System.nanoTime() - start;
            System.out.printf("RESULT fetch nanos=%d records=%d bytes=%d%n", nanos, n, bytes);
        }
    }

    private static void latency(String bootstrap, String topic, int rate, int warm, int total, int size)
            throws Exception {
        Properties pp = producerProps(bootstrap);
        pp.put("linger.ms", "0");
        Properties cp = consumerProps(bootstrap);
        cp.put("fetch.max.wait.ms", "100");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(pp);
                KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(cp)) {
            List<TopicPartition> tps = partitions(consumer, topic);
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            producer.partitionsFor(topic);
            long[] lat = new long[total];
            AtomicReference<Exception> failed = new AtomicReference<>();
            Thread reader = new Thread(() -> {
                int got = 0;
                long deadline = System.nanoTime() + PHASE_LIMIT.toNanos();
                try {
                    while (got < total && System.nanoTime() - deadline < 0) {
                        var polled = consumer.poll(Duration.ofMillis(200));
                        long now = System.nanoTime();
                        for (ConsumerRecord<byte[], byte[]> r : polled) {
                            ByteBuffer b = ByteBuffer.wrap(r.value());
                            long sent = b.getLong(0);
                            long i = b.getLong(8);
                            if (i >= warm && got < total) {
                                lat[got++] = now - sent;
                            }
                        }
                    }
                    if (got < total) {
                        throw new IllegalStateException(got + " of " + total + " records consumed within " + PHASE_LIMIT);
                    }
                } catch (Exception e) {
                    failed.set(e);
                }
            }, "latency-consumer");
            reader.start();
            byte[] v = value(size);
            AtomicLong errors = new AtomicLong();
            long interval = TimeUnit.SECONDS.toNanos(1) / rate;
            long start = System.nanoTime();
            for (int i = 0; i < warm + total; i++) {
                long due = start + i * interval;
                for (long d; (d = due - System.nanoTime()) > 0; ) {
                    LockSupport.parkNanos(d);
                }
                byte[] rec = v.clone();
                ByteBuffer.wrap(rec).putLong(0, System.nanoTime()).putLong(8, i);
                producer.send(new ProducerRecord<>(topic, rec), (md, e) -> {
                    if (e != null) {
                        errors.incrementAndGet();
                    }
                });
            }
            producer.flush();
            reader.join(PHASE_LIMIT.toMillis());
            if (failed.get() != null) {
                throw failed.get();
            }
            if (errors.get() > 0) {
                throw new IllegalStateException(errors.get() + " records of the latency phase failed");
            }
            Arrays.sort(lat);
            System.out.printf("RESULT latency p50us=%d p99us=%d records=%d%n",
                    lat[total / 2] / 1000, lat[total * 99 / 100] / 1000, total);
        }
    }
}
