package io.coordhost.interop.streams;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Input producer and exact output verifier for {@link App}.
 *
 * <p>Creates the input and output topics, then produces continuously: key
 * "k"+i goes to partition i % partitions with value "n,producedMs", n counting
 * 1, 2, 3... per key. A verifier thread reads the output read_committed and
 * checks every record: the aggregate for (key, n) must be count=n and
 * sum=n(n+1)/2, and each (key, n) must appear exactly once. The processing gap
 * of an input partition is the largest (time the output was read minus the
 * input's produce time) over its records; a phase also gives the median, 99th
 * percentile and maximum of that time over the outputs read in it.
 *
 * <p>Phases split the run: a record counts as "in" for the phase it was
 * produced in, and as "out" (with its gap) for the phase its output was read
 * in, so a disruption's gap lands in the phase that caused it even for
 * records produced just before it began.
 *
 * <p>Reads commands from stdin: "phase NAME" starts a new phase (records
 * produced from then on are counted, and their gaps measured, under NAME; the
 * run starts in phase "start"); "stop" ends producing; the verifier then waits
 * (bounded by drain.ms) until every produced record has its output, prints
 * "RESULT {json}" and the process exits. Prints "PROGRESS ..." every 5 s.
 *
 * <p>Arguments (key=value): bootstrap.servers, input.topic, output.topic,
 * partitions, keys, rate (records/s), drain.ms. For {@link OrdersApp} also
 * customers.topic, regions.topic and regions: the customers table ("k"+i
 * in region "r"+(i % regions), partition i % partitions like the orders) is
 * written before the first order, and a second verifier reads the regions
 * topic in order: per region, every update must raise the count by one and
 * the sum by the order's n, each customer's n must follow its previous one,
 * and the region must be the customer's; an n seen again is a duplicate, a
 * skipped n is missing.
 */
public final class LoadGen {
    private LoadGen() {}

    private static Map<String, String> args;

    public static void main(String[] argv) throws Exception {
        args = new HashMap<>();
        for (String a : argv) {
            int eq = a.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("argument " + a + " is not key=value");
            }
            args.put(a.substring(0, eq), a.substring(eq + 1));
        }
        String bootstrap = need("bootstrap.servers");
        String input = args.getOrDefault("input.topic", "input");
        String output = args.getOrDefault("output.topic", "output");
        int partitions = Integer.parseInt(args.getOrDefault("partitions", "6"));
        int keys = Integer.parseInt(args.getOrDefault("keys", "60"));
        int rate = Integer.parseInt(args.getOrDefault("rate", "200"));
        long drainMs = Long.parseLong(args.getOrDefault("drain.ms", "60000"));

        String customers = args.get("customers.topic");
        String regionsTopic = args.get("regions.topic");
        int regions = Integer.parseInt(args.getOrDefault("regions", "4"));
        if (customers == null) {
            createTopics(bootstrap, partitions, input, output);
        } else {
            createTopics(bootstrap, partitions, input, output, customers, regionsTopic);
            writeCustomers(bootstrap, customers, partitions, keys, regions);
        }
        System.out.println("TOPICS " + input + " " + output);
        System.out.flush();

        Verifier v = new Verifier(bootstrap, output, partitions);
        Thread vt = new Thread(v, "verifier");
        vt.start();
        RegionVerifier rv = null;
        Thread rt = null;
        if (customers != null) {
            rv = new RegionVerifier(v, bootstrap, regionsTopic, partitions, keys, regions);
            v.regions = rv;
            rt = new Thread(rv, "region-verifier");
            rt.start();
        }

        long[] produced = new long[keys];
        AtomicLong sendErrors = new AtomicLong();
        Thread stopper = stdinReader(v);
        try (KafkaProducer<String, String> p = producer(bootstrap)) {
            long start = System.nanoTime();
            long sent = 0;
            long lastProgress = System.currentTimeMillis();
            while (stopper.isAlive()) {
                long due = start + sent * 1_000_000_000L / rate;
                long wait = due - System.nanoTime();
                if (wait > 0) {
                    Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                    continue;
                }
                int k = (int) (sent % keys);
                long n = ++produced[k];
                long producedMs = System.currentTimeMillis();
                v.countIn(producedMs);
                String value = n + "," + producedMs;
                p.send(new ProducerRecord<>(input, k % partitions, "k" + k, value), (md, err) -> {
                    if (err != null) {
                        sendErrors.incrementAndGet();
                        System.out.println("SEND-ERROR " + err);
                    }
                });
                sent++;
                long now = System.currentTimeMillis();
                if (now - lastProgress >= 5000) {
                    lastProgress = now;
                    System.out.println("PROGRESS produced=" + sent + " " + v.progress());
                    System.out.flush();
                }
            }
            p.flush();
        }
        v.expect(produced);
        long drainEnd = System.currentTimeMillis() + drainMs;
        vt.join(drainMs);
        if (rv != null) {
            rv.expect(produced);
            rt.join(Math.max(1, drainEnd - System.currentTimeMillis()));
            rv.stop();
            rt.join(5000);
        }
        v.stop();
        vt.join(5000);
        // The region verdict first: its thread takes its own lock, then the main verifier's.
        String regionJson = rv == null ? "" : rv.json();
        System.out.println("RESULT " + v.result(produced, sendErrors.get(), regionJson));
        System.out.flush();
        System.exit(0);
    }

    private static String need(String key) {
        String v = args.get(key);
        if (v == null) {
            throw new IllegalArgumentException("missing argument " + key + "=...");
        }
        return v;
    }

    /** A thread that applies stdin's phase commands and ends on "stop" or EOF. */
    private static Thread stdinReader(Verifier v) {
        Thread t = new Thread(() -> {
            try (BufferedReader r = new BufferedReader(
                    new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = r.readLine()) != null) {
                    line = line.trim();
                    if (line.equals("stop")) {
                        return;
                    }
                    if (line.equals("lag")) {
                        System.out.println("LAG " + v.lag());
                        System.out.flush();
                    }
                    if (line.startsWith("phase ")) {
                        v.phase(line.substring(6).trim(), System.currentTimeMillis());
                        System.out.println("PHASE " + line.substring(6).trim());
                        System.out.flush();
                    }
                }
            } catch (Exception e) {
                System.out.println("STDIN " + e);
            }
        }, "stdin");
        t.setDaemon(true);
        t.start();
        return t;
    }

    private static void createTopics(String bootstrap, int partitions, String... topics)
            throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        try (Admin admin = Admin.create(p)) {
            for (String t : topics) {
                try {
                    admin.createTopics(List.of(new NewTopic(t, partitions, (short) 1))).all().get();
                } catch (ExecutionException e) {
                    if (!(e.getCause() instanceof TopicExistsException)) {
                        throw e;
                    }
                }
            }
            awaitLeaders(admin, List.of(topics));
        }
    }

    /**
     * Waits (at most a minute) until every partition of topics has a leader.
     * A produce in the first moments after CreateTopics can get
     * NOT_LEADER_OR_FOLLOWER from a real broker while a later pipelined
     * batch of the same idempotent producer is accepted; the first batch's
     * retry then fails OUT_OF_ORDER_SEQUENCE_NUMBER until it expires (seen
     * once against Kafka 4.4), which would count as lost input.
     */
    private static void awaitLeaders(Admin admin, List<String> topics) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        while (true) {
            boolean ready = true;
            try {
                for (var d : admin.describeTopics(topics).allTopicNames().get().values()) {
                    for (var pi : d.partitions()) {
                        ready &= pi.leader() != null && !pi.leader().isEmpty();
                    }
                }
            } catch (ExecutionException e) {
                ready = false; // not yet known to the broker that answered
            }
            if (ready) {
                return;
            }
            if (System.currentTimeMillis() > deadline) {
                throw new IllegalStateException("partitions of " + topics + " have no leader after 60 s");
            }
            Thread.sleep(100);
        }
    }

    /** Writes every customer's region, flushed before the first order is sent. */
    private static void writeCustomers(String bootstrap, String topic, int partitions, int keys, int regions) {
        try (KafkaProducer<String, String> p = producer(bootstrap)) {
            for (int k = 0; k < keys; k++) {
                p.send(new ProducerRecord<>(topic, k % partitions, "k" + k, "r" + (k % regions)));
            }
            p.flush();
        }
    }

    private static KafkaProducer<String, String> producer(String bootstrap) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        // One batch in flight: a retried first batch can never fall behind
        // a later one (see awaitLeaders); 200 records/s need no pipelining.
        p.put("max.in.flight.requests.per.connection", "1");
        p.put("linger.ms", "5");
        p.put("delivery.timeout.ms", "120000");
        return new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    }

    /** A check of one output record (key, value, the time it was read). */
    interface Check {
        void check(String key, String value, long readMs);
    }

    /**
     * Reads every partition of topic read_committed from the beginning,
     * handing each record to check, until done says so.
     */
    static void readCommitted(String bootstrap, String topic, int partitions,
                              java.util.function.BooleanSupplier done, Check check) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("isolation.level", "read_committed");
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        try (KafkaConsumer<String, String> c =
                 new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < partitions; i++) {
                tps.add(new TopicPartition(topic, i));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            while (!done.getAsBoolean()) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                    check.check(r.key(), r.value(), System.currentTimeMillis());
                }
            }
        }
    }

    /** Counts and per-partition processing gaps of records produced in one phase. */
    static final class Phase {
        final String name;
        final long startMs;
        final long[] maxGapMs;
        final long[] worstProducedMs; // produce time of the record with the partition's max gap
        final String[] worstKey;
        /** Outputs read in the phase by their latency (read minus produce time, ms). */
        final java.util.TreeMap<Long, Long> latencyMs = new java.util.TreeMap<>();
        long in;
        long out;

        Phase(String name, long startMs, int partitions) {
            this.name = name;
            this.startMs = startMs;
            this.maxGapMs = new long[partitions];
            this.worstProducedMs = new long[partitions];
            this.worstKey = new String[partitions];
        }

        void gap(int part, String key, long producedMs, long readMs) {
            if (readMs - producedMs > maxGapMs[part]) {
                maxGapMs[part] = readMs - producedMs;
                worstProducedMs[part] = producedMs;
                worstKey[part] = key;
            }
        }

        /** Counts one output's latency. */
        void latency(long producedMs, long readMs) {
            latencyMs.merge(readMs - producedMs, 1L, Long::sum);
        }

        /** The latency of the output at quantile q of those counted, -1 if none. */
        long latencyQuantile(double q) {
            long total = 0;
            for (long c : latencyMs.values()) {
                total += c;
            }
            long rank = (long) (total * q);
            for (var e : latencyMs.entrySet()) {
                rank -= e.getValue();
                if (rank < 0) {
                    return e.getKey();
                }
            }
            return -1;
        }

        String json() {
            StringBuilder g = new StringBuilder("[");
            for (int i = 0; i < maxGapMs.length; i++) {
                g.append(i == 0 ? "" : ",").append(maxGapMs[i]);
            }
            g.append("],\"worstProducedMs\":[");
            for (int i = 0; i < worstProducedMs.length; i++) {
                g.append(i == 0 ? "" : ",").append(worstProducedMs[i]);
            }
            g.append("],\"worstKey\":[");
            for (int i = 0; i < worstKey.length; i++) {
                g.append(i == 0 ? "" : ",").append('"').append(worstKey[i] == null ? "" : worstKey[i]).append('"');
            }
            g.append(']');
            return "{\"name\":\"" + name + "\",\"startMs\":" + startMs + ",\"in\":" + in
                + ",\"out\":" + out + ",\"latencyP50Ms\":" + latencyQuantile(0.5)
                + ",\"latencyP99Ms\":" + latencyQuantile(0.99) + ",\"latencyMaxMs\":"
                + (latencyMs.isEmpty() ? -1 : latencyMs.lastKey()) + ",\"partitionGapMs\":" + g + "}";
        }
    }

    /** Reads the output topic read_committed and checks every record. */
    static final class Verifier implements Runnable {
        private final String bootstrap;
        private final String topic;
        private final int partitions;
        private final List<Phase> phases = new ArrayList<>();
        private final Map<String, java.util.BitSet> seen = new HashMap<>();
        private final List<String> wrongSamples = new ArrayList<>();
        private volatile boolean running = true;
        private volatile long[] expected;
        volatile RegionVerifier regions; // OrdersApp's second output, or null
        private long records;
        private long wrong;
        private long duplicates;

        Verifier(String bootstrap, String topic, int partitions) {
            this.bootstrap = bootstrap;
            this.topic = topic;
            this.partitions = partitions;
            phases.add(new Phase("start", 0, partitions));
        }

        /** Starts phase name at wall-clock startMs. */
        synchronized void phase(String name, long startMs) {
            phases.add(new Phase(name, startMs, partitions));
        }

        /** Records produced so far whose output has not been read yet. */
        synchronized long lag() {
            long in = 0;
            for (Phase p : phases) {
                in += p.in;
            }
            long lag = in - records;
            RegionVerifier rv = regions;
            return rv == null ? lag : Math.max(lag, in - rv.records());
        }

        /** Counts one record produced at producedMs in its phase. */
        synchronized void countIn(long producedMs) {
            phaseOf(producedMs).in++;
        }

        /** The phase that was current at wall-clock ms. */
        private Phase phaseOf(long ms) {
            for (int i = phases.size() - 1; i > 0; i--) {
                if (ms >= phases.get(i).startMs) {
                    return phases.get(i);
                }
            }
            return phases.get(0);
        }

        synchronized String progress() {
            return "consumed=" + records + " wrong=" + wrong + " duplicates=" + duplicates;
        }

        void expect(long[] produced) {
            expected = produced.clone();
        }

        void stop() {
            running = false;
        }

        @Override
        public void run() {
            readCommitted(bootstrap, topic, partitions, () -> !running || complete(), this::check);
        }

        private synchronized boolean complete() {
            long[] exp = expected;
            if (exp == null) {
                return false;
            }
            for (int k = 0; k < exp.length; k++) {
                java.util.BitSet s = seen.get("a-k" + k);
                long have = s == null ? 0 : s.cardinality();
                if (have < exp[k]) {
                    return false;
                }
            }
            return true;
        }

        private synchronized void check(String key, String value, long readMs) {
            records++;
            String[] f = value.split(",");
            long count = Long.parseLong(f[0]);
            long sum = Long.parseLong(f[1]);
            long n = Long.parseLong(f[2]);
            long producedMs = Long.parseLong(f[3]);
            if (count != n || sum != n * (n + 1) / 2) {
                wrong++;
                if (wrongSamples.size() < 10) {
                    wrongSamples.add(key + "=" + value);
                }
            }
            java.util.BitSet s = seen.computeIfAbsent(key, x -> new java.util.BitSet());
            if (s.get((int) n)) {
                duplicates++;
            }
            s.set((int) n);
            int part = Integer.parseInt(key.substring(3)) % partitions;
            Phase ph = phaseOf(readMs);
            ph.out++;
            ph.gap(part, key, producedMs, readMs);
            ph.latency(producedMs, readMs);
        }

        /** A gap measured on the second output: counts toward the phase's gap only. */
        synchronized void gapOnly(int part, String key, long producedMs, long readMs) {
            phaseOf(readMs).gap(part, key, producedMs, readMs);
        }

        /** The run's verdict as one JSON object. */
        synchronized String result(long[] produced, long sendErrors, String region) {
            long in = 0;
            long missing = 0;
            long wrongFinal = 0;
            for (int k = 0; k < produced.length; k++) {
                in += produced[k];
                java.util.BitSet s = seen.get("a-k" + k);
                long have = s == null ? 0 : s.get(1, (int) produced[k] + 1).cardinality();
                missing += produced[k] - have;
                // The key's final aggregate must be the one for its last input.
                long last = s == null ? 0 : s.length() - 1;
                if (last != produced[k]) {
                    wrongFinal++;
                }
            }
            StringBuilder ph = new StringBuilder("[");
            for (int i = 0; i < phases.size(); i++) {
                ph.append(i == 0 ? "" : ",").append(phases.get(i).json());
            }
            ph.append(']');
            StringBuilder samples = new StringBuilder("[");
            for (int i = 0; i < wrongSamples.size(); i++) {
                samples.append(i == 0 ? "" : ",").append('"').append(wrongSamples.get(i)).append('"');
            }
            samples.append(']');
            return "{\"in\":" + in + ",\"out\":" + records + region + ",\"wrong\":" + wrong
                + ",\"duplicates\":" + duplicates + ",\"missing\":" + missing
                + ",\"wrongFinal\":" + wrongFinal + ",\"sendErrors\":" + sendErrors
                + ",\"phases\":" + ph
                + ",\"wrongSamples\":" + samples + "}";
        }
    }

    /**
     * Reads OrdersApp's regions topic read_committed, in order per region, and
     * checks every update against the state the previous updates imply.
     */
    static final class RegionVerifier implements Runnable {
        private final Verifier main;
        private final String bootstrap;
        private final String topic;
        private final int partitions;
        private final int regions;
        private final long[] lastN; // per customer: the last n seen
        private final Map<String, long[]> state = new HashMap<>(); // region -> {count, sum}
        private final List<String> samples = new ArrayList<>();
        private volatile boolean running = true;
        private volatile long[] expected;
        private volatile long records; // written under this lock, read by the main verifier's lag
        private long wrong;
        private long duplicates;
        private long skipped;

        RegionVerifier(Verifier main, String bootstrap, String topic, int partitions, int keys, int regions) {
            this.main = main;
            this.bootstrap = bootstrap;
            this.topic = topic;
            this.partitions = partitions;
            this.regions = regions;
            this.lastN = new long[keys];
        }

        void expect(long[] produced) {
            expected = produced.clone();
        }

        void stop() {
            running = false;
        }

        long records() {
            return records;
        }

        private synchronized boolean complete() {
            long[] exp = expected;
            if (exp == null) {
                return false;
            }
            for (int k = 0; k < exp.length; k++) {
                if (lastN[k] < exp[k]) {
                    return false;
                }
            }
            return true;
        }

        @Override
        public void run() {
            readCommitted(bootstrap, topic, partitions, () -> !running || complete(), this::check);
        }

        private synchronized void check(String region, String value, long readMs) {
            records++;
            String[] f = value.split(",");
            long count = Long.parseLong(f[0]);
            long sum = Long.parseLong(f[1]);
            String customer = f[2];
            long n = Long.parseLong(f[3]);
            long producedMs = Long.parseLong(f[4]);
            int k = Integer.parseInt(customer.substring(1));
            long[] st = state.computeIfAbsent(region, x -> new long[2]);
            boolean bad = false;
            if (n <= lastN[k]) {
                duplicates++;
                bad = true;
            } else if (n > lastN[k] + 1) {
                skipped += n - lastN[k] - 1;
                bad = true;
            }
            if (count != st[0] + 1 || sum != st[1] + n || !region.equals("r" + (k % regions))) {
                wrong++;
                bad = true;
            }
            if (bad && samples.size() < 10) {
                samples.add(region + "=" + value + " after " + st[0] + "," + st[1] + " last n " + lastN[k]);
            }
            // Resynchronise on what the record says, so one error is counted once.
            st[0] = count;
            st[1] = sum;
            lastN[k] = Math.max(lastN[k], n);
            main.gapOnly(k % partitions, customer, producedMs, readMs);
        }

        /** The region verdict as JSON fields (each with a leading comma). */
        synchronized String json() {
            long missing = skipped;
            long[] exp = expected;
            if (exp != null) {
                for (int k = 0; k < exp.length; k++) {
                    missing += Math.max(0, exp[k] - lastN[k]);
                }
            }
            StringBuilder s = new StringBuilder("[");
            for (int i = 0; i < samples.size(); i++) {
                s.append(i == 0 ? "" : ",").append('"').append(samples.get(i)).append('"');
            }
            s.append(']');
            return ",\"regionOut\":" + records + ",\"regionWrong\":" + wrong
                + ",\"regionDuplicates\":" + duplicates + ",\"regionMissing\":" + missing
                + ",\"regionSamples\":" + s;
        }
    }
}
