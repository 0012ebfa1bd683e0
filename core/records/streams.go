package records

// Streams-group coordinator records, types 17 and 19–23, with Kafka 4.4's
// key/value schemas (group-coordinator common/message/StreamsGroup*.json).
// Keys are version 0 and non-flexible; values are version 0 and flexible.
// Type 18 (the removed StreamsGroupPartitionMetadata) is never written and
// decodes as an unknown type, which Kafka's loader also skips.

// Record type numbers of streams groups.
const (
	RecStreamsGroupMetadata                 int16 = 17
	RecStreamsGroupMemberMetadata           int16 = 19
	RecStreamsGroupTargetAssignmentMetadata int16 = 20
	RecStreamsGroupTargetAssignmentMember   int16 = 21
	RecStreamsGroupCurrentMemberAssignment  int16 = 22
	RecStreamsGroupTopology                 int16 = 23
)

func init() {
	registerRecordType(RecStreamsGroupMetadata, recordType{
		name:        "StreamsGroupMetadata",
		decodeKey:   func(r *reader) RecordKey { return StreamsGroupMetadataKey{GroupID: r.groupID()} },
		decodeValue: decodeStreamsGroupMetadataValue,
	})
	registerRecordType(RecStreamsGroupMemberMetadata, recordType{
		name: "StreamsGroupMemberMetadata",
		decodeKey: func(r *reader) RecordKey {
			return StreamsGroupMemberMetadataKey{GroupID: r.groupID(), MemberID: r.memberID()}
		},
		decodeValue: decodeStreamsGroupMemberMetadataValue,
	})
	registerRecordType(RecStreamsGroupTargetAssignmentMetadata, recordType{
		name:        "StreamsGroupTargetAssignmentMetadata",
		decodeKey:   func(r *reader) RecordKey { return StreamsGroupTargetAssignmentMetadataKey{GroupID: r.groupID()} },
		decodeValue: decodeStreamsGroupTargetAssignmentMetadataValue,
	})
	registerRecordType(RecStreamsGroupTargetAssignmentMember, recordType{
		name: "StreamsGroupTargetAssignmentMember",
		decodeKey: func(r *reader) RecordKey {
			return StreamsGroupTargetAssignmentMemberKey{GroupID: r.groupID(), MemberID: r.memberID()}
		},
		decodeValue: decodeStreamsGroupTargetAssignmentMemberValue,
	})
	registerRecordType(RecStreamsGroupCurrentMemberAssignment, recordType{
		name: "StreamsGroupCurrentMemberAssignment",
		decodeKey: func(r *reader) RecordKey {
			return StreamsGroupCurrentMemberAssignmentKey{GroupID: r.groupID(), MemberID: r.memberID()}
		},
		decodeValue: decodeStreamsGroupCurrentMemberAssignmentValue,
	})
	registerRecordType(RecStreamsGroupTopology, recordType{
		name:        "StreamsGroupTopology",
		decodeKey:   func(r *reader) RecordKey { return StreamsGroupTopologyKey{GroupID: r.groupID()} },
		decodeValue: decodeStreamsGroupTopologyValue,
	})
}

// KeyValue is a string pair (configs, client tags).
type KeyValue struct {
	Key, Value string
}

// TaskIDs lists the partitions (task numbers) of one subtopology.
// AssignmentEpochs is only used by record type 22's active task lists
// (tagged field 0) and has one entry per partition. Kafka's generated class
// defaults it to an empty list, which is not written; an explicit null is
// written as a null array (EpochsNull), so three states exist on the wire.
type TaskIDs struct {
	SubtopologyID    string
	Partitions       []int32
	AssignmentEpochs []int32 // nil or empty: absent
	EpochsNull       bool    // tag 0 present with a null array
}

// Endpoint is an interactive-query endpoint.
type Endpoint struct {
	Host string
	Port uint16
}

