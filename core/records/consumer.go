package records

// Consumer-group (KIP-848) coordinator records, types 3–8, with Kafka
// 4.4's key/value schemas (group-coordinator common/message/ConsumerGroup*.json).
// Keys are version 0 and non-flexible; values are version 0 and flexible.
// Type 4 (ConsumerGroupPartitionMetadata) is no longer written by Kafka
// 4.4 (the metadata hash replaced it); coordhost decodes it and ignores
// it on replay. Type 16 holds one resolved regular expression of a group
// (key version 16, as Kafka writes it).

// Record type numbers of consumer groups.
const (
	RecConsumerGroupMetadata                 int16 = 3
	RecConsumerGroupPartitionMetadata        int16 = 4
	RecConsumerGroupMemberMetadata           int16 = 5
	RecConsumerGroupTargetAssignmentMetadata int16 = 6
	RecConsumerGroupTargetAssignmentMember   int16 = 7
	RecConsumerGroupCurrentMemberAssignment  int16 = 8
	RecConsumerGroupRegularExpression        int16 = 16
)

func init() {
	registerRecordType(RecConsumerGroupMetadata, recordType{
		name:        "ConsumerGroupMetadata",
		decodeKey:   func(r *reader) RecordKey { return ConsumerGroupMetadataKey{GroupID: r.groupID()} },
		decodeValue: decodeConsumerGroupMetadataValue,
	})
	registerRecordType(RecConsumerGroupPartitionMetadata, recordType{
		name:        "ConsumerGroupPartitionMetadata",
		decodeKey:   func(r *reader) RecordKey { return ConsumerGroupPartitionMetadataKey{GroupID: r.groupID()} },
		decodeValue: decodeConsumerGroupPartitionMetadataValue,
	})
	registerRecordType(RecConsumerGroupMemberMetadata, recordType{
		name: "ConsumerGroupMemberMetadata",
		decodeKey: func(r *reader) RecordKey {
			return ConsumerGroupMemberMetadataKey{GroupID: r.groupID(), MemberID: r.memberID()}
		},
		decodeValue: decodeConsumerGroupMemberMetadataValue,
	})
	registerRecordType(RecConsumerGroupTargetAssignmentMetadata, recordType{
		name:        "ConsumerGroupTargetAssignmentMetadata",
		decodeKey:   func(r *reader) RecordKey { return ConsumerGroupTargetAssignmentMetadataKey{GroupID: r.groupID()} },
		decodeValue: decodeConsumerGroupTargetAssignmentMetadataValue,
	})
	registerRecordType(RecConsumerGroupTargetAssignmentMember, recordType{
		name: "ConsumerGroupTargetAssignmentMember",
		decodeKey: func(r *reader) RecordKey {
			return ConsumerGroupTargetAssignmentMemberKey{GroupID: r.groupID(), MemberID: r.memberID()}
		},
		decodeValue: decodeConsumerGroupTargetAssignmentMemberValue,
	})
	registerRecordType(RecConsumerGroupCurrentMemberAssignment, recordType{
		name: "ConsumerGroupCurrentMemberAssignment",
		decodeKey: func(r *reader) RecordKey {
			return ConsumerGroupCurrentMemberAssignmentKey{GroupID: r.groupID(), MemberID: r.memberID()}
		},
		decodeValue: decodeConsumerGroupCurrentMemberAssignmentValue,
	})
	registerRecordType(RecConsumerGroupRegularExpression, recordType{
		name: "ConsumerGroupRegularExpression",
		decodeKey: func(r *reader) RecordKey {
			return ConsumerGroupRegularExpressionKey{GroupID: r.groupID(), RegularExpression: r.classicString()}
		},
		decodeValue: decodeConsumerGroupRegularExpressionValue,
	})
}

// TopicPartitions lists partitions of one topic, named by topic id, as the
// consumer-group records hold them. AssignmentEpochs is only used by record
// type 8 (tagged field 0, KIP-1251): one entry per partition, the epoch at
// which the member got it; nil when absent.
type TopicPartitions struct {
	TopicID          [16]byte
	Partitions       []int32
	AssignmentEpochs []int32
}

// ConsumerGroupMetadataKey is the key of record type 3.
type ConsumerGroupMetadataKey struct{ GroupID string }

// ConsumerGroupMetadataValue is the value of record type 3: the group
// epoch and the hash of the subscribed topics' metadata.
type ConsumerGroupMetadataValue struct {
	Epoch        int32
	MetadataHash int64 // tag 0, default 0
	// CreationTimeMs is tag 1 (default -1): decoded and written back as
	// read; coordhost does not set it.
	CreationTimeMs int64
}

