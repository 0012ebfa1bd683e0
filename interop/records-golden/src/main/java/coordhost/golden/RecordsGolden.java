package coordhost.golden;

import java.io.BufferedReader;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;

import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.generated.StreamsGroupCurrentMemberAssignmentKey;
import org.apache.kafka.coordinator.group.generated.StreamsGroupCurrentMemberAssignmentValue;
import org.apache.kafka.coordinator.group.generated.StreamsGroupMemberMetadataKey;
import org.apache.kafka.coordinator.group.generated.StreamsGroupMemberMetadataValue;
import org.apache.kafka.coordinator.group.generated.StreamsGroupMetadataKey;
import org.apache.kafka.coordinator.group.generated.StreamsGroupMetadataValue;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTargetAssignmentMemberKey;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTargetAssignmentMemberValue;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTargetAssignmentMetadataKey;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTargetAssignmentMetadataValue;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTopologyKey;
import org.apache.kafka.coordinator.group.generated.StreamsGroupTopologyValue;
import org.apache.kafka.server.common.ApiMessageAndVersion;

/**
 * Golden coordinator records from Kafka's own classes.
 *
 * <p>{@code generate}: prints one line per sample record, "name keyhex valuehex"
 * ("-" for a tombstone's value), serialized by GroupCoordinatorRecordSerde.
 *
 * <p>{@code decode FILE}: reads "name keyhex valuehex" lines from FILE (bytes written by
 * coordhost), deserializes each with GroupCoordinatorRecordSerde, and prints
 * "name keyhex valuehex" of Kafka's re-serialization followed by Kafka's
 * toString of the value, so a caller can check Kafka read every field.
 */
public final class RecordsGolden {
    private static final GroupCoordinatorRecordSerde SERDE = new GroupCoordinatorRecordSerde();
    private static final HexFormat HEX = HexFormat.of();

    public static void main(String[] args) throws Exception {
        if (args.length == 1 && args[0].equals("generate")) {
            for (Object[] s : samples()) {
                CoordinatorRecord r = (CoordinatorRecord) s[1];
                System.out.println(s[0] + " " + hex(SERDE.serializeKey(r)) + " " + hex(SERDE.serializeValue(r)));
            }
        } else if (args.length == 2 && args[0].equals("decode")) {
            BufferedReader in = java.nio.file.Files.newBufferedReader(java.nio.file.Path.of(args[1]), StandardCharsets.UTF_8);
            String line;
            while ((line = in.readLine()) != null) {
                String[] f = line.trim().split(" ");
                if (f.length != 3) continue;
                ByteBuffer key = ByteBuffer.wrap(HEX.parseHex(f[1]));
                ByteBuffer value = f[2].equals("-") ? null : ByteBuffer.wrap(HEX.parseHex(f[2]));
                CoordinatorRecord r = SERDE.deserialize(key, value);
                System.out.println(f[0] + " " + hex(SERDE.serializeKey(r)) + " " + hex(SERDE.serializeValue(r))
                    + " " + (r.value() == null ? "null" : r.value().message().toString()));
            }
        } else {
            System.err.println("usage: RecordsGolden generate | decode FILE");
            System.exit(2);
        }
    }

    private static String hex(byte[] b) {
        return b == null ? "-" : HEX.formatHex(b);
    }

    private static CoordinatorRecord rec(ApiMessage key, ApiMessage value) {
        return CoordinatorRecord.record(key, new ApiMessageAndVersion(value, (short) 0));
    }