// TopicInfo describes an internal topic of a topology.
type TopicInfo struct {
	Name              string
	Partitions        int32 // 0: not fixed
	ReplicationFactor int16 // 0: broker default
	TopicConfigs      []KeyValue
}

// CopartitionGroup holds indexes into its subtopology's topic lists.
type CopartitionGroup struct {
	SourceTopics            []int16
	SourceTopicRegex        []int16
	RepartitionSourceTopics []int16
}

// Subtopology is one subtopology of a stored topology.
type Subtopology struct {
	SubtopologyID           string
	SourceTopics            []string
	SourceTopicRegex        []string
	StateChangelogTopics    []TopicInfo
	RepartitionSinkTopics   []string
	RepartitionSourceTopics []TopicInfo
	CopartitionGroups       []CopartitionGroup
}

// StreamsGroupMetadataKey is the key of record type 17.
type StreamsGroupMetadataKey struct{ GroupID string }

// StreamsGroupMetadataValue is the value of record type 17: the group epoch.
type StreamsGroupMetadataValue struct {
	Epoch                          int32
	MetadataHash                   int64
	ValidatedTopologyEpoch         int32      // tag 0, default -1
	LastAssignmentConfigs          []KeyValue // tag 1; nil or empty: absent
	LastAssignmentConfigsNull      bool       // tag 1 present with a null array
	StoredDescriptionTopologyEpoch int32      // tag 2, default -1
	FailedDescriptionTopologyEpoch int32      // tag 3, default -1
}

// StreamsGroupMemberMetadataKey is the key of record type 19.
type StreamsGroupMemberMetadataKey struct{ GroupID, MemberID string }

// StreamsGroupMemberMetadataValue is the value of record type 19.
type StreamsGroupMemberMetadataValue struct {
	InstanceID         *string
	RackID             *string
	ClientID           string
	ClientHost         string
	RebalanceTimeoutMs int32
	TopologyEpoch      int32
	ProcessID          string
	UserEndpoint       *Endpoint
	ClientTags         []KeyValue
	// Classic is coordhost's extension (tagged field 1000, see
	// migration.go and docs/MIGRATION.md): present for a classic
	// member of a streams group, nil for a streams-protocol member.
	Classic *ClassicMemberMetadata
}

// StreamsGroupTargetAssignmentMetadataKey is the key of record type 20.
type StreamsGroupTargetAssignmentMetadataKey struct{ GroupID string }

// StreamsGroupTargetAssignmentMetadataValue is the value of record type 20.
type StreamsGroupTargetAssignmentMetadataValue struct {
	AssignmentEpoch     int32
	AssignmentTimestamp int64 // tag 0, default 0
}

// StreamsGroupTargetAssignmentMemberKey is the key of record type 21.
type StreamsGroupTargetAssignmentMemberKey struct{ GroupID, MemberID string }

// StreamsGroupTargetAssignmentMemberValue is the value of record type 21.
type StreamsGroupTargetAssignmentMemberValue struct {
	ActiveTasks, StandbyTasks, WarmupTasks []TaskIDs
}

// StreamsGroupCurrentMemberAssignmentKey is the key of record type 22.
type StreamsGroupCurrentMemberAssignmentKey struct{ GroupID, MemberID string }

// StreamsGroupCurrentMemberAssignmentValue is the value of record type 22.
type StreamsGroupCurrentMemberAssignmentValue struct {
	MemberEpoch                   int32
	PreviousMemberEpoch           int32
	State                         int8
	ActiveTasks                   []TaskIDs
	StandbyTasks                  []TaskIDs
	WarmupTasks                   []TaskIDs
	ActiveTasksPendingRevocation  []TaskIDs
	StandbyTasksPendingRevocation []TaskIDs
	WarmupTasksPendingRevocation  []TaskIDs
}

// StreamsGroupTopologyKey is the key of record type 23.
type StreamsGroupTopologyKey struct{ GroupID string }

// StreamsGroupTopologyValue is the value of record type 23.
type StreamsGroupTopologyValue struct {
	Epoch         int32
	Subtopologies []Subtopology
}