// ConsumerGroupPartitionMetadataKey is the key of record type 4.
type ConsumerGroupPartitionMetadataKey struct{ GroupID string }

// ConsumerGroupPartitionMetadataValue is the value of record type 4, kept
// only as raw topics (Kafka 4.4 writes its tombstone at most).
type ConsumerGroupPartitionMetadataValue struct{ Raw []byte }

// ConsumerGroupMemberMetadataKey is the key of record type 5.
type ConsumerGroupMemberMetadataKey struct{ GroupID, MemberID string }

// ConsumerGroupMemberMetadataValue is the value of record type 5. Classic
// is tagged field 0 (ClassicMemberMetadata), set for a classic member of a
// consumer group (online migration, docs/CONSUMER.md).
type ConsumerGroupMemberMetadataValue struct {
	InstanceID           *string
	RackID               *string
	ClientID             string
	ClientHost           string
	SubscribedTopicNames []string
	SubscribedTopicRegex *string
	RebalanceTimeoutMs   int32
	ServerAssignor       *string
	Classic              *ClassicMemberMetadata // tag 0
}

// ConsumerGroupTargetAssignmentMetadataKey is the key of record type 6.
type ConsumerGroupTargetAssignmentMetadataKey struct{ GroupID string }

// ConsumerGroupTargetAssignmentMetadataValue is the value of record type 6.
type ConsumerGroupTargetAssignmentMetadataValue struct {
	AssignmentEpoch     int32
	AssignmentTimestamp int64 // tag 0, default 0
}

// ConsumerGroupTargetAssignmentMemberKey is the key of record type 7.
type ConsumerGroupTargetAssignmentMemberKey struct{ GroupID, MemberID string }

// ConsumerGroupTargetAssignmentMemberValue is the value of record type 7.
type ConsumerGroupTargetAssignmentMemberValue struct {
	TopicPartitions []TopicPartitions
}

// ConsumerGroupCurrentMemberAssignmentKey is the key of record type 8.
type ConsumerGroupCurrentMemberAssignmentKey struct{ GroupID, MemberID string }

// ConsumerGroupCurrentMemberAssignmentValue is the value of record type 8.
type ConsumerGroupCurrentMemberAssignmentValue struct {
	MemberEpoch                 int32
	PreviousMemberEpoch         int32
	State                       int8
	AssignedPartitions          []TopicPartitions
	PartitionsPendingRevocation []TopicPartitions
}

// ConsumerGroupRegularExpressionKey is the key of record type 16.
type ConsumerGroupRegularExpressionKey struct{ GroupID, RegularExpression string }

// ConsumerGroupRegularExpressionValue is the value of record type 16: the
// topics a regex resolved to, the version of the topic image it was
// resolved against and when.
type ConsumerGroupRegularExpressionValue struct {
	Topics    []string
	Version   int64
	Timestamp int64
}

// RecordType implements RecordKey.
func (ConsumerGroupRegularExpressionKey) RecordType() int16 { return RecConsumerGroupRegularExpression }

// RecordType implements RecordValue.
func (ConsumerGroupRegularExpressionValue) RecordType() int16 {
	return RecConsumerGroupRegularExpression
}

// Group implements RecordKey.
func (k ConsumerGroupRegularExpressionKey) Group() string { return k.GroupID }

func (k ConsumerGroupRegularExpressionKey) encodeKey(w *writer) {
	w.classicString(k.GroupID)
	w.classicString(k.RegularExpression)
}

// RecordType implements RecordKey.
func (ConsumerGroupMetadataKey) RecordType() int16 { return RecConsumerGroupMetadata }

// RecordType implements RecordValue.
func (ConsumerGroupMetadataValue) RecordType() int16 { return RecConsumerGroupMetadata }

// RecordType implements RecordKey.
func (ConsumerGroupPartitionMetadataKey) RecordType() int16 { return RecConsumerGroupPartitionMetadata }

// RecordType implements RecordValue.
func (ConsumerGroupPartitionMetadataValue) RecordType() int16 {
	return RecConsumerGroupPartitionMetadata
}

// RecordType implements RecordKey.
func (ConsumerGroupMemberMetadataKey) RecordType() int16 { return RecConsumerGroupMemberMetadata }

// RecordType implements RecordValue.
func (ConsumerGroupMemberMetadataValue) RecordType() int16 { return RecConsumerGroupMemberMetadata }

// RecordType implements RecordKey.
func (ConsumerGroupTargetAssignmentMetadataKey) RecordType() int16 {
	return RecConsumerGroupTargetAssignmentMetadata
}

