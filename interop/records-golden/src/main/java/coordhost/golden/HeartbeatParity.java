package coordhost.golden;

import java.net.InetAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.message.StreamsGroupHeartbeatRequestData;
import org.apache.kafka.common.message.StreamsGroupHeartbeatResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.internals.LogContext;
import org.apache.kafka.coordinator.common.runtime.CoordinatorExecutor;
import org.apache.kafka.coordinator.common.runtime.CoordinatorMetadataDelta;
import org.apache.kafka.coordinator.common.runtime.CoordinatorMetadataImage;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.common.runtime.CoordinatorResult;
import org.apache.kafka.coordinator.common.runtime.CoordinatorTimer;
import org.apache.kafka.coordinator.group.GroupConfigManager;
import org.apache.kafka.coordinator.group.GroupCoordinatorConfig;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.GroupMetadataManager;
import org.apache.kafka.coordinator.group.api.streams.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.TaskAssignor;
import org.apache.kafka.coordinator.group.api.streams.assignor.TopologyDescriber;
import org.apache.kafka.coordinator.group.generated.*;
import org.apache.kafka.coordinator.group.metrics.GroupCoordinatorMetrics;
import org.apache.kafka.coordinator.group.modern.share.ShareGroupConfig;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.timeline.SnapshotRegistry;
import org.apache.kafka.common.TopicPartition;

/**
 * Drives Kafka 4.4's own GroupMetadataManager with a script of streams
 * heartbeats and clock ticks written by core/heartbeat_parity_test.go, with the
 * same deterministic "reference" assignor coordhost uses in tests, and prints
 * every response and every record (hex) so the Go test can compare them with
 * what coordhost's Coordinator does for the same script.
 *
 * <p>Scripts follow each other, each starting with "topics in:N" (a fresh
 * manager; optional initial delay and assignment interval follow the topics);
 * then "hb|member|epoch|process|owned|now|instance"
 * with owned "null" or "a,b;s;w" (tasks "0_1"); "tick|now".
 */
public final class HeartbeatParity {
    private static final HexFormat HEX = HexFormat.of();
    private static final GroupCoordinatorRecordSerde SERDE = new GroupCoordinatorRecordSerde();

    static final class ClockTime implements Time {
        long now;
        public long milliseconds() { return now; }
        public long nanoseconds() { return now * 1_000_000L; }
        public void sleep(long ms) { now += ms; }
        public void waitObject(Object o, Supplier<Boolean> c, long deadline) { throw new UnsupportedOperationException(); }
    }

    static final class Timeout {
        final String key; final long deadline; final CoordinatorTimer.TimeoutOperation<CoordinatorRecord> op;
        Timeout(String key, long deadline, CoordinatorTimer.TimeoutOperation<CoordinatorRecord> op) {
            this.key = key; this.deadline = deadline; this.op = op;
        }
    }

    static final class Timer implements CoordinatorTimer<CoordinatorRecord> {
        final ClockTime time; final Map<String, Timeout> timeouts = new HashMap<>();
        Timer(ClockTime time) { this.time = time; }
        public void schedule(String key, long delay, TimeUnit unit, boolean retry, TimeoutOperation<CoordinatorRecord> op) {
            timeouts.put(key, new Timeout(key, time.now + unit.toMillis(delay), op));
        }
        public void schedule(String key, long delay, TimeUnit unit, boolean retry, long backoff, TimeoutOperation<CoordinatorRecord> op) {
            schedule(key, delay, unit, retry, op);
        }
        public void scheduleIfAbsent(String key, long delay, TimeUnit unit, boolean retry, TimeoutOperation<CoordinatorRecord> op) {
            if (!timeouts.containsKey(key)) schedule(key, delay, unit, retry, op);
        }
        public void cancel(String key) { timeouts.remove(key); }
        public boolean isScheduled(String key) { return timeouts.containsKey(key); }
    }

    static final class Executor implements CoordinatorExecutor<CoordinatorRecord> {
        public <R> boolean schedule(String key, TaskRunnable<R> task, TaskOperation<CoordinatorRecord, R> op) { return false; }
        public boolean isScheduled(String key) { return false; }
        public void cancel(String key) { }
    }