// RecordType implements RecordKey.
func (StreamsGroupMetadataKey) RecordType() int16 { return RecStreamsGroupMetadata }

// RecordType implements RecordValue.
func (StreamsGroupMetadataValue) RecordType() int16 { return RecStreamsGroupMetadata }

// RecordType implements RecordKey.
func (StreamsGroupMemberMetadataKey) RecordType() int16 { return RecStreamsGroupMemberMetadata }

// RecordType implements RecordValue.
func (StreamsGroupMemberMetadataValue) RecordType() int16 { return RecStreamsGroupMemberMetadata }

// RecordType implements RecordKey.
func (StreamsGroupTargetAssignmentMetadataKey) RecordType() int16 {
	return RecStreamsGroupTargetAssignmentMetadata
}

// RecordType implements RecordValue.
func (StreamsGroupTargetAssignmentMetadataValue) RecordType() int16 {
	return RecStreamsGroupTargetAssignmentMetadata
}

// RecordType implements RecordKey.
func (StreamsGroupTargetAssignmentMemberKey) RecordType() int16 {
	return RecStreamsGroupTargetAssignmentMember
}

// RecordType implements RecordValue.
func (StreamsGroupTargetAssignmentMemberValue) RecordType() int16 {
	return RecStreamsGroupTargetAssignmentMember
}

// RecordType implements RecordKey.
func (StreamsGroupCurrentMemberAssignmentKey) RecordType() int16 {
	return RecStreamsGroupCurrentMemberAssignment
}

// RecordType implements RecordValue.
func (StreamsGroupCurrentMemberAssignmentValue) RecordType() int16 {
	return RecStreamsGroupCurrentMemberAssignment
}

// RecordType implements RecordKey.
func (StreamsGroupTopologyKey) RecordType() int16 { return RecStreamsGroupTopology }

// RecordType implements RecordValue.
func (StreamsGroupTopologyValue) RecordType() int16 { return RecStreamsGroupTopology }

// Group implements RecordKey.
func (k StreamsGroupMetadataKey) Group() string { return k.GroupID }

// Group implements RecordKey.
func (k StreamsGroupMemberMetadataKey) Group() string { return k.GroupID }

// Group implements RecordKey.
func (k StreamsGroupTargetAssignmentMetadataKey) Group() string { return k.GroupID }

// Group implements RecordKey.
func (k StreamsGroupTargetAssignmentMemberKey) Group() string { return k.GroupID }

// Group implements RecordKey.
func (k StreamsGroupCurrentMemberAssignmentKey) Group() string { return k.GroupID }

// Group implements RecordKey.
func (k StreamsGroupTopologyKey) Group() string { return k.GroupID }

func (k StreamsGroupMetadataKey) encodeKey(w *writer) { w.classicString(k.GroupID) }
func (k StreamsGroupMemberMetadataKey) encodeKey(w *writer) {
	w.classicString(k.GroupID)
	w.classicString(k.MemberID)
}
func (k StreamsGroupTargetAssignmentMetadataKey) encodeKey(w *writer) { w.classicString(k.GroupID) }
func (k StreamsGroupTargetAssignmentMemberKey) encodeKey(w *writer) {
	w.classicString(k.GroupID)
	w.classicString(k.MemberID)
}
func (k StreamsGroupCurrentMemberAssignmentKey) encodeKey(w *writer) {
	w.classicString(k.GroupID)
	w.classicString(k.MemberID)
}
func (k StreamsGroupTopologyKey) encodeKey(w *writer) { w.classicString(k.GroupID) }

// ---- shared struct codecs ----

func writeKeyValues(w *writer, kvs []KeyValue) {
	w.uvarint(len(kvs) + 1)
	for _, kv := range kvs {
		w.compactString(kv.Key)
		w.compactString(kv.Value)
		w.tags()
	}
}