    private static List<Object[]> samples() {
        List<Object[]> out = new ArrayList<>();
        // 17: defaults (no tagged fields), then every tagged field set.
        out.add(new Object[]{"metadata-plain", rec(new StreamsGroupMetadataKey().setGroupId("app"),
            new StreamsGroupMetadataValue().setEpoch(2).setMetadataHash(-1234567890123L))});
        out.add(new Object[]{"metadata-tagged", rec(new StreamsGroupMetadataKey().setGroupId("app-ü"),
            new StreamsGroupMetadataValue().setEpoch(7).setMetadataHash(42L).setValidatedTopologyEpoch(3)
                .setLastAssignmentConfigs(List.of(
                    new StreamsGroupMetadataValue.LastAssignmentConfig().setKey("num.standby.replicas").setValue("1")))
                .setStoredDescriptionTopologyEpoch(-2).setFailedDescriptionTopologyEpoch(5))});
        out.add(new Object[]{"metadata-empty-configs", rec(new StreamsGroupMetadataKey().setGroupId("g"),
            new StreamsGroupMetadataValue().setEpoch(1).setMetadataHash(0).setLastAssignmentConfigs(List.of()))});
        out.add(new Object[]{"metadata-tombstone", CoordinatorRecord.tombstone(new StreamsGroupMetadataKey().setGroupId("app"))});
        // 19: nulls, then everything set.
        out.add(new Object[]{"member-minimal", rec(new StreamsGroupMemberMetadataKey().setGroupId("app").setMemberId("m1"),
            new StreamsGroupMemberMetadataValue().setClientId("").setClientHost("").setProcessId("")
                .setTopologyEpoch(0).setClientTags(List.of()))});
        out.add(new Object[]{"member-full", rec(new StreamsGroupMemberMetadataKey().setGroupId("app").setMemberId("4f2c-member"),
            new StreamsGroupMemberMetadataValue().setInstanceId("inst-1").setRackId("rack-a").setClientId("app-StreamThread-1")
                .setClientHost("/10.0.0.1").setRebalanceTimeoutMs(300000).setTopologyEpoch(1).setProcessId("proc-uuid")
                .setUserEndpoint(new StreamsGroupMemberMetadataValue.Endpoint().setHost("localhost").setPort(65535))
                .setClientTags(List.of(new StreamsGroupMemberMetadataValue.KeyValue().setKey("zone").setValue("z1"),
                    new StreamsGroupMemberMetadataValue.KeyValue().setKey("cluster").setValue("c")))) });
        out.add(new Object[]{"member-tombstone", CoordinatorRecord.tombstone(
            new StreamsGroupMemberMetadataKey().setGroupId("app").setMemberId("m1"))});
        // 20
        out.add(new Object[]{"target-metadata-plain", rec(new StreamsGroupTargetAssignmentMetadataKey().setGroupId("app"),
            new StreamsGroupTargetAssignmentMetadataValue().setAssignmentEpoch(5))});
        out.add(new Object[]{"target-metadata-ts", rec(new StreamsGroupTargetAssignmentMetadataKey().setGroupId("app"),
            new StreamsGroupTargetAssignmentMetadataValue().setAssignmentEpoch(6).setAssignmentTimestamp(1764680000123L))});
        out.add(new Object[]{"target-metadata-tombstone", CoordinatorRecord.tombstone(
            new StreamsGroupTargetAssignmentMetadataKey().setGroupId("app"))});
        // 21
        out.add(new Object[]{"target-member", rec(new StreamsGroupTargetAssignmentMemberKey().setGroupId("app").setMemberId("m1"),
            new StreamsGroupTargetAssignmentMemberValue()
                .setActiveTasks(List.of(targetTasks("0", 0, 2), targetTasks("1", 1)))
                .setStandbyTasks(List.of(targetTasks("0", 1)))
                .setWarmupTasks(List.of()))});
        out.add(new Object[]{"target-member-tombstone", CoordinatorRecord.tombstone(
            new StreamsGroupTargetAssignmentMemberKey().setGroupId("app").setMemberId("m1"))});
        // 22: with and without assignment epochs.
        out.add(new Object[]{"current-epochs", rec(new StreamsGroupCurrentMemberAssignmentKey().setGroupId("app").setMemberId("m1"),
            new StreamsGroupCurrentMemberAssignmentValue().setMemberEpoch(4).setPreviousMemberEpoch(3).setState((byte) 2)
                .setActiveTasks(List.of(currentTasks("0", List.of(0, 3), List.of(2, 4))))
                .setStandbyTasks(List.of(currentTasks("1", List.of(1), null)))
                .setWarmupTasks(List.of(currentTasks("1", List.of(2), null)))
                .setActiveTasksPendingRevocation(List.of(currentTasks("0", List.of(1), List.of(2))))
                .setStandbyTasksPendingRevocation(List.of())
                .setWarmupTasksPendingRevocation(List.of()))});
        out.add(new Object[]{"current-legacy", rec(new StreamsGroupCurrentMemberAssignmentKey().setGroupId("app").setMemberId("m2"),
            new StreamsGroupCurrentMemberAssignmentValue().setMemberEpoch(-2).setPreviousMemberEpoch(7).setState((byte) 1)
                .setActiveTasks(List.of(currentTasks("0", List.of(5, 6), null)))
                .setStandbyTasks(List.of()).setWarmupTasks(List.of())
                .setActiveTasksPendingRevocation(List.of()).setStandbyTasksPendingRevocation(List.of())
                .setWarmupTasksPendingRevocation(List.of()))});
        out.add(new Object[]{"current-tombstone", CoordinatorRecord.tombstone(
            new StreamsGroupCurrentMemberAssignmentKey().setGroupId("app").setMemberId("m1"))});
        // 23
        out.add(new Object[]{"topology", rec(new StreamsGroupTopologyKey().setGroupId("app"),
            new StreamsGroupTopologyValue().setEpoch(1).setSubtopologies(List.of(
                new StreamsGroupTopologyValue.Subtopology().setSubtopologyId("0")
                    .setSourceTopics(List.of("orders", "payments")).setSourceTopicRegex(List.of())
                    .setStateChangelogTopics(List.of(topic("app-store-changelog", 0, (short) 0,
                        List.of(new StreamsGroupTopologyValue.TopicConfig().setKey("cleanup.policy").setValue("compact")))))
                    .setRepartitionSinkTopics(List.of("app-rekey-repartition"))
                    .setRepartitionSourceTopics(List.of())
                    .setCopartitionGroups(List.of(new StreamsGroupTopologyValue.CopartitionGroup()
                        .setSourceTopics(List.of((short) 0, (short) 1)).setSourceTopicRegex(List.of())
                        .setRepartitionSourceTopics(List.of()))),
                new StreamsGroupTopologyValue.Subtopology().setSubtopologyId("1")
                    .setSourceTopics(List.of()).setSourceTopicRegex(List.of())
                    .setStateChangelogTopics(List.of())
                    .setRepartitionSinkTopics(List.of())
                    .setRepartitionSourceTopics(List.of(topic("app-rekey-repartition", 6, (short) 3, List.of())))
                    .setCopartitionGroups(List.of()))))});
        out.add(new Object[]{"topology-tombstone", CoordinatorRecord.tombstone(new StreamsGroupTopologyKey().setGroupId("app"))});
        return out;
    }

    private static StreamsGroupTargetAssignmentMemberValue.TaskIds targetTasks(String sub, Integer... parts) {
        return new StreamsGroupTargetAssignmentMemberValue.TaskIds().setSubtopologyId(sub).setPartitions(List.of(parts));
    }

    private static StreamsGroupCurrentMemberAssignmentValue.TaskIds currentTasks(String sub, List<Integer> parts, List<Integer> epochs) {
        return new StreamsGroupCurrentMemberAssignmentValue.TaskIds().setSubtopologyId(sub).setPartitions(parts)
            .setAssignmentEpochs(epochs);
    }

    private static StreamsGroupTopologyValue.TopicInfo topic(String name, int parts, short rf,
                                                             List<StreamsGroupTopologyValue.TopicConfig> configs) {
        return new StreamsGroupTopologyValue.TopicInfo().setName(name).setPartitions(parts).setReplicationFactor(rf)
            .setTopicConfigs(configs);
    }
}
