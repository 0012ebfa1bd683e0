package core

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/coordhost/coordhost/core/userdata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Classic members of a streams group (online migration, docs/MIGRATION.md).
// A classic Kafka Streams thread that joins — or was converted into — a
// streams group is a streamsMember whose classic field is set. The field is
// persisted as coordhost's tagged field 1000 of
// StreamsGroupMemberMetadataValue, modelled on Kafka's
// ConsumerGroupMemberMetadataValue tag 0 (ClassicMemberMetadata).

// classicMemberMetadataTag is the tag of the Classic field. Kafka numbers
// its tagged fields from 0 upwards; 1000 leaves room for hundreds of them.
const classicMemberMetadataTag = 1000

// streamProtocolName is the classic protocol name of Kafka Streams.
const streamProtocolName = "stream"

// ClassicMemberMetadata is what a classic member of a streams group keeps
// from its last JoinGroup: its own session timeout and the protocols it
// supports (name and ConsumerProtocol subscription bytes).
type ClassicMemberMetadata struct {
	SessionTimeoutMs   int32
	SupportedProtocols []ClassicProtocol
}

// ClassicProtocol is one JoinGroup protocol: its name and metadata.
type ClassicProtocol struct {
	Name     string
	Metadata []byte
}

func (a *ClassicMemberMetadata) equal(b *ClassicMemberMetadata) bool {
	if a == nil || b == nil {
		return a == b
	}
	if a.SessionTimeoutMs != b.SessionTimeoutMs || len(a.SupportedProtocols) != len(b.SupportedProtocols) {
		return false
	}
	for i, p := range a.SupportedProtocols {
		q := b.SupportedProtocols[i]
		if p.Name != q.Name || !bytes.Equal(p.Metadata, q.Metadata) {
			return false
		}
	}
	return true
}

// metadata returns the subscription bytes of the "stream" protocol.
func (a *ClassicMemberMetadata) metadata() []byte {
	for _, p := range a.SupportedProtocols {
		if p.Name == streamProtocolName {
			return p.Metadata
		}
	}
	return nil
}

// classicMemberTags encodes the Classic field as tagged field 1000 (a
// layout of coordhost's own): int32 session timeout, compact array of
// {compact string name, compact bytes metadata, empty tags}, empty tags.
func classicMemberTags(cm *ClassicMemberMetadata) []taggedField {
	if cm == nil {
		return nil
	}
	return []taggedField{encodeTag(classicMemberMetadataTag, func(w *writer) { writeClassicMember(w, cm) })}
}

// consumerClassicMemberTags encodes Kafka's ClassicMemberMetadata, tag 0
// of a consumer member record: a nullable struct, so its body starts with
// Kafka's presence byte (1) before the struct's fields.
func consumerClassicMemberTags(cm *ClassicMemberMetadata) []taggedField {
	if cm == nil {
		return nil
	}
	return []taggedField{encodeTag(0, func(w *writer) {
		w.int8(1)
		writeClassicMember(w, cm)
	})}
}

// writeClassicMember writes the fields of a ClassicMemberMetadata.
func writeClassicMember(w *writer, cm *ClassicMemberMetadata) {
	w.int32(cm.SessionTimeoutMs)
	w.uvarint(len(cm.SupportedProtocols) + 1)
	for _, p := range cm.SupportedProtocols {
		w.compactString(p.Name)
		w.uvarint(len(p.Metadata) + 1)
		w.b = append(w.b, p.Metadata...)
		w.tags()
	}
	w.tags()
}

// readClassicMemberTag decodes tag 1000 into v.Classic; other tags are
// skipped (a newer Kafka's fields).
func readClassicMemberTag(tag uint64, sub *reader, v *StreamsGroupMemberMetadataValue) bool {
	if tag != classicMemberMetadataTag {
		return false
	}
	v.Classic = readClassicMember(sub)
	return true
}

// readClassicMember decodes the body of a ClassicMemberMetadata tag.
func readClassicMember(sub *reader) *ClassicMemberMetadata {
	cm := &ClassicMemberMetadata{SessionTimeoutMs: sub.int32(), SupportedProtocols: []ClassicProtocol{}}
	sub.compactArray(func() {
		p := ClassicProtocol{Name: sub.compactString(), Metadata: sub.compactBytes()}
		if p.Metadata == nil {
			p.Metadata = []byte{}
		}
		sub.noTags()
		cm.SupportedProtocols = append(cm.SupportedProtocols, p)
	})
	sub.noTags()
	return cm
}

// sessionTimeoutOf is a member's session timeout: its own JoinGroup value
// for a classic member, the group's otherwise.
func (c *Coordinator) sessionTimeoutOf(g *streamsGroup, member string) int32 {
	if m := g.members[member]; m != nil && m.classic != nil {
		return m.classic.SessionTimeoutMs
	}
	return c.streamsConfig(g.id).SessionTimeoutMs
}

// classicSubscription is a classic Streams member's decoded JoinGroup
// metadata: the ConsumerProtocol subscription and its SubscriptionInfo.
type classicSubscription struct {
	consumer *kmsg.ConsumerMemberMetadata
	info     *userdata.SubscriptionInfo
}

// decodeClassicSubscription decodes the "stream" protocol metadata.
func decodeClassicSubscription(meta []byte) (*classicSubscription, error) {
	if meta == nil {
		return nil, fmt.Errorf("no %q protocol", streamProtocolName)
	}
	cs, err := userdata.DecodeSubscription(meta)
	if err != nil {
		return nil, err
	}
	info, err := userdata.DecodeSubscriptionInfo(cs.UserData)
	if err != nil {
		return nil, err
	}
	return &classicSubscription{consumer: cs, info: info}, nil
}

// processIDString is the KIP-1071 form of a classic process id.
func processIDString(p userdata.ProcessID) string {
	const hex = "0123456789abcdef"
	var b []byte
	for i, x := range p {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			b = append(b, '-')
		}
		b = append(b, hex[x>>4], hex[x&15])
	}
	return string(b)
}

// parseEndpoint splits a classic "host:port" user endpoint; "" is none.
func parseEndpoint(s string) (*Endpoint, error) {
	if s == "" {
		return nil, nil
	}
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return nil, fmt.Errorf("user endpoint %q: missing port", s)
	}
	host, port := strings.TrimSuffix(strings.TrimPrefix(s[:i], "["), "]"), s[i+1:]
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil, fmt.Errorf("user endpoint %q: bad port", s)
	}
	return &Endpoint{Host: host, Port: uint16(n)}, nil
}

// classicTaskID maps a classic TaskID to the streams protocol's.
func classicTaskID(t userdata.TaskID) TaskID {
	return TaskID{Subtopology: t.SubtopologyID(), Partition: t.Partition}
}
