package coordhost.golden;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.utils.internals.LogContext;
import org.apache.kafka.coordinator.group.CommitPartitionValidator;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTopologyValue;
import org.apache.kafka.coordinator.group.streams.MemberState;
import org.apache.kafka.coordinator.group.streams.StreamsGroup;
import org.apache.kafka.coordinator.group.streams.StreamsGroupMember;
import org.apache.kafka.coordinator.group.streams.StreamsTopology;
import org.apache.kafka.coordinator.group.streams.TasksTupleWithEpochs;
import org.apache.kafka.timeline.SnapshotRegistry;

/**
 * Runs Kafka 4.4's StreamsGroup.validateOffsetCommit on cases written by
 * core/commit_parity_test.go. The group always has the topology
 * 0: sources s1,s2 / 1: sources s2, repartition r1, and one member "m"
 * (process p) unless the member field is "-".
 *
 * <p>Input: id | member epoch or "-" | assigned active (t@e,..) | pending
 * active | request member id | request epoch | transactional | version |
 * topic | partitions (comma-separated).
 * Output: id | Kafka error name (NONE if accepted) | message.
 */
public final class CommitParity {
    public static void main(String[] args) throws Exception {
        for (String line : Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8)) {
            if (!line.isBlank()) System.out.println(run(line.split("\\|", -1)));
        }
    }

    private static String run(String[] f) {
        LogContext lc = new LogContext();
        StreamsGroup g = new StreamsGroup(lc, new SnapshotRegistry(lc), "g");
        g.setTopology(StreamsTopology.fromRecord(new StreamsGroupTopologyValue().setEpoch(0).setSubtopologies(List.of(
            sub("0", List.of("s1", "s2"), List.of()),
            sub("1", List.of("s2"), List.of("r1"))))));
        if (!f[1].equals("-")) {
            g.updateMember(new StreamsGroupMember.Builder("m").setMemberEpoch(Integer.parseInt(f[1]))
                .setPreviousMemberEpoch(0).setState(MemberState.STABLE).setProcessId("p")
                .setRebalanceTimeoutMs(30000).setTopologyEpoch(0).setClientId("c").setClientHost("h")
                .setClientTags(Map.of())
                .setAssignedTasks(new TasksTupleWithEpochs(epochs(f[2]), Map.of(), Map.of()))
                .setTasksPendingRevocation(new TasksTupleWithEpochs(epochs(f[3]), Map.of(), Map.of()))
                .build());
        }
        try {
            CommitPartitionValidator v = g.validateOffsetCommit(f[4], null, Integer.parseInt(f[5]),
                Boolean.parseBoolean(f[6]), Integer.parseInt(f[7]));
            for (String p : f[9].split(",")) {
                v.validate(f[8], Uuid.ZERO_UUID, Integer.parseInt(p));
            }
            return f[0] + "|NONE|";
        } catch (ApiException e) {
            return f[0] + "|" + Errors.forException(e).name() + "|" + e.getMessage();
        }
    }

    private static StreamsGroupTopologyValue.Subtopology sub(String id, List<String> sources, List<String> repartition) {
        List<StreamsGroupTopologyValue.TopicInfo> rep = new ArrayList<>();
        for (String r : repartition) {
            rep.add(new StreamsGroupTopologyValue.TopicInfo().setName(r).setPartitions(4).setReplicationFactor((short) 0)
                .setTopicConfigs(List.of()));
        }
        return new StreamsGroupTopologyValue.Subtopology().setSubtopologyId(id).setSourceTopics(sources)
            .setSourceTopicRegex(List.of()).setStateChangelogTopics(List.of()).setRepartitionSinkTopics(List.of())
            .setRepartitionSourceTopics(rep).setCopartitionGroups(List.of());
    }

    private static Map<String, Map<Integer, Integer>> epochs(String s) {
        Map<String, Map<Integer, Integer>> out = new HashMap<>();
        if (s.equals("-") || s.isEmpty()) return out;
        for (String t : s.split(",")) {
            String[] te = t.split("@");
            int i = te[0].lastIndexOf('_');
            out.computeIfAbsent(te[0].substring(0, i), k -> new HashMap<>())
                .put(Integer.parseInt(te[0].substring(i + 1)), Integer.parseInt(te[1]));
        }
        return out;
    }
}