// RecordType implements RecordValue.
func (ConsumerGroupTargetAssignmentMetadataValue) RecordType() int16 {
	return RecConsumerGroupTargetAssignmentMetadata
}

// RecordType implements RecordKey.
func (ConsumerGroupTargetAssignmentMemberKey) RecordType() int16 {
	return RecConsumerGroupTargetAssignmentMember
}

// RecordType implements RecordValue.
func (ConsumerGroupTargetAssignmentMemberValue) RecordType() int16 {
	return RecConsumerGroupTargetAssignmentMember
}

// RecordType implements RecordKey.
func (ConsumerGroupCurrentMemberAssignmentKey) RecordType() int16 {
	return RecConsumerGroupCurrentMemberAssignment
}

// RecordType implements RecordValue.
func (ConsumerGroupCurrentMemberAssignmentValue) RecordType() int16 {
	return RecConsumerGroupCurrentMemberAssignment
}

// Group implements RecordKey.
func (k ConsumerGroupMetadataKey) Group() string { return k.GroupID }

// Group implements RecordKey.
func (k ConsumerGroupPartitionMetadataKey) Group() string { return k.GroupID }

// Group implements RecordKey.
func (k ConsumerGroupMemberMetadataKey) Group() string { return k.GroupID }

// Group implements RecordKey.
func (k ConsumerGroupTargetAssignmentMetadataKey) Group() string { return k.GroupID }

// Group implements RecordKey.
func (k ConsumerGroupTargetAssignmentMemberKey) Group() string { return k.GroupID }

// Group implements RecordKey.
func (k ConsumerGroupCurrentMemberAssignmentKey) Group() string { return k.GroupID }

func (k ConsumerGroupMetadataKey) encodeKey(w *writer)          { w.classicString(k.GroupID) }
func (k ConsumerGroupPartitionMetadataKey) encodeKey(w *writer) { w.classicString(k.GroupID) }
func (k ConsumerGroupMemberMetadataKey) encodeKey(w *writer) {
	w.classicString(k.GroupID)
	w.classicString(k.MemberID)
}
func (k ConsumerGroupTargetAssignmentMetadataKey) encodeKey(w *writer) { w.classicString(k.GroupID) }
func (k ConsumerGroupTargetAssignmentMemberKey) encodeKey(w *writer) {
	w.classicString(k.GroupID)
	w.classicString(k.MemberID)
}
func (k ConsumerGroupCurrentMemberAssignmentKey) encodeKey(w *writer) {
	w.classicString(k.GroupID)
	w.classicString(k.MemberID)
}

// ---- shared ----

func (r *reader) uuid() (id [16]byte) {
	copy(id[:], r.take(16))
	return id
}

func writeTopicPartitions(w *writer, tps []TopicPartitions, withEpochs bool) {
	w.uvarint(len(tps) + 1)
	for _, tp := range tps {
		w.b = append(w.b, tp.TopicID[:]...)
		w.compactInt32s(tp.Partitions)
		if withEpochs && tp.AssignmentEpochs != nil {
			w.tags(encodeTag(0, func(w *writer) { w.compactInt32s(tp.AssignmentEpochs) }))
		} else {
			w.tags()
		}
	}
}

func readTopicPartitions(r *reader, withEpochs bool) []TopicPartitions {
	n := r.compactLen()
	if n < 0 {
		r.fail(errNullArray)
		return []TopicPartitions{}
	}
	out := cut(r.tpSlab(), min(n, maxPrealloc))[:0]
	for i := 0; i < n && r.err == nil; i++ {
		tp := TopicPartitions{TopicID: r.uuid(), Partitions: r.compactInt32s(false)}
		r.tags(func(tag uint64, sub *reader) bool {
			if tag != 0 || !withEpochs {
				return false
			}
			tp.AssignmentEpochs = sub.compactInt32s(true)
			return true
		})
		if tp.AssignmentEpochs != nil && len(tp.AssignmentEpochs) != len(tp.Partitions) {
			r.fail(errorString("AssignmentEpochs not aligned with Partitions"))
		}
		out = append(out, tp)
	}
	return out
}

// ---- 3 ----

func (v ConsumerGroupMetadataValue) encodeValue(w *writer) {
	w.int32(v.Epoch)
	hash, created := v.MetadataHash != 0, v.CreationTimeMs != -1
	n := 0
	for _, set := range [...]bool{hash, created} {
		if set {
			n++
		}
	}
	w.uvarint(n) // tags in place, as StreamsGroupMetadataValue's
	if hash {
		w.tagInt64(0, v.MetadataHash)
	}
	if created {
		w.tagInt64(1, v.CreationTimeMs)
	}
}