// readKeyValues reads a compact array of {string,string} structs; null
// yields nil (and is an error unless nullable).
func readKeyValues(r *reader, nullable bool) []KeyValue {
	n := r.compactLen()
	if n < 0 {
		if !nullable {
			r.fail(errNullArray)
		}
		return nil
	}
	out := make([]KeyValue, 0, min(n, maxPrealloc))
	for i := 0; i < n && r.err == nil; i++ {
		kv := KeyValue{Key: r.compactString(), Value: r.compactString()}
		r.noTags()
		out = append(out, kv)
	}
	return out
}

var errNullArray = errorString("null array in a non-nullable field")

type errorString string

func (e errorString) Error() string { return string(e) }

func writeTaskIDs(w *writer, tasks []TaskIDs, withEpochs bool) {
	w.uvarint(len(tasks) + 1)
	for _, t := range tasks {
		w.compactString(t.SubtopologyID)
		w.compactInt32s(t.Partitions)
		switch {
		case withEpochs && t.EpochsNull:
			w.tags(encodeTag(0, func(w *writer) { w.uvarint(0) }))
		case withEpochs && len(t.AssignmentEpochs) > 0:
			w.tags(encodeTag(0, func(w *writer) { w.compactInt32s(t.AssignmentEpochs) }))
		default:
			w.tags()
		}
	}
}

func readTaskIDs(r *reader, withEpochs bool) []TaskIDs {
	n := r.compactLen()
	if n < 0 {
		r.fail(errNullArray)
		return []TaskIDs{}
	}
	out := cut(r.taskSlab(), min(n, maxPrealloc))[:0]
	for i := 0; i < n && r.err == nil; i++ {
		t := TaskIDs{SubtopologyID: r.compactString(), Partitions: r.compactInt32s(false)}
		r.tags(func(tag uint64, sub *reader) bool {
			if tag != 0 || !withEpochs {
				return false
			}
			t.AssignmentEpochs = sub.compactInt32s(true)
			t.EpochsNull = t.AssignmentEpochs == nil
			if len(t.AssignmentEpochs) == 0 {
				t.AssignmentEpochs = nil
			}
			return true
		})
		out = append(out, t)
	}
	return out
}

func writeTopicInfos(w *writer, ts []TopicInfo) {
	w.uvarint(len(ts) + 1)
	for _, t := range ts {
		w.compactString(t.Name)
		w.int32(t.Partitions)
		w.int16(t.ReplicationFactor)
		writeKeyValues(w, t.TopicConfigs)
		w.tags()
	}
}

func readTopicInfos(r *reader) []TopicInfo {
	out := []TopicInfo{}
	ok := r.compactArray(func() {
		t := TopicInfo{Name: r.compactString(), Partitions: r.int32(), ReplicationFactor: r.int16()}
		t.TopicConfigs = readKeyValues(r, false)
		r.noTags()
		out = append(out, t)
	})
	if !ok {
		r.fail(errNullArray)
	}
	return out
}

// ---- 17 ----

func (v StreamsGroupMetadataValue) encodeValue(w *writer) {
	w.int32(v.Epoch)
	w.int64(v.MetadataHash)
	// Tags in place (a group's epoch bump writes this record; a mass
	// expiry, once a fenced member).
	validated, stored, failed := v.ValidatedTopologyEpoch != -1, v.StoredDescriptionTopologyEpoch != -1, v.FailedDescriptionTopologyEpoch != -1
	configs := v.LastAssignmentConfigsNull || len(v.LastAssignmentConfigs) > 0
	n := 0
	for _, set := range [...]bool{validated, configs, stored, failed} {
		if set {
			n++
		}
	}
	w.uvarint(n)
	if validated {
		w.tagInt32(0, v.ValidatedTopologyEpoch)
	}
	switch {
	case v.LastAssignmentConfigsNull:
		w.tag(1, func(w *writer) { w.uvarint(0) })
	case len(v.LastAssignmentConfigs) > 0:
		w.tag(1, func(w *writer) { writeKeyValues(w, v.LastAssignmentConfigs) })
	}
	if stored {
		w.tagInt32(2, v.StoredDescriptionTopologyEpoch)
	}
	if failed {
		w.tagInt32(3, v.FailedDescriptionTopologyEpoch)
	}
}

