package userdata

import (
	"bytes"
	"math"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerProtocolVersion is the newest ConsumerProtocol subscription and
// assignment version (kafka-clients 4.4). Newer versions are read as this
// version, ignoring the fields they append.
const ConsumerProtocolVersion int16 = 3

// DecodeSubscription decodes JoinGroup protocol metadata of protocol type
// "consumer" (ConsumerProtocolSubscription) with kafka-clients'
// ConsumerProtocol checks, which are stricter than kmsg's: a negative
// version, a null (-1) array or a null non-nullable string is an error.
// A version above ConsumerProtocolVersion is read as that version and its
// extra trailing fields are ignored; the returned Version is the one on the
// wire. UserData is a copy, nil when the member sent null.
func DecodeSubscription(b []byte) (*kmsg.ConsumerMemberMetadata, error) {
	r := newReader(b, "consumer protocol subscription")
	v := readProtocolVersion(r)
	checkSubscriptionBody(r, min(v, ConsumerProtocolVersion))
	if r.err != nil {
		return nil, r.err
	}
	m := new(kmsg.ConsumerMemberMetadata)
	if err := m.ReadFrom(b); err != nil {
		r.failf("kmsg: %v", err) // unreachable after the checks above; kept as a guard
		return nil, r.err
	}
	m.UserData = bytes.Clone(m.UserData)
	return m, nil
}

// readProtocolVersion reads the int16 version prefix; ConsumerProtocol
// rejects a negative one and reads any higher one as its newest version.
func readProtocolVersion(r *reader) int16 {
	v := r.int16("version")
	if r.err == nil && v < 0 {
		r.failf("unsupported version %d", v)
	}
	return v
}

// checkSubscriptionBody walks a subscription body as Java's generated
// ConsumerProtocolSubscription reader does, recording the first violation.
func checkSubscriptionBody(r *reader, v int16) {
	n := r.count("topics", 2)
	for i := 0; i < n; i++ {
		checkString(r, "topic")
	}
	checkNullableBytes(r, "user data")
	if v >= 1 {
		n := r.count("owned partitions", 6)
		for i := 0; i < n; i++ {
			checkString(r, "owned partitions topic")
			m := r.count("owned partitions partitions", 4)
			r.take(4*m, "owned partitions partitions")
		}
	}
	if v >= 2 {
		r.int32("generation id")
	}
	if v >= 3 {
		r.nullableString16("rack id")
	}
}

func checkString(r *reader, field string) {
	n := r.int16(field + " length")
	if r.err == nil && n < 0 {
		r.failf("%s: negative length %d (null is not allowed)", field, n)
	}
	r.take(int(n), field)
}

func checkNullableBytes(r *reader, field string) {
	if n := r.int32(field + " length"); n >= 0 {
		r.take(int(n), field)
	}
}

// EncodeSubscription encodes JoinGroup protocol metadata as kafka-clients'
// ConsumerProtocol.serializeSubscription does: topics sorted, owned
// partitions sorted by topic then partition and grouped per topic, a version
// above ConsumerProtocolVersion written as that version. m is not modified.
func EncodeSubscription(m *kmsg.ConsumerMemberMetadata) ([]byte, error) {
	if m.Version < 0 {
		return nil, unencodable("consumer protocol subscription version %d", m.Version)
	}
	c := *m
	c.Version = min(m.Version, ConsumerProtocolVersion)
	c.Topics = slices.Clone(m.Topics)
	slices.SortFunc(c.Topics, javaCompare)
	c.OwnedPartitions = sortOwned(m.OwnedPartitions)
	for _, t := range c.Topics {
		if err := checkKafkaString(t, "topic"); err != nil {
			return nil, err
		}
	}
	for _, o := range c.OwnedPartitions {
		if err := checkKafkaString(o.Topic, "owned partitions topic"); err != nil {
			return nil, err
		}
	}
	if c.Rack != nil {
		if err := checkKafkaString(*c.Rack, "rack id"); err != nil {
			return nil, err
		}
	}
	return c.AppendTo(nil), nil
}

func checkKafkaString(s, field string) error {
	if len(s) > math.MaxInt16 {
		return unencodable("%s is %d bytes, more than %d", field, len(s), math.MaxInt16)
	}
	return nil
}

// sortOwned flattens, sorts and regroups owned partitions as Java does.
func sortOwned(in []kmsg.ConsumerMemberMetadataOwnedPartition) []kmsg.ConsumerMemberMetadataOwnedPartition {
	var flat []TopicPartition
	for _, o := range in {
		for _, p := range o.Partitions {
			flat = append(flat, TopicPartition{Topic: o.Topic, Partition: p})
		}
	}
	slices.SortStableFunc(flat, compareTopicPartition)
	var out []kmsg.ConsumerMemberMetadataOwnedPartition
	for _, tp := range flat {
		if len(out) == 0 || out[len(out)-1].Topic != tp.Topic {
			out = append(out, kmsg.ConsumerMemberMetadataOwnedPartition{Topic: tp.Topic})
		}
		last := &out[len(out)-1]
		last.Partitions = append(last.Partitions, tp.Partition)
	}
	return out
}

// DecodeAssignment decodes a SyncGroup assignment of protocol type
// "consumer" (ConsumerProtocolAssignment) with kafka-clients'
// ConsumerProtocol checks; see DecodeSubscription. UserData is a copy, nil
// when null.
func DecodeAssignment(b []byte) (*kmsg.ConsumerMemberAssignment, error) {
	r := newReader(b, "consumer protocol assignment")
	readProtocolVersion(r) // v0–3 and later versions share one layout
	n := r.count("assigned partitions", 6)
	for i := 0; i < n; i++ {
		checkString(r, "assigned partitions topic")
		m := r.count("assigned partitions partitions", 4)
		r.take(4*m, "assigned partitions partitions")
	}
	checkNullableBytes(r, "user data")
	if r.err != nil {
		return nil, r.err
	}
	a := new(kmsg.ConsumerMemberAssignment)
	if err := a.ReadFrom(b); err != nil {
		r.failf("kmsg: %v", err) // unreachable after the checks above; kept as a guard
		return nil, r.err
	}
	a.UserData = bytes.Clone(a.UserData)
	return a, nil
}

// EncodeAssignment encodes a SyncGroup assignment as kafka-clients'
// ConsumerProtocol.serializeAssignment does; a version above
// ConsumerProtocolVersion is written as that version. Kafka's broker answers
// a classic member at the version of its JoinGroup subscription. A Streams
// member needs non-nil UserData (an AssignmentInfo) and at least the 2-byte
// version, which every encoding has.
func EncodeAssignment(a *kmsg.ConsumerMemberAssignment) ([]byte, error) {
	if a.Version < 0 {
		return nil, unencodable("consumer protocol assignment version %d", a.Version)
	}
	for _, t := range a.Topics {
		if err := checkKafkaString(t.Topic, "assigned partitions topic"); err != nil {
			return nil, err
		}
	}
	c := *a
	c.Version = min(a.Version, ConsumerProtocolVersion)
	return c.AppendTo(nil), nil
}

// AssignmentTopics groups partitions per topic in first-seen order, as
// ConsumerProtocol.serializeAssignment does, for
// kmsg.ConsumerMemberAssignment.Topics.
func AssignmentTopics(partitions []TopicPartition) []kmsg.ConsumerMemberAssignmentTopic {
	var out []kmsg.ConsumerMemberAssignmentTopic
	index := map[string]int{}
	for _, tp := range partitions {
		i, ok := index[tp.Topic]
		if !ok {
			i = len(out)
			index[tp.Topic] = i
			out = append(out, kmsg.ConsumerMemberAssignmentTopic{Topic: tp.Topic})
		}
		out[i].Partitions = append(out[i].Partitions, tp.Partition)
	}
	return out
}
