package userdata

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Version constants of the Streams assignment protocol
// (StreamsAssignmentProtocolVersions in Kafka Streams 4.4).
const (
	// UnknownVersion is the latest supported version of v1–v2 subscriptions
	// and the commonly supported version of decoded v1–v2 assignments.
	UnknownVersion int32 = -1
	// EarliestProbeableVersion is the first version that takes part in
	// version probing (carries latestSupported / commonlySupported).
	EarliestProbeableVersion int32 = 3
	// MinNamedTopologyVersion is the first version that can carry named
	// topologies.
	MinNamedTopologyVersion int32 = 10
	// LatestSupportedVersion is the newest SubscriptionInfo/AssignmentInfo
	// version Kafka Streams 4.4 (and this package) reads and writes.
	LatestSupportedVersion int32 = 11

	minOffsetSumVersion int32 = 7
)

// Offset-sum sentinels of SubscriptionInfo task offset sums.
const (
	// LatestOffset (-2) marks a task the member runs as a caught-up active
	// task (Task.LATEST_OFFSET).
	LatestOffset int64 = -2
	// UnknownOffsetSum (-3) is what a v1–6 standby task decodes to
	// (SubscriptionInfo.UNKNOWN_OFFSET_SUM).
	UnknownOffsetSum int64 = -3
)

// SubscriptionInfo is Kafka Streams' JoinGroup userdata: the bytes in
// ConsumerMemberMetadata.UserData of a classic Streams member.
type SubscriptionInfo struct {
	// Version is the version the member used (1–11, or above 11 for a
	// "future" member doing version probing; see IsFuture).
	Version int32
	// LatestSupportedVersion is the newest version the member can use;
	// UnknownVersion (-1) for v1–2.
	LatestSupportedVersion int32
	// ProcessID is the Kafka Streams instance the member (thread) belongs to.
	ProcessID ProcessID
	// UserEndPoint is the member's application.server (host:port), or "" for
	// none (v2+). It holds the raw bytes of the field.
	UserEndPoint string
	// TaskOffsetSums lists the member's stateful tasks with their changelog
	// offset sums, in wire order: LatestOffset for running actives,
	// UnknownOffsetSum for v1–6 standbys. A task appears at most once.
	TaskOffsetSums []TaskOffsetSum
	// UniqueField changes on every rejoin (v8+).
	UniqueField int8
	// ErrorCode is the member's assignment error code (v9+); 4 asks the
	// whole application to shut down.
	ErrorCode int32
	// ClientTags are the member's client.tag.* configs in wire order (v11+).
	ClientTags []ClientTag
}

// TaskOffsetSum is one stateful task of a SubscriptionInfo and its offset sum.
type TaskOffsetSum struct {
	Task      TaskID
	OffsetSum int64
}

// ClientTag is one client.tag.<key>=<value> config of a member.
type ClientTag struct {
	Key, Value string
}

// IsFuture reports whether the member used a version newer than this
// package knows. Only Version and LatestSupportedVersion are then set; such a
// member must get an assignment at LatestSupportedVersion or below so that it
// downgrades and rejoins (version probing).
func (s *SubscriptionInfo) IsFuture() bool { return s.Version > LatestSupportedVersion }

// OffsetSums returns TaskOffsetSums as a map, as Java's taskOffsetSums()
// builds it.
func (s *SubscriptionInfo) OffsetSums() map[TaskID]int64 {
	m := make(map[TaskID]int64, len(s.TaskOffsetSums))
	for _, t := range s.TaskOffsetSums {
		m[t.Task] = t.OffsetSum
	}
	return m
}

// validateSubscriptionVersions is SubscriptionInfo.validateVersions.
func validateSubscriptionVersions(version, latest int32) error {
	if latest == UnknownVersion {
		if version < 1 || version > 2 {
			return fmt.Errorf("version %d with latest supported version -1 (only versions 1 and 2 may omit it)", version)
		}
		return nil
	}
	if version < 1 || version > latest {
		return fmt.Errorf("version %d is not between 1 and the latest supported version %d", version, latest)
	}
	return nil
}

// DecodeSubscriptionInfo decodes SubscriptionInfo bytes as Kafka Streams'
// SubscriptionInfo.decode does. A version above LatestSupportedVersion reads
// only the version and latest supported version (the rest belongs to a newer
// format). Trailing bytes after the fields of the version are ignored, as in
// Java.
func DecodeSubscriptionInfo(b []byte) (*SubscriptionInfo, error) {
	r := newReader(b, "streams subscription info")
	s := &SubscriptionInfo{Version: r.int32("version"), LatestSupportedVersion: UnknownVersion}
	if s.IsFuture() {
		s.LatestSupportedVersion = r.int32("latest supported version")
	} else {
		r.what = fmt.Sprintf("streams subscription info v%d", s.Version)
		s.readBody(r)
	}
	if r.err != nil {
		return nil, r.err
	}
	if err := validateSubscriptionVersions(s.Version, s.LatestSupportedVersion); err != nil {
		return nil, fmt.Errorf("%w: streams subscription info: %v", ErrMalformed, err)
	}
	return s, nil
}

