package userdata

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Assignment error codes (Kafka Streams' AssignorError) and what a classic
// Streams client does when it receives them.
const (
	// ErrCodeNone: a normal assignment.
	ErrCodeNone int32 = 0
	// ErrCodeIncompleteSourceTopicMetadata: a source topic is missing; the
	// client throws MissingSourceTopicException (default: client shutdown).
	ErrCodeIncompleteSourceTopicMetadata int32 = 1
	// ErrCodeVersionProbing: legacy, only logged by the client.
	ErrCodeVersionProbing int32 = 2
	// ErrCodeAssignmentError: the client throws TaskAssignmentException.
	ErrCodeAssignmentError int32 = 3
	// ErrCodeShutdownRequested: a member asked the application to shut down;
	// every client shuts down.
	ErrCodeShutdownRequested int32 = 4
)

// NoRebalance is the NextRebalanceMs value meaning "no follow-up rebalance"
// (Long.MAX_VALUE).
const NoRebalance int64 = math.MaxInt64

// AssignmentInfo is Kafka Streams' SyncGroup userdata: the bytes in
// ConsumerMemberAssignment.UserData for a classic Streams member.
type AssignmentInfo struct {
	// Version is the version used, 1–11: the smallest subscription version
	// in the group (see Negotiate).
	Version int32
	// CommonlySupportedVersion is the smallest latest-supported version in
	// the group (v3+; decoded v1–2 give UnknownVersion).
	CommonlySupportedVersion int32
	// ActiveTasks has one entry per assigned partition, aligned with the
	// member's partitions sorted by (topic, partition); see ActiveTaskList.
	ActiveTasks []TaskID
	// StandbyTasks maps each standby task to its source partitions.
	StandbyTasks []StandbyTask
	// PartitionsByHost lists, for every process with an endpoint, the source
	// partitions of its active tasks — an entry even when empty (v2+).
	PartitionsByHost []HostPartitions
	// StandbyPartitionsByHost is the same for standby tasks (v6+).
	StandbyPartitionsByHost []HostPartitions
	// ErrorCode is an assignment error (v4+), one of the ErrCode constants.
	ErrorCode int32
	// NextRebalanceMs is an absolute wall-clock deadline in epoch ms for a
	// follow-up rebalance (v7+): 0 means now, NoRebalance means none.
	NextRebalanceMs int64
}

// StandbyTask is one standby task of an AssignmentInfo and the source
// partitions it reads.
type StandbyTask struct {
	Task       TaskID
	Partitions []TopicPartition
}

// HostPartitions is one entry of an AssignmentInfo host map: a process
// endpoint (host without scheme or brackets, port) and its partitions.
type HostPartitions struct {
	Host       string
	Port       int32
	Partitions []TopicPartition
}

// ErrorAssignment returns the AssignmentInfo a Java leader sends to every
// member when the whole assignment fails (StreamsPartitionAssignor
// errorAssignment): version and commonly supported version 11, no tasks,
// the error code, no follow-up rebalance. Members older than Kafka 3.2 cannot
// decode it; set Version to the group's Negotiation.Version (4+) for them.
func ErrorAssignment(code int32) *AssignmentInfo {
	return &AssignmentInfo{
		Version:                  LatestSupportedVersion,
		CommonlySupportedVersion: LatestSupportedVersion,
		ErrorCode:                code,
		NextRebalanceMs:          NoRebalance,
	}
}

// DecodeAssignmentInfo decodes AssignmentInfo bytes as Kafka Streams'
// AssignmentInfo.decode does, including its 4.3+ count bounds. Versions
// outside 1–11 are an error. Fields a version does not carry get Java's
// defaults (commonly supported -1 for v1–2, NextRebalanceMs NoRebalance
// below v7). Trailing bytes are ignored, as in Java.
func DecodeAssignmentInfo(b []byte) (*AssignmentInfo, error) {
	r := newReader(b, "streams assignment info")
	a := &AssignmentInfo{Version: r.int32("version"), CommonlySupportedVersion: UnknownVersion, NextRebalanceMs: NoRebalance}
	if r.err != nil {
		return nil, r.err
	}
	v := a.Version
	if v < 1 || v > LatestSupportedVersion {
		r.failf("version %d is not between 1 and %d", v, LatestSupportedVersion)
		return nil, r.err
	}
	r.what = fmt.Sprintf("streams assignment info v%d", v)
	d := &assignmentDecoder{r: r, version: v}
	if v >= 3 {
		a.CommonlySupportedVersion = r.int32("commonly supported version")
	}
	a.ActiveTasks = d.activeTasks()
	a.StandbyTasks = d.standbyTasks()
	switch {
	case v >= 2 && v <= 4:
		a.PartitionsByHost = d.plainHostMap()
	case v >= 5:
		dict := d.dictionary()
		a.PartitionsByHost = d.dictHostMap(dict, "partitions by host")
		if v >= 6 {
			a.StandbyPartitionsByHost = d.dictHostMap(dict, "standby partitions by host")
		}
	}
	if v >= 4 {
		a.ErrorCode = r.int32("error code")
	}
	if v >= 7 {
		a.NextRebalanceMs = r.int64("next rebalance ms")
	}
	if r.err != nil {
		return nil, r.err
	}
	return a, nil
}

// assignmentDecoder holds what the AssignmentInfo field readers share.
type assignmentDecoder struct {
	r       *reader
	version int32
}

// count reads a count of elements of at least minSize bytes. Kafka 4.3+
// rejects count > total/minSize ("Corrupted user data"); requiring the
// elements to fit in the remaining bytes is stricter and rejects only input
// that Java would fail to read anyway.
func (d *assignmentDecoder) count(field string, minSize int) int {
	return d.r.count(field, minSize)
}

func (d *assignmentDecoder) taskID(field string) TaskID {
	t := TaskID{Subtopology: d.r.int32(field), Partition: d.r.int32(field)}
	if d.version < MinNamedTopologyVersion {
		return t
	}
	n := d.r.int32(field + " named topology length")
	if d.r.err != nil {
		return t
	}
	if n < 0 || int64(n)*2 > int64(d.r.remaining()) {
		d.r.failf("%s: named topology length %d chars does not fit in %d bytes", field, n, d.r.remaining())
		return t
	}
	raw := d.r.take(int(n)*2, field+" named topology")
	units := make([]uint16, n)
	for i := range units {
		units[i] = binary.BigEndian.Uint16(raw[2*i:])
	}
	name, err := utf16String(units)
	if err != nil {
		d.r.failf("%s named topology: %v", field, err)
	}
	t.Topology = name
	return t
}

func (d *assignmentDecoder) activeTasks() []TaskID {
	n := d.count("active tasks", 8)
	out := make([]TaskID, 0, n)
	for i := 0; i < n && d.r.err == nil; i++ {
		out = append(out, d.taskID("active task"))
	}
	return out
}

func (d *assignmentDecoder) standbyTasks() []StandbyTask {
	n := d.count("standby tasks", 12)
	out := make([]StandbyTask, 0, n)
	for i := 0; i < n && d.r.err == nil; i++ {
		t := d.taskID("standby task")
		out = append(out, StandbyTask{Task: t, Partitions: d.plainPartitions()})
	}
	return out
}

func (d *assignmentDecoder) plainPartitions() []TopicPartition {
	n := d.count("partitions", 6)
	out := make([]TopicPartition, 0, n)
	for i := 0; i < n && d.r.err == nil; i++ {
		topic := d.r.javaUTF("topic")
		out = append(out, TopicPartition{Topic: topic, Partition: d.r.int32("partition")})
	}
	return out
}

func (d *assignmentDecoder) host() (string, int32) {
	h := d.r.javaUTF("host")
	return h, d.r.int32("port")
}

func (d *assignmentDecoder) plainHostMap() []HostPartitions {
	n := d.count("partitions by host", 10)
	out := make([]HostPartitions, 0, n)
	for i := 0; i < n && d.r.err == nil; i++ {
		h, p := d.host()
		out = append(out, HostPartitions{Host: h, Port: p, Partitions: d.plainPartitions()})
	}
	return out
}

func (d *assignmentDecoder) dictionary() map[int32]string {
	n := d.count("topic dictionary", 6)
	dict := make(map[int32]string, n)
	for i := 0; i < n && d.r.err == nil; i++ {
		idx := d.r.int32("topic index")
		dict[idx] = d.r.javaUTF("topic name")
	}
	return dict
}

// dictHostMap reads a host map whose partitions name topics by dictionary
// index. Java would build a TopicPartition with a null topic for an index
// missing from the dictionary; that is an error here.
func (d *assignmentDecoder) dictHostMap(dict map[int32]string, field string) []HostPartitions {
	n := d.count(field, 10)
	out := make([]HostPartitions, 0, n)
	for i := 0; i < n && d.r.err == nil; i++ {
		h, p := d.host()
		m := d.count(field+" partitions", 8)
		tps := make([]TopicPartition, 0, m)
		for j := 0; j < m && d.r.err == nil; j++ {
			idx := d.r.int32("topic index")
			part := d.r.int32("partition")
			topic, ok := dict[idx]
			if d.r.err == nil && !ok {
				d.r.failf("%s: topic index %d is not in the topic dictionary", field, idx)
			}
			tps = append(tps, TopicPartition{Topic: topic, Partition: part})
		}
		out = append(out, HostPartitions{Host: h, Port: p, Partitions: tps})
	}
	return out
}
