package coordhost.parity;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;
import org.apache.kafka.coordinator.group.modern.Assignment;
import org.apache.kafka.coordinator.group.modern.GroupSpecImpl;
import org.apache.kafka.coordinator.group.modern.MemberSubscriptionAndAssignmentImpl;
import org.apache.kafka.coordinator.group.util.UpdatedMembersAndTargetAssignmentView;
import org.apache.kafka.common.utils.internals.LogContext;
import org.apache.kafka.timeline.SnapshotRegistry;
import org.apache.kafka.timeline.TimelineHashMap;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Runs Kafka's server-side UniformAssignor and RangeAssignor on each parity
 * input file named on the command line and prints, per file, "== NAME" and
 * each assignor's result (see testdata/partition-assignors/README.md).
 *
 * The GroupSpec is built the way the Go ports assume: members in a HashMap
 * filled in ascending member-id order; each subscription a HashSet and each
 * current assignment a HashMap of HashSets, filled in ascending topic and
 * partition order.
 *
 * With "map" lines the members are handed over as Kafka's coordinator does
 * (GroupMetadataManager and TargetAssignmentBuilder.build): the group's
 * members are a TimelineHashMap replaying the lines' puts and removes, seen
 * through an UpdatedMembersAndTargetAssignmentView to which the running
 * request's additions are added, and copied into a new HashMap in that
 * view's iteration order.
 */
public final class PartitionParity {
    private record Topic(Uuid id, int partitions, List<Set<String>> racks) { }

    private record Member(String id, String instance, String rack, List<Integer> subscribed,
                          TreeMap<Integer, List<Integer>> assigned) { }

    public static void main(String[] args) throws IOException {
        StringBuilder out = new StringBuilder();
        for (String file : args) {
            out.append("== ").append(Path.of(file).getFileName()).append('\n');
            run(Files.readAllLines(Path.of(file)), out);
        }
        System.out.print(out);
    }

