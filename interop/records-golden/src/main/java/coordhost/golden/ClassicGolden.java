package coordhost.golden;

import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.List;

import org.apache.kafka.coordinator.common.runtime.CoordinatorRecord;
import org.apache.kafka.coordinator.group.GroupCoordinatorRecordSerde;
import org.apache.kafka.coordinator.group.generated.GroupMetadataKey;
import org.apache.kafka.coordinator.group.generated.GroupMetadataValue;
import org.apache.kafka.server.common.ApiMessageAndVersion;

/**
 * Golden classic-group records (type 2, GroupMetadata) from Kafka's own
 * generated classes, at every value version 0-4 (Kafka 4.4 writes 3).
 *
 * <p>{@code generate}: prints "name keyhex valuehex" lines ("-" for a
 * tombstone's value) serialized by GroupCoordinatorRecordSerde. Bytes written by
 * coordhost are decoded with {@code RecordsGolden decode FILE}, which handles
 * every record type.
 */
public final class ClassicGolden {
    private static final GroupCoordinatorRecordSerde SERDE = new GroupCoordinatorRecordSerde();
    private static final HexFormat HEX = HexFormat.of();

    public static void main(String[] args) {
        if (args.length != 1 || !args[0].equals("generate")) {
            System.err.println("usage: ClassicGolden generate");
            System.exit(2);
        }
        GroupMetadataValue full = fullValue();
        for (short v = 0; v <= 4; v++) {
            print("stable-v" + v, rec("app", full, v));
        }
        print("empty-v3", rec("g", new GroupMetadataValue().setProtocolType("").setGeneration(0)
            .setProtocol(null).setLeader(null).setCurrentStateTimestamp(1764680000000L).setMembers(List.of()), (short) 3));
        print("unicode-defaults-v3", rec("grüppe", new GroupMetadataValue().setProtocolType("consumer").setGeneration(7)
            .setProtocol("range").setLeader("m-1").setMembers(List.of(new GroupMetadataValue.MemberMetadata()
                .setMemberId("m-1").setClientId("c").setClientHost("/h").setSessionTimeout(10000)
                .setSubscription(new byte[0]).setAssignment(new byte[0]))), (short) 3));
        print("tombstone", CoordinatorRecord.tombstone(new GroupMetadataKey().setGroup("app")));
    }

    private static GroupMetadataValue fullValue() {
        byte[] sub = HEX.parseHex("0001000000010005746f7069630000000000000000");
        return new GroupMetadataValue().setProtocolType("consumer").setGeneration(42).setProtocol("cooperative-sticky")
            .setLeader("consumer-1-5f0c").setCurrentStateTimestamp(1764680000123L).setMembers(List.of(
                new GroupMetadataValue.MemberMetadata().setMemberId("consumer-1-5f0c").setGroupInstanceId(null)
                    .setClientId("consumer-1").setClientHost("/10.0.0.1").setRebalanceTimeout(300000)
                    .setSessionTimeout(45000).setSubscription(sub).setAssignment("a1".getBytes(StandardCharsets.UTF_8)),
                new GroupMetadataValue.MemberMetadata().setMemberId("inst-2-77aa").setGroupInstanceId("inst-2")
                    .setClientId("consumer-2").setClientHost("/10.0.0.2").setRebalanceTimeout(60000)
                    .setSessionTimeout(10000).setSubscription(sub).setAssignment(new byte[0])));
    }

    private static CoordinatorRecord rec(String group, GroupMetadataValue value, short version) {
        return CoordinatorRecord.record(new GroupMetadataKey().setGroup(group), new ApiMessageAndVersion(value, version));
    }

    private static void print(String name, CoordinatorRecord r) {
        byte[] v = SERDE.serializeValue(r);
        System.out.println(name + " " + HEX.formatHex(SERDE.serializeKey(r)) + " " + (v == null ? "-" : HEX.formatHex(v)));
    }
}
