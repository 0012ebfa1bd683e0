package io.coordhost.interop.consumer;

import java.io.BufferedReader;
import java.io.FileInputStream;
import java.io.InputStreamReader;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Runs KafkaConsumer instances with group.protocol=consumer, one thread
 * each, driven by stdin lines:
 *
 * <pre>
 * start NAME GROUP topics:T1,T2     subscribe to topic names
 * start NAME GROUP pattern:REGEX    subscribe to a broker-side regex (SubscriptionPattern)
 * start NAME GROUP topics:T classic group.protocol=classic with the cooperative-sticky assignor
 * stop NAME                         close the consumer (it leaves the group)
 * metrics NAME                      report its connection metrics (below)
 * exit
 * </pre>
 *
 * An optional second argument names a properties file whose entries are
 * added to every consumer's configuration (security settings, e.g.
 * SASL OAUTHBEARER).
 *
 * Every instance prints JSON lines to stdout: {"client","event":"assigned","partitions":[...],"generation":N}
 * after each change of its assignment (its whole assignment after the change, and its
 * generation or member epoch then), {"client","event":"commit","error":...}
 * after each commit of polled records (with "ranges": the first and last offset polled per
 * partition), {"client","event":"error","error":...}
 * when its poll loop fails, {"client","event":"closed"} once closed, and
 * {"client","event":"metrics","reauthentications":N,"failedReauthentications":N,"connections":N}
 * when asked (KIP-368 re-authentications and connections opened, from the
 * client's own metrics). Every line carries "ts", the wall clock in milliseconds.
 */
public final class ConsumerApp {
    private static final Map<String, Instance> INSTANCES = new ConcurrentHashMap<>();
    private static final Properties EXTRA = new Properties();

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        if (args.length > 1) {
            try (Reader r = new InputStreamReader(new FileInputStream(args[1]), StandardCharsets.UTF_8)) {
                EXTRA.load(r);
            }
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split(" ", 5);
            switch (f[0]) {
                case "start" -> {
                    Instance i = new Instance(bootstrap, f[1], f[2], f[3], f.length > 4 && f[4].equals("classic"));
                    INSTANCES.put(f[1], i);
                    i.thread.start();
                }
                case "stop" -> {
                    Instance i = INSTANCES.remove(f[1]);
                    if (i != null) {
                        i.stop();
                    }
                }
                case "metrics" -> {
                    Instance i = INSTANCES.get(f[1]);
                    if (i != null) {
                        i.metricsAsked = true;
                    }
                }
                case "exit" -> {
                    for (Instance i : INSTANCES.values()) {
                        i.stop();
                    }
                    return;
                }
                default -> emit(f[0], "error", "\"error\":" + quote("unknown command: " + line));
            }
        }
    }

    static synchronized void emit(String client, String event, String rest) {
        StringBuilder b = new StringBuilder("{\"client\":").append(quote(client)).append(",\"event\":").append(quote(event));
        if (!rest.isEmpty()) {
            b.append(',').append(rest);
        }
        System.out.println(b.append(",\"ts\":").append(System.currentTimeMillis()).append('}'));
        System.out.flush();
    }

    static String quote(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    static String ranges(ConsumerRecords<byte[], byte[]> records) {
        List<String> out = new ArrayList<>();
        for (TopicPartition tp : records.partitions()) {
            List<ConsumerRecord<byte[], byte[]>> rs = records.records(tp);
            out.add(quote(tp.topic() + "-" + tp.partition()) + ":[" + rs.get(0).offset() + "," + rs.get(rs.size() - 1).offset() + "]");
        }
        return "\"ranges\":{" + String.join(",", out) + "}";
    }

    static String partitions(Collection<TopicPartition> tps) {
        List<String> names = new ArrayList<>();
        for (TopicPartition tp : tps) {
            names.add(quote(tp.topic() + "-" + tp.partition()));
        }
        names.sort(null);
        return "\"partitions\":[" + String.join(",", names) + "]";
    }

    static final class Instance implements ConsumerRebalanceListener {
        final String name;
        final KafkaConsumer<byte[], byte[]> consumer;
        final Thread thread;
        final Set<TopicPartition> owned = new HashSet<>(); // the callbacks run on the poll thread
        volatile boolean running = true;
        volatile boolean metricsAsked; // reported by the poll thread

        Instance(String bootstrap, String name, String group, String subscription, boolean classic) {
            this.name = name;
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
            p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, classic ? "classic" : "consumer");
            if (classic) {
                p.put(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, CooperativeStickyAssignor.class.getName());
                p.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, "10000");
                p.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, "250");
            }
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            p.putAll(EXTRA);
            consumer = new KafkaConsumer<>(p);
            if (subscription.startsWith("pattern:")) {
                consumer.subscribe(new SubscriptionPattern(subscription.substring("pattern:".length())), this);
            } else {
                consumer.subscribe(Arrays.asList(subscription.substring("topics:".length()).split(",")), this);
            }
            thread = new Thread(this::run, "consumer-" + name);
        }

        void run() {
            try {
                while (running) {
                    ConsumerRecords<byte[], byte[]> records = consumer.poll(Duration.ofMillis(200));
                    if (metricsAsked) {
                        metricsAsked = false;
                        emit(name, "metrics", "\"reauthentications\":" + total("successful-reauthentication-total")
                                + ",\"failedReauthentications\":" + total("failed-reauthentication-total")
                                + ",\"connections\":" + total("connection-creation-total"));
                    }
                    if (!records.isEmpty()) {
                        String error = null;
                        try {
                            consumer.commitSync(Duration.ofSeconds(10));
                        } catch (WakeupException e) {
                            throw e;
                        } catch (Exception e) {
                            error = e.getClass().getSimpleName();
                        }
                        emit(name, "commit", "\"records\":" + records.count() + ",\"error\":" + quote(error) + "," + ranges(records));
                    }
                }
            } catch (WakeupException e) {
                // stop() asked for it
            } catch (Exception e) {
                emit(name, "error", "\"error\":" + quote(e.getClass().getSimpleName() + ": " + e.getMessage()));
            } finally {
                consumer.close();
                emit(name, "closed", "");
            }
        }

        /** The sum of the client-wide metric name (group consumer-metrics). */
        long total(String metric) {
            double sum = 0;
            for (Map.Entry<MetricName, ? extends Metric> e : consumer.metrics().entrySet()) {
                if (e.getKey().name().equals(metric) && e.getKey().group().equals("consumer-metrics")
                        && e.getValue().metricValue() instanceof Double d) {
                    sum += d;
                }
            }
            return (long) sum;
        }

        void stop() throws InterruptedException {
            running = false;
            consumer.wakeup();
            thread.join(30_000);
        }

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            owned.removeAll(partitions);
            emit(name, "assigned", partitions(owned) + generation());
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            owned.addAll(partitions);
            emit(name, "assigned", partitions(owned) + generation());
        }

        /**
         * ",\"generation\":N": the consumer's generation (classic) or member
         * epoch (consumer protocol) as the callback sees it.
         */
        String generation() {
            return ",\"generation\":" + consumer.groupMetadata().generationId();
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            owned.removeAll(partitions);
            emit(name, "lost", partitions(partitions));
        }
    }
}