    /** The same algorithm as core.ReferenceAssign (active tasks only, no standbys). */
    static final class ReferenceAssignor implements TaskAssignor {
        public String name() { return "sticky"; }
        public GroupAssignment assign(GroupSpec spec, TopologyDescriber topo) {
            List<String> members = new ArrayList<>(new TreeSet<>(spec.memberIds()));
            List<String[]> tasks = new ArrayList<>();
            List<String> subs = new ArrayList<>(topo.subtopologies());
            java.util.Collections.sort(subs);
            for (String s : subs) for (int p = 0; p < topo.maxNumInputPartitions(s); p++) tasks.add(new String[]{s, Integer.toString(p)});
            int n = members.size();
            Map<String, MemberAssignment> out = new HashMap<>();
            if (n == 0) return new GroupAssignment(out);
            int quota = (tasks.size() + n - 1) / n;
            Map<String, Integer> owner = new HashMap<>();
            for (int i = 0; i < n; i++) {
                Map<String, Set<Integer>> active = spec.memberAssignmentState(members.get(i)).activeTasks();
                for (String s : subs) for (int p : new TreeSet<>(active.getOrDefault(s, Set.of()))) owner.putIfAbsent(s + "_" + p, i);
            }
            int[] load = new int[n];
            List<Map<String, Set<Integer>>> assigned = new ArrayList<>();
            for (int i = 0; i < n; i++) assigned.add(new HashMap<>());
            List<String[]> rest = new ArrayList<>();
            for (String[] t : tasks) {
                Integer i = owner.get(t[0] + "_" + t[1]);
                if (i != null && load[i] < quota) {
                    assigned.get(i).computeIfAbsent(t[0], k -> new TreeSet<>()).add(Integer.parseInt(t[1]));
                    load[i]++;
                } else {
                    rest.add(t);
                }
            }
            for (String[] t : rest) {
                int best = 0;
                for (int i = 1; i < n; i++) if (load[i] < load[best]) best = i;
                assigned.get(best).computeIfAbsent(t[0], k -> new TreeSet<>()).add(Integer.parseInt(t[1]));
                load[best]++;
            }
            List<Map<String, Set<Integer>>> standby = new ArrayList<>();
            for (int i = 0; i < n; i++) standby.add(new HashMap<>());
            int replicas = spec.configs().numStandbyReplicas();
            if (replicas > 0) {
                Map<String, String> activeProc = new HashMap<>();
                for (int i = 0; i < n; i++) {
                    String proc = spec.memberMetadata(members.get(i)).processId();
                    for (Map.Entry<String, Set<Integer>> e : assigned.get(i).entrySet()) {
                        for (int p : e.getValue()) activeProc.put(e.getKey() + "_" + p, proc);
                    }
                }
                for (String s : subs) {
                    if (!topo.isStateful(s)) continue;
                    for (int p = 0; p < topo.maxNumInputPartitions(s); p++) {
                        Set<String> used = new java.util.HashSet<>();
                        used.add(activeProc.get(s + "_" + p));
                        for (int r = 0; r < replicas; r++) {
                            int best = -1;
                            for (int i = 0; i < n; i++) {
                                String proc = spec.memberMetadata(members.get(i)).processId();
                                if (used.contains(proc)) continue;
                                if (best < 0 || load[i] < load[best]) best = i;
                            }
                            if (best < 0) break;
                            used.add(spec.memberMetadata(members.get(best)).processId());
                            standby.get(best).computeIfAbsent(s, k -> new TreeSet<>()).add(p);
                            load[best]++;
                        }
                    }
                }
            }
            for (int i = 0; i < n; i++) out.put(members.get(i), new MemberAssignment(assigned.get(i), standby.get(i)));
            return new GroupAssignment(out);
        }
    }

