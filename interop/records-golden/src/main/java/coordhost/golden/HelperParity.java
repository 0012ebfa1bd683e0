package coordhost.golden;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Map;

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
import org.apache.kafka.coordinator.group.streams.StreamsCoordinatorRecordHelpers;
import org.apache.kafka.coordinator.group.streams.StreamsGroupMember;
import org.apache.kafka.coordinator.group.streams.TasksTuple;
import org.slf4j.LoggerFactory;

/**
 * Rebuilds records coordhost wrote through Kafka 4.4's own
 * StreamsCoordinatorRecordHelpers — the code Kafka's coordinator uses to write
 * them — from their decoded content, and prints Kafka's bytes, so a test can
 * check coordhost writes byte-identical records (list order, tagged fields).
 *
 * <p>Input and output lines: name keyhex valuehex ('-' for a tombstone).
 */
public final class HelperParity {
    private static final GroupCoordinatorRecordSerde SERDE = new GroupCoordinatorRecordSerde();
    private static final HexFormat HEX = HexFormat.of();

    public static void main(String[] args) throws Exception {
        for (String line : Files.readAllLines(Path.of(args[0]), StandardCharsets.UTF_8)) {
            String[] f = line.trim().split(" ");
            if (f.length != 3) continue;
            CoordinatorRecord in = SERDE.deserialize(ByteBuffer.wrap(HEX.parseHex(f[1])),
                f[2].equals("-") ? null : ByteBuffer.wrap(HEX.parseHex(f[2])));
            CoordinatorRecord out = rebuild(in);
            byte[] v = SERDE.serializeValue(out);
            System.out.println(f[0] + " " + HEX.formatHex(SERDE.serializeKey(out)) + " " + (v == null ? "-" : HEX.formatHex(v)));
        }
    }

    private static CoordinatorRecord rebuild(CoordinatorRecord r) {
        Object k = r.key();
        Object v = r.value() == null ? null : r.value().message();
        if (k instanceof StreamsGroupMetadataKey key) {
            if (v == null) return StreamsCoordinatorRecordHelpers.newStreamsGroupEpochTombstoneRecord(key.groupId());
            StreamsGroupMetadataValue val = (StreamsGroupMetadataValue) v;
            Map<String, String> configs = new LinkedHashMap<>();
            val.lastAssignmentConfigs().forEach(c -> configs.put(c.key(), c.value()));
            return StreamsCoordinatorRecordHelpers.newStreamsGroupMetadataRecord(key.groupId(), val.epoch(), val.metadataHash(),
                val.validatedTopologyEpoch(), configs, val.storedDescriptionTopologyEpoch(), val.failedDescriptionTopologyEpoch());
        }
        if (k instanceof StreamsGroupMemberMetadataKey key) {
            if (v == null) return StreamsCoordinatorRecordHelpers.newStreamsGroupMemberTombstoneRecord(key.groupId(), key.memberId());
            StreamsGroupMember m = new StreamsGroupMember.Builder(key.memberId())
                .updateWith((StreamsGroupMemberMetadataValue) v).build();
            return StreamsCoordinatorRecordHelpers.newStreamsGroupMemberRecord(key.groupId(), m);
        }
        if (k instanceof StreamsGroupTargetAssignmentMetadataKey key) {
            if (v == null) return StreamsCoordinatorRecordHelpers.newStreamsGroupTargetAssignmentMetadataTombstoneRecord(key.groupId());
            StreamsGroupTargetAssignmentMetadataValue val = (StreamsGroupTargetAssignmentMetadataValue) v;
            return StreamsCoordinatorRecordHelpers.newStreamsGroupTargetAssignmentMetadataRecord(key.groupId(),
                val.assignmentEpoch(), val.assignmentTimestamp());
        }
        if (k instanceof StreamsGroupTargetAssignmentMemberKey key) {
            if (v == null) return StreamsCoordinatorRecordHelpers.newStreamsGroupTargetAssignmentTombstoneRecord(key.groupId(), key.memberId());
            return StreamsCoordinatorRecordHelpers.newStreamsGroupTargetAssignmentRecord(key.groupId(), key.memberId(),
                TasksTuple.fromTargetAssignmentRecord((StreamsGroupTargetAssignmentMemberValue) v));
        }
        if (k instanceof StreamsGroupCurrentMemberAssignmentKey key) {
            if (v == null) return StreamsCoordinatorRecordHelpers.newStreamsGroupCurrentAssignmentTombstoneRecord(key.groupId(), key.memberId());
            StreamsGroupMember m = new StreamsGroupMember.Builder(key.memberId())
                .updateWith(LoggerFactory.getLogger("parity"), key.groupId(), (StreamsGroupCurrentMemberAssignmentValue) v).build();
            return StreamsCoordinatorRecordHelpers.newStreamsGroupCurrentAssignmentRecord(key.groupId(), m);
        }
        if (k instanceof StreamsGroupTopologyKey key) {
            if (v == null) return StreamsCoordinatorRecordHelpers.newStreamsGroupTopologyRecordTombstone(key.groupId());
            return StreamsCoordinatorRecordHelpers.newStreamsGroupTopologyRecord(key.groupId(), (StreamsGroupTopologyValue) v);
        }
        throw new IllegalArgumentException("unexpected record " + k);
    }
}
