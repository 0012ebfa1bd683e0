package coordhost.parity;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.coordinator.group.api.streams.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.TaskAssignorException;
import org.apache.kafka.coordinator.group.api.streams.assignor.TopologyDescriber;
import org.apache.kafka.coordinator.group.streams.assignor.AssignmentConfigsImpl;
import org.apache.kafka.coordinator.group.streams.assignor.GroupSpecImpl;
import org.apache.kafka.coordinator.group.streams.assignor.MemberMetadataAndStateImpl;
import org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor;
import org.apache.kafka.coordinator.group.streams.assignor.TaskId;

/**
 * Runs Kafka 4.4.0's StickyTaskAssignor on parity input files (the text
 * format written by plugins/assignor-sticky's parity test) and prints, for
 * each file, "== NAME" followed by one line per member, members sorted by
 * id, tasks sorted by (subtopology, partition):
 *
 *   member ID active S:P,S:P standby S:P
 *
 * ("-" for an empty list), or "error MESSAGE" if the assignor throws.
 * Members are handed to the assignor in a TreeMap, i.e. in member-id order.
 */
public final class StickyParity {
    public static void main(String[] args) throws IOException {
        StringBuilder out = new StringBuilder();
        for (String arg : args) {
            Path p = Path.of(arg);
            out.append("== ").append(p.getFileName()).append('\n');
            run(Files.readAllLines(p), out);
        }
        System.out.print(out);
    }

    private static void run(List<String> lines, StringBuilder out) {
        Input in = Input.parse(lines);
        GroupAssignment result;
        try {
            result = in.assign();
        } catch (TaskAssignorException e) {
            out.append("error ").append(e.getMessage()).append('\n');
            return;
        }
        for (String id : in.members.keySet()) {
            MemberAssignment a = result.members().get(id);
            out.append("member ").append(id)
                .append(" active ").append(format(a.activeTasks()))
                .append(" standby ").append(format(a.standbyTasks())).append('\n');
        }
    }

    /**
     * One parity input file, parsed once: the group spec and topology the
     * assignor is called with. The JMH benchmark (StickyBench) times
     * assign() on it.
     */
    static final class Input {
        final TreeMap<String, MemberMetadataAndStateImpl> members = new TreeMap<>();
        final GroupSpecImpl spec;
        final TopologyDescriber topology;

        private Input(int standbys, List<String> subs, Map<String, Integer> partitions, Map<String, Boolean> stateful,
                      Map<String, MemberMetadataAndStateImpl> members) {
            this.members.putAll(members);
            this.spec = new GroupSpecImpl(this.members, new AssignmentConfigsImpl(standbys, List.of()));
            this.topology = new TopologyDescriber() {
                public List<String> subtopologies() { return subs; }
                public int maxNumInputPartitions(String id) { return partitions.get(id); }
                public boolean isStateful(String id) { return stateful.get(id); }
            };
        }

        static Input parse(List<String> lines) {
            int standbys = 0;
            List<String> subs = new ArrayList<>();
            Map<String, Integer> partitions = new HashMap<>();
            Map<String, Boolean> stateful = new HashMap<>();
            Map<String, MemberMetadataAndStateImpl> members = new HashMap<>();
            for (String line : lines) {
                if (line.isBlank() || line.startsWith("#")) continue;
                String[] f = line.trim().split(" ");
                switch (f[0]) {
                    case "standbys":
                        standbys = Integer.parseInt(f[1]);
                        break;
                    case "subtopology":
                        subs.add(f[1]);
                        partitions.put(f[1], Integer.parseInt(f[2]));
                        stateful.put(f[1], f[3].equals("stateful"));
                        break;
                    case "member":
                        // member ID PROCESS active L standby L warmup L offsets L
                        members.put(f[1], new MemberMetadataAndStateImpl(Optional.empty(), Optional.empty(), f[2], Map.of(),
                            tasks(f[4]), tasks(f[6]), tasks(f[8]), offsets(f[10]), Map.of()));
                        break;
                    default:
                        throw new IllegalArgumentException("unknown line: " + line);
                }
            }
            return new Input(standbys, subs, partitions, stateful, members);
        }

        /** A fresh StickyTaskAssignor run, as the coordinator makes one per target. */
        GroupAssignment assign() {
            return new StickyTaskAssignor().assign(spec, topology);
        }
    }

    private static Map<String, Set<Integer>> tasks(String list) {
        Map<String, Set<Integer>> m = new HashMap<>();
        if (list.equals("-")) return m;
        for (String t : list.split(",")) {
            String[] sp = t.split(":");
            m.computeIfAbsent(sp[0], k -> new TreeSet<>()).add(Integer.parseInt(sp[1]));
        }
        return m;
    }

    private static Map<String, Map<Integer, Long>> offsets(String list) {
        Map<String, Map<Integer, Long>> m = new HashMap<>();
        if (list.equals("-")) return m;
        for (String t : list.split(",")) {
            String[] kv = t.split("=");
            String[] sp = kv[0].split(":");
            m.computeIfAbsent(sp[0], k -> new HashMap<>()).put(Integer.parseInt(sp[1]), Long.parseLong(kv[1]));
        }
        return m;
    }

    private static String format(Map<String, Set<Integer>> tasks) {
        TreeSet<TaskId> sorted = new TreeSet<>();
        tasks.forEach((sub, ps) -> ps.forEach(p -> sorted.add(new TaskId(sub, p))));
        if (sorted.isEmpty()) return "-";
        StringBuilder b = new StringBuilder();
        for (TaskId t : sorted) {
            if (b.length() > 0) b.append(',');
            b.append(t.subtopologyId()).append(':').append(t.partition());
        }
        return b.toString();
    }
}
