package coordhost.golden;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import org.apache.kafka.common.errors.FencedMemberEpochException;
import org.apache.kafka.coordinator.group.streams.CurrentAssignmentBuilder;
import org.apache.kafka.coordinator.group.streams.MemberState;
import org.apache.kafka.coordinator.group.streams.StreamsGroupMember;
import org.apache.kafka.coordinator.group.streams.TasksTuple;
import org.apache.kafka.coordinator.group.streams.TasksTupleWithEpochs;

/**
 * Runs Kafka 4.4's own streams CurrentAssignmentBuilder on reconciliation cases
 * written by coordhost's differential test (core/reconcile_parity_test.go) and
 * prints Kafka's outcome in the same canonical form.
 *
 * <p>Input, one case per line, fields separated by '|':
 * id | state byte | member epoch | previous epoch | process | target epoch |
 * assigned active (t@epoch,..) | assigned standby | assigned warm-up |
 * pending active (t@epoch,..) | pending standby | pending warm-up |
 * target active | target standby | target warm-up |
 * owned ("null" or active;standby;warmup) |
 * active owners (t=process,..) | standby owners (t=p+p,..) | warm-up owners.
 * A task is "subtopology_partition"; "-" is an empty list.
 *
 * <p>Output: id | FENCED, or id | state | epoch | previous epoch |
 * assigned active | standby | warm-up | pending active | standby | warm-up.
 */
public final class ReconcileParity {
    public static void main(String[] args) throws Exception {
        for (String line : Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8)) {
            if (line.isBlank()) continue;
            System.out.println(run(line.split("\\|", -1)));
        }
    }

    private static String run(String[] f) {
        String id = f[0];
        StreamsGroupMember member = new StreamsGroupMember.Builder("m")
            .setState(MemberState.fromValue(Byte.parseByte(f[1])))
            .setMemberEpoch(Integer.parseInt(f[2]))
            .setPreviousMemberEpoch(Integer.parseInt(f[3]))
            .setProcessId(f[4])
            .setRebalanceTimeoutMs(30000).setTopologyEpoch(0).setClientId("c").setClientHost("h")
            .setClientTags(Map.of())
            .setAssignedTasks(new TasksTupleWithEpochs(withEpochs(f[6]), plain(f[7]), plain(f[8])))
            .setTasksPendingRevocation(new TasksTupleWithEpochs(withEpochs(f[9]), plain(f[10]), plain(f[11])))
            .build();
        int targetEpoch = Integer.parseInt(f[5]);
        TasksTuple target = new TasksTuple(plain(f[12]), plain(f[13]), plain(f[14]));
        TasksTuple owned = null;
        if (!f[15].equals("null")) {
            String[] o = f[15].split(";", -1);
            owned = new TasksTuple(plain(o[0]), plain(o[1]), plain(o[2]));
        }
        Map<String, String> activeOwner = new HashMap<>();
        for (String e : items(f[16])) {
            String[] kv = e.split("=");
            activeOwner.put(kv[0], kv[1]);
        }
        Map<String, Set<String>> standbyOwners = owners(f[17]);
        Map<String, Set<String>> warmupOwners = owners(f[18]);
        try {
            StreamsGroupMember out = new CurrentAssignmentBuilder(member)
                .withTargetAssignment(targetEpoch, target)
                .withCurrentActiveTaskProcessId((s, p) -> activeOwner.get(s + "_" + p))
                .withCurrentStandbyTaskProcessIds((s, p) -> standbyOwners.getOrDefault(s + "_" + p, Set.of()))
                .withCurrentWarmupTaskProcessIds((s, p) -> warmupOwners.getOrDefault(s + "_" + p, Set.of()))
                .withOwnedAssignment(owned)
                .build();
            return String.join("|", id, Byte.toString(out.state().value()), out.memberEpoch().toString(),
                out.previousMemberEpoch().toString(),
                fmtEpochs(out.assignedTasks().activeTasksWithEpochs()), fmt(out.assignedTasks().standbyTasks()),
                fmt(out.assignedTasks().warmupTasks()),
                fmtEpochs(out.tasksPendingRevocation().activeTasksWithEpochs()), fmt(out.tasksPendingRevocation().standbyTasks()),
                fmt(out.tasksPendingRevocation().warmupTasks()));
        } catch (FencedMemberEpochException e) {
            return id + "|FENCED";
        }
    }

    private static List<String> items(String s) {
        List<String> out = new ArrayList<>();
        if (s.isEmpty() || s.equals("-")) return out;
        for (String x : s.split(",")) out.add(x);
        return out;
    }

    private static Map<String, Set<Integer>> plain(String s) {
        Map<String, Set<Integer>> out = new HashMap<>();
        for (String t : items(s)) {
            int i = t.lastIndexOf('_');
            out.computeIfAbsent(t.substring(0, i), k -> new HashSet<>()).add(Integer.parseInt(t.substring(i + 1)));
        }
        return out;
    }

    private static Map<String, Map<Integer, Integer>> withEpochs(String s) {
        Map<String, Map<Integer, Integer>> out = new HashMap<>();
        for (String t : items(s)) {
            String[] te = t.split("@");
            int i = te[0].lastIndexOf('_');
            out.computeIfAbsent(te[0].substring(0, i), k -> new HashMap<>())
                .put(Integer.parseInt(te[0].substring(i + 1)), Integer.parseInt(te[1]));
        }
        return out;
    }

    private static Map<String, Set<String>> owners(String s) {
        Map<String, Set<String>> out = new HashMap<>();
        for (String e : items(s)) {
            String[] kv = e.split("=");
            out.put(kv[0], new HashSet<>(List.of(kv[1].split("\\+"))));
        }
        return out;
    }

    private static String fmt(Map<String, Set<Integer>> m) {
        TreeSet<String> ts = new TreeSet<>(ReconcileParity::compareTasks);
        m.forEach((s, ps) -> ps.forEach(p -> ts.add(s + "_" + p)));
        return ts.isEmpty() ? "-" : String.join(",", ts);
    }

    private static String fmtEpochs(Map<String, Map<Integer, Integer>> m) {
        TreeMap<String, Integer> ts = new TreeMap<>(ReconcileParity::compareTasks);
        m.forEach((s, ps) -> ps.forEach((p, e) -> ts.put(s + "_" + p, e)));
        if (ts.isEmpty()) return "-";
        List<String> out = new ArrayList<>();
        ts.forEach((t, e) -> out.add(t + "@" + e));
        return String.join(",", out);
    }

    private static int compareTasks(String a, String b) {
        int i = a.lastIndexOf('_'), j = b.lastIndexOf('_');
        int c = a.substring(0, i).compareTo(b.substring(0, j));
        return c != 0 ? c : Integer.compare(Integer.parseInt(a.substring(i + 1)), Integer.parseInt(b.substring(j + 1)));
    }
}