func (s *SubscriptionInfo) readBody(r *reader) {
	v := s.Version
	if v < 1 {
		r.failf("version %d is below 1", v)
		return
	}
	if v >= 3 {
		s.LatestSupportedVersion = r.int32("latest supported version")
	}
	copy(s.ProcessID[:], r.take(16, "process id"))
	if v < minOffsetSumVersion {
		s.TaskOffsetSums = append(readTaskSet(r, "prev tasks", LatestOffset), readTaskSet(r, "standby tasks", UnknownOffsetSum)...)
		s.TaskOffsetSums = dedupLastWins(s.TaskOffsetSums)
	}
	if v >= 2 {
		s.UserEndPoint = string(r.bytes32("user end point"))
	}
	if v >= minOffsetSumVersion {
		s.TaskOffsetSums = dedupLastWins(readOffsetSums(r, v))
	}
	if v >= 8 {
		s.UniqueField = r.int8("unique field")
	}
	if v >= 9 {
		s.ErrorCode = r.int32("error code")
	}
	if v >= 11 {
		n := r.count("client tags", 8)
		for i := 0; i < n && r.err == nil; i++ {
			s.ClientTags = append(s.ClientTags, ClientTag{Key: string(r.bytes32("client tag key")), Value: string(r.bytes32("client tag value"))})
		}
	}
}

func readTaskSet(r *reader, field string, sum int64) []TaskOffsetSum {
	n := r.count(field, 8)
	out := make([]TaskOffsetSum, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		t := TaskID{Subtopology: r.int32(field), Partition: r.int32(field)}
		out = append(out, TaskOffsetSum{Task: t, OffsetSum: sum})
	}
	return out
}

func readOffsetSums(r *reader, v int32) []TaskOffsetSum {
	var out []TaskOffsetSum
	if v >= MinNamedTopologyVersion {
		n := r.count("task offset sums", 18)
		for i := 0; i < n && r.err == nil; i++ {
			t := TaskID{Subtopology: r.int32("topic group id"), Partition: r.int32("partition")}
			sum := r.int64("offset sum")
			if name := r.nullableString16("named topology"); name != nil {
				t.Topology = *name
			}
			out = append(out, TaskOffsetSum{Task: t, OffsetSum: sum})
		}
		return out
	}
	groups := r.count("task offset sums", 8)
	for i := 0; i < groups && r.err == nil; i++ {
		g := r.int32("topic group id")
		n := r.count("partition offset sums", 12)
		for j := 0; j < n && r.err == nil; j++ {
			t := TaskID{Subtopology: g, Partition: r.int32("partition")}
			out = append(out, TaskOffsetSum{Task: t, OffsetSum: r.int64("offset sum")})
		}
	}
	return out
}

// dedupLastWins keeps the first position and the last value of every task,
// which is what Java's HashMap-based taskOffsetSums() yields for duplicates.
func dedupLastWins(in []TaskOffsetSum) []TaskOffsetSum {
	pos := make(map[TaskID]int, len(in))
	out := in[:0]
	for _, t := range in {
		if i, ok := pos[t.Task]; ok {
			out[i].OffsetSum = t.OffsetSum
			continue
		}
		pos[t.Task] = len(out)
		out = append(out, t)
	}
	return out
}

// Encode returns the SubscriptionInfo bytes of s, byte for byte what Kafka
// Streams' new SubscriptionInfo(...).encode() writes for the same input
// (with TaskOffsetSums and ClientTags taken as the maps' iteration order).
// As in Java, fields the version cannot carry are left out (the endpoint
// below v2, the unique field below v8, the error code below v9, client tags
// below v11), and a named topology below v10 is an error.
func (s *SubscriptionInfo) Encode() ([]byte, error) {
	v := s.Version
	if v > LatestSupportedVersion {
		return nil, unencodable("subscription info version %d is above %d", v, LatestSupportedVersion)
	}
	latest := s.LatestSupportedVersion
	if v <= 2 {
		latest = UnknownVersion
	}
	if err := validateSubscriptionVersions(v, latest); err != nil {
		return nil, unencodable("subscription info: %v", err)
	}
	if err := s.checkTasks(); err != nil {
		return nil, err
	}
	dst := binary.BigEndian.AppendUint32(nil, uint32(v))
	if v >= 3 {
		dst = binary.BigEndian.AppendUint32(dst, uint32(latest))
	}
	dst = append(dst, s.ProcessID[:]...)
	if v < minOffsetSumVersion {
		dst = s.appendTaskSets(dst)
	}
	if v >= 2 {
		dst = appendBytes32(dst, s.UserEndPoint)
	}
	if v >= MinNamedTopologyVersion {
		dst = s.appendFlatOffsetSums(dst)
	} else if v >= minOffsetSumVersion {
		dst = s.appendGroupedOffsetSums(dst)
	}
	if v >= 8 {
		dst = append(dst, byte(s.UniqueField))
	}
	if v >= 9 {
		dst = binary.BigEndian.AppendUint32(dst, uint32(s.ErrorCode))
	}
	if v >= 11 {
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(s.ClientTags)))
		for _, tag := range s.ClientTags {
			dst = appendBytes32(appendBytes32(dst, tag.Key), tag.Value)
		}
	}
	return dst, nil
}

