package userdata

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
)

// TaskID names a Kafka Streams task: a subtopology (Java's "topic group id",
// the node-group number of the topology) and a partition. Topology is the
// named topology (a hidden Kafka Streams feature, versions 10+ only); it is
// empty for every normal application.
type TaskID struct {
	Subtopology int32
	Partition   int32
	Topology    string
}

// String returns Java's TaskId.toString form: "<subtopology>_<partition>",
// or "<topology>__<subtopology>_<partition>" with a named topology.
func (t TaskID) String() string {
	s := strconv.Itoa(int(t.Subtopology)) + "_" + strconv.Itoa(int(t.Partition))
	if t.Topology != "" {
		return t.Topology + "__" + s
	}
	return s
}

// ParseTaskID parses the String form, as Java's TaskId.parse does.
func ParseTaskID(s string) (TaskID, error) {
	var t TaskID
	rest := s
	if i := strings.Index(s, "__"); i >= 0 {
		t.Topology, rest = s[:i], s[i+2:]
		if t.Topology == "" {
			return TaskID{}, fmt.Errorf("task id %q: empty topology name", s)
		}
	}
	g, p, ok := strings.Cut(rest, "_")
	sub, err1 := strconv.ParseInt(g, 10, 32)
	part, err2 := strconv.ParseInt(p, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		return TaskID{}, fmt.Errorf("task id %q: want <subtopology>_<partition>", s)
	}
	t.Subtopology, t.Partition = int32(sub), int32(part)
	return t, nil
}

// SubtopologyID returns the KIP-1071 (streams protocol) subtopology id of the
// task: the decimal string of its subtopology number, as the streams-protocol
// client derives it (String.valueOf(nodeGroupId)).
func (t TaskID) SubtopologyID() string { return strconv.Itoa(int(t.Subtopology)) }

// TaskIDFromSubtopology maps a KIP-1071 subtopology id and partition back to
// a classic TaskID. The id must be the canonical decimal form of an int32
// (the form SubtopologyID produces); anything else has no classic TaskID.
func TaskIDFromSubtopology(subtopologyID string, partition int32) (TaskID, error) {
	n, err := strconv.ParseInt(subtopologyID, 10, 32)
	if err != nil || strconv.FormatInt(n, 10) != subtopologyID {
		return TaskID{}, fmt.Errorf("subtopology id %q is not a classic subtopology number", subtopologyID)
	}
	if partition < 0 {
		return TaskID{}, fmt.Errorf("subtopology %q: negative partition %d", subtopologyID, partition)
	}
	return TaskID{Subtopology: int32(n), Partition: partition}, nil
}

// Compare orders tasks as Java's TaskId.compareTo does for tasks of one
// kind: by topology name (UTF-16 order), then subtopology, then partition.
func (t TaskID) Compare(o TaskID) int {
	if c := javaCompare(t.Topology, o.Topology); c != 0 {
		return c
	}
	if c := cmp.Compare(t.Subtopology, o.Subtopology); c != 0 {
		return c
	}
	return cmp.Compare(t.Partition, o.Partition)
}

// javaHashCode is Java's TaskId.hashCode: Objects.hash(subtopology,
// partition, topologyName).
func (t TaskID) javaHashCode() int32 {
	h := int32(1)
	h = 31*h + t.Subtopology
	h = 31*h + t.Partition
	h = 31 * h
	if t.Topology != "" {
		h += javaStringHash(t.Topology)
	}
	return h
}

func javaStringHash(s string) int32 {
	var h int32
	for _, c := range utf16Units(s) {
		h = 31*h + int32(c)
	}
	return h
}
