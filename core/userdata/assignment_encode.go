package userdata

import (
	"encoding/binary"
)

// Encode returns the AssignmentInfo bytes of a, as Kafka Streams'
// AssignmentInfo.encode writes them for the same input (maps taken in slice
// order). From v5 on, topics in the host maps are written through a topic
// dictionary; this encoder numbers topics 0, 1, … in first-use order, where
// Java uses HashMap order, so v5+ bytes equal Java's up to that numbering.
// As in Java, fields the version cannot carry are left out; a named topology
// below v10, a version outside 1–11 or a string longer than writeUTF allows
// is an error.
func (a *AssignmentInfo) Encode() ([]byte, error) {
	v := a.Version
	if v < 1 || v > LatestSupportedVersion {
		return nil, unencodable("assignment info version %d is not between 1 and %d", v, LatestSupportedVersion)
	}
	e := &assignmentEncoder{version: v, dst: binary.BigEndian.AppendUint32(nil, uint32(v))}
	if v >= 3 {
		e.int32(a.CommonlySupportedVersion)
	}
	e.int32(int32(len(a.ActiveTasks)))
	for _, t := range a.ActiveTasks {
		e.taskID(t)
	}
	e.int32(int32(len(a.StandbyTasks)))
	for _, s := range a.StandbyTasks {
		e.taskID(s.Task)
		e.plainPartitions(s.Partitions)
	}
	switch {
	case v >= 2 && v <= 4:
		e.plainHostMap(a.PartitionsByHost)
	case v == 5:
		dict := e.dictionary(a.PartitionsByHost)
		e.dictHostMap(a.PartitionsByHost, dict)
	case v >= 6:
		dict := e.dictionary(a.PartitionsByHost, a.StandbyPartitionsByHost)
		e.dictHostMap(a.PartitionsByHost, dict)
		e.dictHostMap(a.StandbyPartitionsByHost, dict)
	}
	if v >= 4 {
		e.int32(a.ErrorCode)
	}
	if v >= 7 {
		e.dst = binary.BigEndian.AppendUint64(e.dst, uint64(a.NextRebalanceMs))
	}
	if e.err != nil {
		return nil, e.err
	}
	return e.dst, nil
}

type assignmentEncoder struct {
	version int32
	dst     []byte
	err     error
}

func (e *assignmentEncoder) int32(n int32) { e.dst = binary.BigEndian.AppendUint32(e.dst, uint32(n)) }

func (e *assignmentEncoder) utf(s, field string) {
	if e.err != nil {
		return
	}
	e.dst, e.err = appendJavaUTF(e.dst, s, field)
}

// taskID is ConsumerProtocolUtils.writeTaskIdTo.
func (e *assignmentEncoder) taskID(t TaskID) {
	e.int32(t.Subtopology)
	e.int32(t.Partition)
	if e.version >= MinNamedTopologyVersion {
		units := utf16Units(t.Topology)
		e.int32(int32(len(units)))
		for _, u := range units {
			e.dst = binary.BigEndian.AppendUint16(e.dst, u)
		}
	} else if t.Topology != "" && e.err == nil {
		e.err = unencodable("assignment info v%d: named topology task %s needs version %d+", e.version, t, MinNamedTopologyVersion)
	}
}

func (e *assignmentEncoder) plainPartitions(tps []TopicPartition) {
	e.int32(int32(len(tps)))
	for _, tp := range tps {
		e.utf(tp.Topic, "topic")
		e.int32(tp.Partition)
	}
}

func (e *assignmentEncoder) host(h HostPartitions) {
	e.utf(h.Host, "host")
	e.int32(h.Port)
}

func (e *assignmentEncoder) plainHostMap(hosts []HostPartitions) {
	e.int32(int32(len(hosts)))
	for _, h := range hosts {
		e.host(h)
		e.plainPartitions(h.Partitions)
	}
}

// dictionary numbers the topics of the host maps in first-use order and
// writes the dictionary.
func (e *assignmentEncoder) dictionary(maps ...[]HostPartitions) map[string]int32 {
	dict := map[string]int32{}
	var names []string
	for _, hosts := range maps {
		for _, h := range hosts {
			for _, tp := range h.Partitions {
				if _, ok := dict[tp.Topic]; !ok {
					dict[tp.Topic] = int32(len(names))
					names = append(names, tp.Topic)
				}
			}
		}
	}
	e.int32(int32(len(names)))
	for i, name := range names {
		e.int32(int32(i))
		e.utf(name, "topic")
	}
	return dict
}

func (e *assignmentEncoder) dictHostMap(hosts []HostPartitions, dict map[string]int32) {
	e.int32(int32(len(hosts)))
	for _, h := range hosts {
		e.host(h)
		e.int32(int32(len(h.Partitions)))
		for _, tp := range h.Partitions {
			e.int32(dict[tp.Topic])
			e.int32(tp.Partition)
		}
	}
}