func (s *SubscriptionInfo) checkTasks() error {
	seen := make(map[TaskID]bool, len(s.TaskOffsetSums))
	for _, t := range s.TaskOffsetSums {
		if seen[t.Task] {
			return unencodable("subscription info: task %s listed twice", t.Task)
		}
		seen[t.Task] = true
		if t.Task.Topology != "" && s.Version < MinNamedTopologyVersion {
			return unencodable("subscription info v%d: named topology task %s needs version %d+", s.Version, t.Task, MinNamedTopologyVersion)
		}
		if len(t.Task.Topology) > math.MaxInt16 {
			return unencodable("subscription info: named topology of task %s is longer than %d bytes", t.Task, math.MaxInt16)
		}
	}
	return nil
}

// appendTaskSets writes the v1–6 prevTasks and standbyTasks sets: running
// actives (LatestOffset) are previous tasks, everything else is a standby,
// each set in Java HashSet order.
func (s *SubscriptionInfo) appendTaskSets(dst []byte) []byte {
	var prev, standby []TaskID
	for _, t := range s.TaskOffsetSums {
		if t.OffsetSum == LatestOffset {
			prev = append(prev, t.Task)
		} else {
			standby = append(standby, t.Task)
		}
	}
	for _, set := range [][]TaskID{prev, standby} {
		hashes := make([]int32, len(set))
		for i, t := range set {
			hashes[i] = t.javaHashCode()
		}
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(set)))
		for _, i := range javaHashOrder(hashes, false) {
			dst = binary.BigEndian.AppendUint32(dst, uint32(set[i].Subtopology))
			dst = binary.BigEndian.AppendUint32(dst, uint32(set[i].Partition))
		}
	}
	return dst
}

// appendGroupedOffsetSums writes the v7–9 form: one entry per subtopology
// (in Java HashMap<Integer> order) with its partitions in input order.
func (s *SubscriptionInfo) appendGroupedOffsetSums(dst []byte) []byte {
	var groups []int32
	members := map[int32][]TaskOffsetSum{}
	for _, t := range s.TaskOffsetSums {
		g := t.Task.Subtopology
		if _, ok := members[g]; !ok {
			groups = append(groups, g)
		}
		members[g] = append(members[g], t)
	}
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(groups)))
	for _, i := range javaHashOrder(groups, true) {
		g := groups[i]
		dst = binary.BigEndian.AppendUint32(dst, uint32(g))
		dst = binary.BigEndian.AppendUint32(dst, uint32(len(members[g])))
		for _, t := range members[g] {
			dst = binary.BigEndian.AppendUint32(dst, uint32(t.Task.Partition))
			dst = binary.BigEndian.AppendUint64(dst, uint64(t.OffsetSum))
		}
	}
	return dst
}

// appendFlatOffsetSums writes the v10+ form: one entry per task.
func (s *SubscriptionInfo) appendFlatOffsetSums(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(s.TaskOffsetSums)))
	for _, t := range s.TaskOffsetSums {
		dst = binary.BigEndian.AppendUint32(dst, uint32(t.Task.Subtopology))
		dst = binary.BigEndian.AppendUint32(dst, uint32(t.Task.Partition))
		dst = binary.BigEndian.AppendUint64(dst, uint64(t.OffsetSum))
		if t.Task.Topology == "" {
			dst = binary.BigEndian.AppendUint16(dst, 0xFFFF) // null
		} else {
			dst = binary.BigEndian.AppendUint16(dst, uint16(len(t.Task.Topology)))
			dst = append(dst, t.Task.Topology...)
		}
	}
	return dst
}

func appendBytes32(dst []byte, s string) []byte {
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(s)))
	return append(dst, s...)
}