    private record Image(Map<String, Integer> topics) implements CoordinatorMetadataImage {
        public Set<Uuid> topicIds() { return Set.of(); }
        public Set<String> topicNames() { return topics.keySet(); }
        public Optional<TopicMetadata> topicMetadata(String name) {
            Integer n = topics.get(name);
            if (n == null) return Optional.empty();
            return Optional.of(new TopicMetadata() {
                public String name() { return name; }
                public Uuid id() { return new Uuid(name.hashCode(), 1); }
                public int partitionCount() { return n; }
                public List<String> partitionRacks(int p) { return new ArrayList<>(); }
            });
        }
        public Optional<TopicMetadata> topicMetadata(Uuid id) { return Optional.empty(); }
        public CoordinatorMetadataDelta emptyDelta() { throw new UnsupportedOperationException(); }
        public long version() { return 1; }
        public boolean isEmpty() { return topics.isEmpty(); }
    }

    public static void main(String[] args) throws Exception {
        List<String> lines = Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8);
        StringBuilder out = new StringBuilder();
        int start = 0;
        for (int i = 1; i <= lines.size(); i++) {
            if (i == lines.size() || lines.get(i).startsWith("topics ")) {
                runScript(lines.subList(start, i), out);
                start = i;
            }
        }
        System.out.print(out);
    }

    private static void runScript(List<String> lines, StringBuilder out) {
        Map<String, Integer> topics = new HashMap<>();
        String[] head = lines.get(0).split(" ");
        for (String t : head[1].split(",")) {
            String[] kv = t.split(":");
            topics.put(kv[0], Integer.parseInt(kv[1]));
        }
        String delay = head.length > 2 ? head[2] : "0";
        String interval = head.length > 3 ? head[3] : "0";
        out.append(lines.get(0)).append('\n');
        ClockTime time = new ClockTime();
        Timer timer = new Timer(time);
        LogContext lc = new LogContext();
        SnapshotRegistry registry = new SnapshotRegistry(lc);
        Map<String, Object> props = new HashMap<>();
        props.put("group.streams.initial.rebalance.delay.ms", delay);
        props.put("group.streams.assignment.interval.ms", interval);
        props.put("group.streams.num.standby.replicas", "1");
        GroupCoordinatorConfig config = GroupCoordinatorConfig.fromProps(props);
        GroupMetadataManager gmm = org.apache.kafka.coordinator.group.ParityManagers.build(lc, registry, time, timer,
            new Executor(), config, new GroupConfigManager(config, ShareGroupConfig.fromProps(Map.of())),
            List.of(new ReferenceAssignor()), new Image(topics),
            new GroupCoordinatorMetrics().newMetricsShard(registry, new TopicPartition("__consumer_offsets", 0)));
        for (String line : lines.subList(1, lines.size())) {
            String[] f = line.split("\\|", -1);
            if (f[0].equals("tick")) {
                time.now = Long.parseLong(f[1]);
                out.append("tick ").append(f[1]).append('\n');
                while (true) {
                    Timeout next = null;
                    for (Timeout t : timer.timeouts.values()) {
                        if (t.deadline <= time.now && (next == null || t.deadline < next.deadline
                            || (t.deadline == next.deadline && t.key.compareTo(next.key) < 0))) next = t;
                    }
                    if (next == null) break;
                    timer.timeouts.remove(next.key);
                    apply(gmm, next.op.generateRecords().records(), out);
                }
                continue;
            }
            time.now = Long.parseLong(f[5]);
            StreamsGroupHeartbeatRequestData req = new StreamsGroupHeartbeatRequestData().setGroupId("g").setMemberId(f[1])
                .setMemberEpoch(Integer.parseInt(f[2])).setInstanceId(f[6].isEmpty() ? null : f[6]);
            if (req.memberEpoch() == 0 && !f[3].isEmpty()) {
                req.setRebalanceTimeoutMs(30000).setProcessId(f[3]).setTopology(new StreamsGroupHeartbeatRequestData.Topology()
                    .setEpoch(0).setSubtopologies(List.of(new StreamsGroupHeartbeatRequestData.Subtopology()
                        .setSubtopologyId("0").setSourceTopics(List.of("in"))
                        .setStateChangelogTopics(List.of(new StreamsGroupHeartbeatRequestData.TopicInfo().setName("store-changelog"))))));
            }
            if (!f[4].equals("null")) {
                String[] o = f[4].split(";", -1);
                req.setActiveTasks(tasks(o[0])).setStandbyTasks(tasks(o[1])).setWarmupTasks(tasks(o[2]));
            }
            String member = f[1];
            try {
                CoordinatorResult<?, CoordinatorRecord> r = gmm.streamsGroupHeartbeat(context(member), req);
                StreamsGroupHeartbeatResponseData resp = ((org.apache.kafka.coordinator.group.streams.StreamsGroupHeartbeatResult) r.response()).data();
                apply(gmm, r.records(), out);
                out.append("response ").append(member).append(" epoch=").append(resp.memberEpoch());
                if (resp.activeTasks() != null) {
                    out.append(" active=").append(fmt(resp.activeTasks())).append(" standby=").append(fmt(resp.standbyTasks()));
                }
                out.append(" status=");
                for (StreamsGroupHeartbeatResponseData.Status s : resp.status()) out.append(s.statusCode()).append(',');
                out.append('\n');
            } catch (ApiException e) {
                out.append("response ").append(member).append(" error=").append(Errors.forException(e).name()).append('\n');
            }
        }
    }

    private static void apply(GroupMetadataManager gmm, List<CoordinatorRecord> records, StringBuilder out) {
        for (CoordinatorRecord r : records) {
            byte[] v = SERDE.serializeValue(r);
            out.append("record ").append(HEX.formatHex(SERDE.serializeKey(r))).append(' ').append(v == null ? "-" : HEX.formatHex(v)).append('\n');
            Object k = r.key();
            Object val = r.value() == null ? null : r.value().message();
            if (k instanceof StreamsGroupMetadataKey key) gmm.replay(key, (StreamsGroupMetadataValue) val);
            else if (k instanceof StreamsGroupMemberMetadataKey key) gmm.replay(key, (StreamsGroupMemberMetadataValue) val);
            else if (k instanceof StreamsGroupTargetAssignmentMetadataKey key) gmm.replay(key, (StreamsGroupTargetAssignmentMetadataValue) val);
            else if (k instanceof StreamsGroupTargetAssignmentMemberKey key) gmm.replay(key, (StreamsGroupTargetAssignmentMemberValue) val);
            else if (k instanceof StreamsGroupCurrentMemberAssignmentKey key) gmm.replay(key, (StreamsGroupCurrentMemberAssignmentValue) val);
            else if (k instanceof StreamsGroupTopologyKey key) gmm.replay(key, (StreamsGroupTopologyValue) val);
            else throw new IllegalStateException("unexpected record " + k);
        }
    }

    private static List<StreamsGroupHeartbeatRequestData.TaskIds> tasks(String s) {
        List<StreamsGroupHeartbeatRequestData.TaskIds> out = new ArrayList<>();
        if (s.isEmpty()) return out;
        Map<String, List<Integer>> by = new TreeMap<>();
        for (String t : s.split(",")) {
            int i = t.lastIndexOf('_');
            by.computeIfAbsent(t.substring(0, i), k -> new ArrayList<>()).add(Integer.parseInt(t.substring(i + 1)));
        }
        by.forEach((sub, ps) -> out.add(new StreamsGroupHeartbeatRequestData.TaskIds().setSubtopologyId(sub).setPartitions(ps)));
        return out;
    }

    private static String fmt(List<StreamsGroupHeartbeatResponseData.TaskIds> ids) {
        List<String> out = new ArrayList<>();
        for (StreamsGroupHeartbeatResponseData.TaskIds t : ids) for (int p : t.partitions()) out.add(t.subtopologyId() + "_" + p);
        return "[" + String.join(" ", out) + "]";
    }

    private static AuthorizableRequestContext context(String member) {
        return new AuthorizableRequestContext() {
            public String listenerName() { return "PLAINTEXT"; }
            public SecurityProtocol securityProtocol() { return SecurityProtocol.PLAINTEXT; }
            public KafkaPrincipal principal() { return KafkaPrincipal.ANONYMOUS; }
            public InetAddress clientAddress() { return InetAddress.getLoopbackAddress(); }
            public int requestType() { return 88; }
            public int requestVersion() { return 1; }
            public String clientId() { return "client-" + member; }
            public int correlationId() { return 0; }
        };
    }
}