func decodeConsumerGroupMetadataValue(r *reader) RecordValue {
	v := ConsumerGroupMetadataValue{Epoch: r.int32(), CreationTimeMs: -1}
	r.tags(func(tag uint64, sub *reader) bool {
		switch tag {
		case 0:
			v.MetadataHash = sub.int64()
		case 1:
			v.CreationTimeMs = sub.int64()
		default:
			return false
		}
		return true
	})
	return v
}

// ---- 4 ----

func (v ConsumerGroupPartitionMetadataValue) encodeValue(w *writer) { w.b = append(w.b, v.Raw...) }

func decodeConsumerGroupPartitionMetadataValue(r *reader) RecordValue {
	raw := append([]byte(nil), r.b...)
	r.b = nil
	return ConsumerGroupPartitionMetadataValue{Raw: raw}
}

// ---- 5 ----

func (v ConsumerGroupMemberMetadataValue) encodeValue(w *writer) {
	w.compactNullableString(v.InstanceID)
	w.compactNullableString(v.RackID)
	w.compactString(v.ClientID)
	w.compactString(v.ClientHost)
	w.compactStrings(v.SubscribedTopicNames)
	w.compactNullableString(v.SubscribedTopicRegex)
	w.int32(v.RebalanceTimeoutMs)
	w.compactNullableString(v.ServerAssignor)
	w.tags(consumerClassicMemberTags(v.Classic)...)
}

func decodeConsumerGroupMemberMetadataValue(r *reader) RecordValue {
	v := ConsumerGroupMemberMetadataValue{
		InstanceID:           r.compactNullableString(),
		RackID:               r.compactNullableString(),
		ClientID:             r.compactString(),
		ClientHost:           r.compactString(),
		SubscribedTopicNames: r.compactStrings(),
		SubscribedTopicRegex: r.compactNullableString(),
		RebalanceTimeoutMs:   r.int32(),
		ServerAssignor:       r.compactNullableString(),
	}
	r.tags(func(tag uint64, sub *reader) bool {
		if tag != 0 {
			return false
		}
		switch marker := sub.int8(); marker {
		case -1: // null, as Kafka writes an absent nullable struct
		case 1:
			v.Classic = readClassicMember(sub)
		default:
			sub.fail(errorString("bad nullable-struct marker for ClassicMemberMetadata"))
		}
		return true
	})
	return v
}

// ---- 6 ----

func (v ConsumerGroupTargetAssignmentMetadataValue) encodeValue(w *writer) {
	StreamsGroupTargetAssignmentMetadataValue(v).encodeValue(w)
}

func decodeConsumerGroupTargetAssignmentMetadataValue(r *reader) RecordValue {
	return ConsumerGroupTargetAssignmentMetadataValue(decodeStreamsGroupTargetAssignmentMetadataValue(r).(StreamsGroupTargetAssignmentMetadataValue))
}

// ---- 7 ----

func (v ConsumerGroupTargetAssignmentMemberValue) encodeValue(w *writer) {
	writeTopicPartitions(w, v.TopicPartitions, false)
	w.tags()
}

func decodeConsumerGroupTargetAssignmentMemberValue(r *reader) RecordValue {
	v := ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: readTopicPartitions(r, false)}
	r.noTags()
	return v
}

// ---- 8 ----

func (v ConsumerGroupCurrentMemberAssignmentValue) encodeValue(w *writer) {
	w.int32(v.MemberEpoch)
	w.int32(v.PreviousMemberEpoch)
	w.int8(v.State)
	writeTopicPartitions(w, v.AssignedPartitions, true)
	writeTopicPartitions(w, v.PartitionsPendingRevocation, true)
	w.tags()
}

func decodeConsumerGroupCurrentMemberAssignmentValue(r *reader) RecordValue {
	v := ConsumerGroupCurrentMemberAssignmentValue{MemberEpoch: r.int32(), PreviousMemberEpoch: r.int32(), State: r.int8()}
	v.AssignedPartitions = readTopicPartitions(r, true)
	v.PartitionsPendingRevocation = readTopicPartitions(r, true)
	r.noTags()
	return v
}

// ---- 16 ----

func (v ConsumerGroupRegularExpressionValue) encodeValue(w *writer) {
	w.compactStrings(v.Topics)
	w.int64(v.Version)
	w.int64(v.Timestamp)
	w.tags()
}

func decodeConsumerGroupRegularExpressionValue(r *reader) RecordValue {
	v := ConsumerGroupRegularExpressionValue{Topics: r.compactStrings(), Version: r.int64(), Timestamp: r.int64()}
	r.noTags()
	return v
}
