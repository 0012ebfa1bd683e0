package coordhost.golden;

import java.nio.ByteBuffer;
import java.util.HexFormat;
import java.util.List;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.types.RawTaggedField;
import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupCurrentMemberAssignmentKey;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupCurrentMemberAssignmentValue;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupMemberMetadataKey;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupMemberMetadataValue;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupMetadataKey;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupMetadataValue;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupPartitionMetadataKey;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupPartitionMetadataValue;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupRegularExpressionKey;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupRegularExpressionValue;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupTargetAssignmentMemberKey;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupTargetAssignmentMemberValue;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupTargetAssignmentMetadataKey;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupTargetAssignmentMetadataValue;
import org.apache.kafka.server.common.ApiMessageAndVersion;

/**
 * Golden consumer-group (KIP-848) records from Kafka's own generated classes:
 * types 3, 4 (value and tombstone), 5-8 and 16, keys and values at version 0
 * (the only version of each), every field set, nullable fields both ways,
 * tagged fields absent and present.
 *
 * <p>{@code generate}: prints "name keyhex valuehex" lines ("-" for a
 * tombstone's value) serialized by GroupCoordinatorRecordSerde. Bytes written
 * by coordhost are decoded with {@code RecordsGolden decode FILE}.
 */
public final class ConsumerGolden {
    private static final GroupCoordinatorRecordSerde SERDE = new GroupCoordinatorRecordSerde();
    private static final HexFormat HEX = HexFormat.of();
    // Topic ids: 16 bytes "id-a" / "id-b" padded with zeros, as the Go tests name them.
    private static final Uuid A = new Uuid(0x69642d6100000000L, 0L);
    private static final Uuid B = new Uuid(0x69642d6200000000L, 0L);