func decodeStreamsGroupMetadataValue(r *reader) RecordValue {
	v := StreamsGroupMetadataValue{Epoch: r.int32(), MetadataHash: r.int64(),
		ValidatedTopologyEpoch: -1, StoredDescriptionTopologyEpoch: -1, FailedDescriptionTopologyEpoch: -1}
	r.tags(func(tag uint64, sub *reader) bool {
		switch tag {
		case 0:
			v.ValidatedTopologyEpoch = sub.int32()
		case 1:
			v.LastAssignmentConfigs = readKeyValues(sub, true)
			v.LastAssignmentConfigsNull = v.LastAssignmentConfigs == nil
			if len(v.LastAssignmentConfigs) == 0 {
				v.LastAssignmentConfigs = nil
			}
		case 2:
			v.StoredDescriptionTopologyEpoch = sub.int32()
		case 3:
			v.FailedDescriptionTopologyEpoch = sub.int32()
		default:
			return false
		}
		return true
	})
	return v
}

// ---- 19 ----

func (v StreamsGroupMemberMetadataValue) encodeValue(w *writer) {
	w.compactNullableString(v.InstanceID)
	w.compactNullableString(v.RackID)
	w.compactString(v.ClientID)
	w.compactString(v.ClientHost)
	w.int32(v.RebalanceTimeoutMs)
	w.int32(v.TopologyEpoch)
	w.compactString(v.ProcessID)
	if v.UserEndpoint == nil {
		w.int8(-1)
	} else {
		w.int8(1)
		w.compactString(v.UserEndpoint.Host)
		w.uint16(v.UserEndpoint.Port)
		w.tags()
	}
	writeKeyValues(w, v.ClientTags)
	w.tags(classicMemberTags(v.Classic)...)
}

func decodeStreamsGroupMemberMetadataValue(r *reader) RecordValue {
	v := StreamsGroupMemberMetadataValue{
		InstanceID:         r.compactNullableString(),
		RackID:             r.compactNullableString(),
		ClientID:           r.compactString(),
		ClientHost:         r.compactString(),
		RebalanceTimeoutMs: r.int32(),
		TopologyEpoch:      r.int32(),
		ProcessID:          r.compactString(),
	}
	switch p := r.int8(); {
	case p < 0:
	case p == 1:
		v.UserEndpoint = &Endpoint{Host: r.compactString(), Port: r.uint16()}
		r.noTags()
	default:
		r.fail(errorString("bad nullable-struct marker for UserEndpoint"))
	}
	v.ClientTags = readKeyValues(r, false)
	r.tags(func(tag uint64, sub *reader) bool { return readClassicMemberTag(tag, sub, &v) })
	return v
}

// ---- 20 ----

func (v StreamsGroupTargetAssignmentMetadataValue) encodeValue(w *writer) {
	w.int32(v.AssignmentEpoch)
	if v.AssignmentTimestamp != 0 {
		w.tags(encodeTag(0, func(w *writer) { w.int64(v.AssignmentTimestamp) }))
	} else {
		w.tags()
	}
}

func decodeStreamsGroupTargetAssignmentMetadataValue(r *reader) RecordValue {
	v := StreamsGroupTargetAssignmentMetadataValue{AssignmentEpoch: r.int32()}
	r.tags(func(tag uint64, sub *reader) bool {
		if tag != 0 {
			return false
		}
		v.AssignmentTimestamp = sub.int64()
		return true
	})
	return v
}

// ---- 21 ----

func (v StreamsGroupTargetAssignmentMemberValue) encodeValue(w *writer) {
	writeTaskIDs(w, v.ActiveTasks, false)
	writeTaskIDs(w, v.StandbyTasks, false)
	writeTaskIDs(w, v.WarmupTasks, false)
	w.tags()
}