    private static void run(List<String> lines, StringBuilder out) {
        List<Topic> topics = new ArrayList<>();
        List<String> rackNames = new ArrayList<>();
        TreeMap<String, Member> members = new TreeMap<>();
        SubscriptionType type = SubscriptionType.HOMOGENEOUS;
        List<String[]> mapOps = new ArrayList<>();
        for (String line : lines) {
            if (line.isEmpty() || line.startsWith("#")) continue;
            String[] f = line.split(" ");
            switch (f[0]) {
                case "map" -> mapOps.add(f); // map put|remove|add ID
                case "type" -> type = f[1].equals("heterogeneous") ? SubscriptionType.HETEROGENEOUS : SubscriptionType.HOMOGENEOUS;
                case "racks" -> { for (int i = 1; i < f.length; i++) rackNames.add(f[i]); }
                case "topic" -> {
                    // topic HEX32 PARTITIONS racks R,R;R;...|-
                    Uuid id = new Uuid(Long.parseUnsignedLong(f[1].substring(0, 16), 16),
                        Long.parseUnsignedLong(f[1].substring(16), 16));
                    List<Set<String>> racks = new ArrayList<>();
                    if (!f[4].equals("-")) {
                        for (String part : f[4].split(";", -1)) {
                            Set<String> rs = new HashSet<>();
                            if (!part.isEmpty()) for (String r : part.split(",")) rs.add(rackNames.get(Integer.parseInt(r)));
                            racks.add(rs);
                        }
                    }
                    topics.add(new Topic(id, Integer.parseInt(f[2]), racks));
                }
                case "member" -> {
                    // member ID instance I|- rack R|- subscribed T,T|- assigned T:P,P;T:P|-
                    List<Integer> subs = new ArrayList<>();
                    if (!f[7].equals("-")) for (String t : f[7].split(",")) subs.add(Integer.parseInt(t));
                    TreeMap<Integer, List<Integer>> assigned = new TreeMap<>();
                    if (!f[9].equals("-")) {
                        for (String tp : f[9].split(";")) {
                            String[] kv = tp.split(":");
                            List<Integer> ps = new ArrayList<>();
                            for (String p : kv[1].split(",")) ps.add(Integer.parseInt(p));
                            assigned.put(Integer.parseInt(kv[0]), ps);
                        }
                    }
                    members.put(f[1], new Member(f[1], f[3].equals("-") ? null : f[3], f[5].equals("-") ? null : f[5], subs, assigned));
                }
                default -> throw new IllegalArgumentException("unknown line: " + line);
            }
        }
        Map<String, MemberSubscriptionAndAssignmentImpl> built = new HashMap<>();
        Map<Uuid, Map<Integer, String>> inverted = new HashMap<>();
        for (Member m : members.values()) {
            Set<Uuid> subs = new HashSet<>();
            for (int t : m.subscribed) subs.add(topics.get(t).id);
            Map<Uuid, Set<Integer>> assigned = new HashMap<>();
            for (Map.Entry<Integer, List<Integer>> e : m.assigned.entrySet()) {
                Uuid id = topics.get(e.getKey()).id;
                Set<Integer> ps = new HashSet<>();
                for (int p : e.getValue()) {
                    ps.add(p);
                    inverted.computeIfAbsent(id, k -> new HashMap<>()).put(p, m.id);
                }
                assigned.put(id, ps);
            }
            built.put(m.id, new MemberSubscriptionAndAssignmentImpl(Optional.ofNullable(m.rack),
                Optional.ofNullable(m.instance), subs, new Assignment(assigned)));
        }
        Map<String, MemberSubscriptionAndAssignmentImpl> specs = new HashMap<>();
        if (mapOps.isEmpty()) {
            for (String id : members.keySet()) specs.put(id, built.get(id));
        } else {
            TimelineHashMap<String, String> table = new TimelineHashMap<>(new SnapshotRegistry(new LogContext()), 0);
            List<String> added = new ArrayList<>();
            for (String[] op : mapOps) {
                switch (op[1]) {
                    case "put" -> table.put(op[2], op[2]);
                    case "remove" -> table.remove(op[2]);
                    case "add" -> added.add(op[2]);
                    default -> throw new IllegalArgumentException("unknown map op: " + op[1]);
                }
            }
            UpdatedMembersAndTargetAssignmentView<String, String> view =
                new UpdatedMembersAndTargetAssignmentView<>(table, new HashMap<>(), new HashMap<>(), id -> null);
            for (String id : added) view.addOrUpdateMember(id, id);
            view.members().forEach((id, v) -> specs.put(id, built.get(id)));
        }
        Map<Uuid, Topic> byId = new HashMap<>();
        Map<Uuid, Integer> index = new HashMap<>();
        for (int i = 0; i < topics.size(); i++) {
            byId.put(topics.get(i).id, topics.get(i));
            index.put(topics.get(i).id, i);
        }
        SubscribedTopicDescriber describer = new SubscribedTopicDescriber() {
            @Override
            public int numPartitions(Uuid topicId) {
                Topic t = byId.get(topicId);
                return t == null ? -1 : t.partitions;
            }

            @Override
            public Set<String> racksForPartition(Uuid topicId, int partition) {
                Topic t = byId.get(topicId);
                return t == null || t.racks.isEmpty() ? Set.of() : t.racks.get(partition);
            }
        };
        ConsumerGroupPartitionAssignor[] assignors = {new UniformAssignor(), new RangeAssignor()};
        for (ConsumerGroupPartitionAssignor a : assignors) {
            out.append(a.name()).append('\n');
            try {
                GroupAssignment ga = a.assign(new GroupSpecImpl(specs, type, inverted), describer);
                for (String id : members.keySet()) {
                    out.append("member ").append(id).append(' ').append(format(ga.members().get(id), index)).append('\n');
                }
            } catch (RuntimeException e) {
                out.append("error ").append(e.getClass().getSimpleName()).append('\n');
            }
        }
    }

    /** Formats an assignment as T:P,P;T:P (topic indices, ascending) or "-". */
    private static String format(MemberAssignment ma, Map<Uuid, Integer> index) {
        if (ma == null) return "-";
        TreeMap<Integer, TreeSet<Integer>> byTopic = new TreeMap<>();
        for (Map.Entry<Uuid, Set<Integer>> e : ma.partitions().entrySet()) {
            if (!e.getValue().isEmpty()) byTopic.put(index.get(e.getKey()), new TreeSet<>(e.getValue()));
        }
        if (byTopic.isEmpty()) return "-";
        StringBuilder b = new StringBuilder();
        for (Map.Entry<Integer, TreeSet<Integer>> e : byTopic.entrySet()) {
            if (b.length() > 0) b.append(';');
            b.append(e.getKey()).append(':');
            boolean first = true;
            for (int p : e.getValue()) {
                if (!first) b.append(',');
                b.append(p);
                first = false;
            }
        }
        return b.toString();
    }
}
