package coordhost.golden;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.message.StreamsGroupHeartbeatRequestData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.coordinator.group.GroupCoordinatorService;

/**
 * Runs Kafka 4.4's GroupCoordinatorService request checks for
 * StreamsGroupHeartbeat (throwIfStreamsGroupHeartbeatRequestIsUsingUnsupportedFeatures,
 * then throwIfStreamsGroupHeartbeatRequestIsInvalid — private, called by
 * reflection) on requests written by core/validation_parity_test.go.
 *
 * <p>Input: id | group | member | epoch | instance ("null" or value) | rack |
 * rebalance timeout | topology ("null", or "ok", "regex", "changelog") |
 * active | standby | warmup (each "null" or a count of task entries).
 * Output: id | error name (NONE) | message.
 */
public final class ValidationParity {
    public static void main(String[] args) throws Exception {
        Method unsupported = GroupCoordinatorService.class.getDeclaredMethod(
            "throwIfStreamsGroupHeartbeatRequestIsUsingUnsupportedFeatures", StreamsGroupHeartbeatRequestData.class);
        Method invalid = GroupCoordinatorService.class.getDeclaredMethod(
            "throwIfStreamsGroupHeartbeatRequestIsInvalid", StreamsGroupHeartbeatRequestData.class);
        unsupported.setAccessible(true);
        invalid.setAccessible(true);
        for (String line : Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8)) {
            if (line.isBlank()) continue;
            String[] f = line.split("\\|", -1);
            StreamsGroupHeartbeatRequestData req = new StreamsGroupHeartbeatRequestData()
                .setGroupId(f[1]).setMemberId(f[2]).setMemberEpoch(Integer.parseInt(f[3]))
                .setInstanceId(f[4].equals("null") ? null : f[4]).setRackId(f[5].equals("null") ? null : f[5])
                .setRebalanceTimeoutMs(Integer.parseInt(f[6])).setTopology(topology(f[7]))
                .setActiveTasks(tasks(f[8])).setStandbyTasks(tasks(f[9])).setWarmupTasks(tasks(f[10]));
            String out = f[0] + "|NONE|";
            try {
                unsupported.invoke(null, req);
                invalid.invoke(null, req);
            } catch (InvocationTargetException e) {
                Throwable t = e.getCause();
                out = f[0] + "|" + (t instanceof ApiException ? Errors.forException(t).name() : t.getClass().getSimpleName())
                    + "|" + t.getMessage();
            }
            System.out.println(out);
        }
    }

    private static StreamsGroupHeartbeatRequestData.Topology topology(String kind) {
        if (kind.equals("null")) return null;
        StreamsGroupHeartbeatRequestData.Subtopology s = new StreamsGroupHeartbeatRequestData.Subtopology()
            .setSubtopologyId("0").setSourceTopics(List.of("in"));
        if (kind.equals("regex")) s.setSourceTopicRegex(List.of("in-.*"));
        if (kind.equals("changelog")) {
            s.setStateChangelogTopics(List.of(new StreamsGroupHeartbeatRequestData.TopicInfo().setName("c").setPartitions(3)));
        }
        return new StreamsGroupHeartbeatRequestData.Topology().setEpoch(0).setSubtopologies(List.of(s));
    }

    private static List<StreamsGroupHeartbeatRequestData.TaskIds> tasks(String s) {
        if (s.equals("null")) return null;
        List<StreamsGroupHeartbeatRequestData.TaskIds> out = new ArrayList<>();
        for (int i = 0; i < Integer.parseInt(s); i++) {
            out.add(new StreamsGroupHeartbeatRequestData.TaskIds().setSubtopologyId("0").setPartitions(List.of(i)));
        }
        return out;
    }
}