func decodeStreamsGroupTargetAssignmentMemberValue(r *reader) RecordValue {
	v := StreamsGroupTargetAssignmentMemberValue{
		ActiveTasks:  readTaskIDs(r, false),
		StandbyTasks: readTaskIDs(r, false),
		WarmupTasks:  readTaskIDs(r, false),
	}
	r.noTags()
	return v
}

// ---- 22 ----

func (v StreamsGroupCurrentMemberAssignmentValue) encodeValue(w *writer) {
	w.int32(v.MemberEpoch)
	w.int32(v.PreviousMemberEpoch)
	w.int8(v.State)
	writeTaskIDs(w, v.ActiveTasks, true)
	writeTaskIDs(w, v.StandbyTasks, true)
	writeTaskIDs(w, v.WarmupTasks, true)
	writeTaskIDs(w, v.ActiveTasksPendingRevocation, true)
	writeTaskIDs(w, v.StandbyTasksPendingRevocation, true)
	writeTaskIDs(w, v.WarmupTasksPendingRevocation, true)
	w.tags()
}

func decodeStreamsGroupCurrentMemberAssignmentValue(r *reader) RecordValue {
	v := StreamsGroupCurrentMemberAssignmentValue{
		MemberEpoch:         r.int32(),
		PreviousMemberEpoch: r.int32(),
		State:               r.int8(),
	}
	v.ActiveTasks = readTaskIDs(r, true)
	v.StandbyTasks = readTaskIDs(r, true)
	v.WarmupTasks = readTaskIDs(r, true)
	v.ActiveTasksPendingRevocation = readTaskIDs(r, true)
	v.StandbyTasksPendingRevocation = readTaskIDs(r, true)
	v.WarmupTasksPendingRevocation = readTaskIDs(r, true)
	r.noTags()
	return v
}

// ---- 23 ----

func (v StreamsGroupTopologyValue) encodeValue(w *writer) {
	w.int32(v.Epoch)
	w.uvarint(len(v.Subtopologies) + 1)
	for _, s := range v.Subtopologies {
		w.compactString(s.SubtopologyID)
		w.compactStrings(s.SourceTopics)
		w.compactStrings(s.SourceTopicRegex)
		writeTopicInfos(w, s.StateChangelogTopics)
		w.compactStrings(s.RepartitionSinkTopics)
		writeTopicInfos(w, s.RepartitionSourceTopics)
		w.uvarint(len(s.CopartitionGroups) + 1)
		for _, g := range s.CopartitionGroups {
			w.compactInt16s(g.SourceTopics)
			w.compactInt16s(g.SourceTopicRegex)
			w.compactInt16s(g.RepartitionSourceTopics)
			w.tags()
		}
		w.tags()
	}
	w.tags()
}

func decodeStreamsGroupTopologyValue(r *reader) RecordValue {
	v := StreamsGroupTopologyValue{Epoch: r.int32(), Subtopologies: []Subtopology{}}
	ok := r.compactArray(func() {
		s := Subtopology{SubtopologyID: r.compactString()}
		s.SourceTopics = r.compactStrings()
		s.SourceTopicRegex = r.compactStrings()
		s.StateChangelogTopics = readTopicInfos(r)
		s.RepartitionSinkTopics = r.compactStrings()
		s.RepartitionSourceTopics = readTopicInfos(r)
		s.CopartitionGroups = []CopartitionGroup{}
		if !r.compactArray(func() {
			g := CopartitionGroup{SourceTopics: r.compactInt16s(), SourceTopicRegex: r.compactInt16s(),
				RepartitionSourceTopics: r.compactInt16s()}
			r.noTags()
			s.CopartitionGroups = append(s.CopartitionGroups, g)
		}) {
			r.fail(errNullArray)
		}
		r.noTags()
		v.Subtopologies = append(v.Subtopologies, s)
	})
	if !ok {
		r.fail(errNullArray)
	}
	r.noTags()
	return v
}