    public static void main(String[] args) {
        if (args.length != 1 || !args[0].equals("generate")) {
            System.err.println("usage: ConsumerGolden generate");
            System.exit(2);
        }
        // 3: hash absent (default 0), hash set; an unknown tag 1 (a later
        // Kafka's creation time) that a 4.4 reader keeps and writes back.
        print("metadata-plain", rec(new ConsumerGroupMetadataKey().setGroupId("g"),
            new ConsumerGroupMetadataValue().setEpoch(1)));
        print("metadata-hash", rec(new ConsumerGroupMetadataKey().setGroupId("grüppe"),
            new ConsumerGroupMetadataValue().setEpoch(42).setMetadataHash(-1234567890123L)));
        ConsumerGroupMetadataValue withTag1 = new ConsumerGroupMetadataValue().setEpoch(3).setMetadataHash(7L);
        withTag1.unknownTaggedFields().add(new RawTaggedField(1, ByteBuffer.allocate(8).putLong(1764680000123L).array()));
        print("metadata-creation-tag", rec(new ConsumerGroupMetadataKey().setGroupId("g"), withTag1));
        print("metadata-tombstone", CoordinatorRecord.tombstone(new ConsumerGroupMetadataKey().setGroupId("g")));

        // 4: Kafka 4.4 only deletes it; a value from an older log still replays.
        print("partition-metadata-old", rec(new ConsumerGroupPartitionMetadataKey().setGroupId("g"),
            new ConsumerGroupPartitionMetadataValue().setTopics(List.of(new ConsumerGroupPartitionMetadataValue.TopicMetadata()
                .setTopicId(A).setTopicName("a").setNumPartitions(3).setPartitionMetadata(List.of(
                    new ConsumerGroupPartitionMetadataValue.PartitionMetadata().setPartition(0).setRacks(List.of("r1", "r2"))))))));
        print("partition-metadata-tombstone", CoordinatorRecord.tombstone(new ConsumerGroupPartitionMetadataKey().setGroupId("g")));

        // 5: every field set; every nullable null and the defaults.
        ConsumerGroupMemberMetadataValue full = new ConsumerGroupMemberMetadataValue().setInstanceId("inst-1").setRackId("rack-a")
            .setClientId("consumer-1").setClientHost("/10.0.0.1").setSubscribedTopicNames(List.of("orders", "payments"))
            .setSubscribedTopicRegex("ord.*").setRebalanceTimeoutMs(300000).setServerAssignor("uniform");
        print("member-full", rec(memberKey("g", "4f2c-member"), full));
        print("member-nulls", rec(memberKey("g", "m"), new ConsumerGroupMemberMetadataValue().setInstanceId(null).setRackId(null)
            .setClientId("").setClientHost("").setSubscribedTopicNames(List.of()).setSubscribedTopicRegex(null).setServerAssignor(null)));
        print("member-classic", rec(memberKey("g", "c1"), full.duplicate().setClassicMemberMetadata(
            new ConsumerGroupMemberMetadataValue.ClassicMemberMetadata().setSessionTimeoutMs(45000).setSupportedProtocols(List.of(
                new ConsumerGroupMemberMetadataValue.ClassicProtocol().setName("range").setMetadata(HEX.parseHex("00030000000100016100000000")),
                new ConsumerGroupMemberMetadataValue.ClassicProtocol().setName("cooperative-sticky").setMetadata(new byte[0]))))));
        print("member-tombstone", CoordinatorRecord.tombstone(memberKey("g", "m")));

        // 6: timestamp absent (default 0) and set.
        print("target-metadata-plain", rec(new ConsumerGroupTargetAssignmentMetadataKey().setGroupId("g"),
            new ConsumerGroupTargetAssignmentMetadataValue().setAssignmentEpoch(5)));
        print("target-metadata-ts", rec(new ConsumerGroupTargetAssignmentMetadataKey().setGroupId("g"),
            new ConsumerGroupTargetAssignmentMetadataValue().setAssignmentEpoch(6).setAssignmentTimestamp(1764680000123L)));
        print("target-metadata-tombstone", CoordinatorRecord.tombstone(new ConsumerGroupTargetAssignmentMetadataKey().setGroupId("g")));

        // 7: two topics; no partitions.
        print("target-member", rec(new ConsumerGroupTargetAssignmentMemberKey().setGroupId("g").setMemberId("m"),
            new ConsumerGroupTargetAssignmentMemberValue().setTopicPartitions(List.of(
                new ConsumerGroupTargetAssignmentMemberValue.TopicPartition().setTopicId(A).setPartitions(List.of(0, 2)),
                new ConsumerGroupTargetAssignmentMemberValue.TopicPartition().setTopicId(B).setPartitions(List.of(1))))));
        print("target-member-empty", rec(new ConsumerGroupTargetAssignmentMemberKey().setGroupId("g").setMemberId("m2"),
            new ConsumerGroupTargetAssignmentMemberValue().setTopicPartitions(List.of())));
        print("target-member-tombstone", CoordinatorRecord.tombstone(
            new ConsumerGroupTargetAssignmentMemberKey().setGroupId("g").setMemberId("m")));

        // 8: assignment epochs (tag 0) present on one topic, absent on the
        // other; pending revocation set; then an empty assignment.
        print("current-full", rec(currentKey("g", "m"), new ConsumerGroupCurrentMemberAssignmentValue().setMemberEpoch(4)
            .setPreviousMemberEpoch(3).setState((byte) 2).setAssignedPartitions(List.of(
                new ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions().setTopicId(A).setPartitions(List.of(0, 2))
                    .setAssignmentEpochs(List.of(3, 4)),
                new ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions().setTopicId(B).setPartitions(List.of(1))))
            .setPartitionsPendingRevocation(List.of(
                new ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions().setTopicId(B).setPartitions(List.of(0))
                    .setAssignmentEpochs(List.of(2))))));
        print("current-empty", rec(currentKey("g", "m2"), new ConsumerGroupCurrentMemberAssignmentValue().setMemberEpoch(0)
            .setPreviousMemberEpoch(-1).setState((byte) 0).setAssignedPartitions(List.of()).setPartitionsPendingRevocation(List.of())));
        print("current-tombstone", CoordinatorRecord.tombstone(currentKey("g", "m")));

        // 16: resolved topics; a regex that matched nothing.
        print("regex", rec(new ConsumerGroupRegularExpressionKey().setGroupId("g").setRegularExpression("ord.*"),
            new ConsumerGroupRegularExpressionValue().setTopics(List.of("orders", "orders-eu")).setVersion(17).setTimestamp(1764680000123L)));
        print("regex-none", rec(new ConsumerGroupRegularExpressionKey().setGroupId("g").setRegularExpression("zz.*"),
            new ConsumerGroupRegularExpressionValue().setTopics(List.of()).setVersion(0).setTimestamp(0)));
        print("regex-tombstone", CoordinatorRecord.tombstone(
            new ConsumerGroupRegularExpressionKey().setGroupId("g").setRegularExpression("ord.*")));
    }

    private static ConsumerGroupMemberMetadataKey memberKey(String group, String member) {
        return new ConsumerGroupMemberMetadataKey().setGroupId(group).setMemberId(member);
    }

    private static ConsumerGroupCurrentMemberAssignmentKey currentKey(String group, String member) {
        return new ConsumerGroupCurrentMemberAssignmentKey().setGroupId(group).setMemberId(member);
    }

    private static CoordinatorRecord rec(ApiMessage key, ApiMessage value) {
        return CoordinatorRecord.record(key, new ApiMessageAndVersion(value, (short) 0));
    }

    private static void print(String name, CoordinatorRecord r) {
        byte[] v = SERDE.serializeValue(r);
        System.out.println(name + " " + HEX.formatHex(SERDE.serializeKey(r)) + " " + (v == null ? "-" : HEX.formatHex(v)));
    }

    private ConsumerGolden() {
    }
}
