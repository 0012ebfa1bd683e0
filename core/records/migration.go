package records

import "bytes"

// Coordhost's extensions of Kafka's records for online migration
// (docs/MIGRATION.md): the classic member of a streams group, persisted as
// tagged field 1000 of StreamsGroupMemberMetadataValue and modelled on
// Kafka's ConsumerGroupMemberMetadataValue tag 0 (ClassicMemberMetadata),
// which is also decoded here; and the member epoch a classic member had in
// the streams group its classic group was converted from (tagged field
// 1000 of a GroupMetadata v4 member).

// classicMemberMetadataTag is the tag of the Classic field. Kafka numbers
// its tagged fields from 0 upwards; 1000 leaves room for hundreds of them.
const classicMemberMetadataTag = 1000

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

// Equal reports whether a and b hold the same session timeout and
// protocols (nil equals only nil).
func (a *ClassicMemberMetadata) Equal(b *ClassicMemberMetadata) bool {
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

// ProtocolMetadata returns the subscription bytes of the named protocol,
// nil when the member does not support it.
func (a *ClassicMemberMetadata) ProtocolMetadata(name string) []byte {
	for _, p := range a.SupportedProtocols {
		if p.Name == name {
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

// migrationEpochTags encodes GroupMetadataMember.MigrationEpoch as tagged
// field 1000 (an int32).
func migrationEpochTags(e *int32) []taggedField {
	if e == nil {
		return nil
	}
	return []taggedField{encodeTag(classicMemberMetadataTag, func(w *writer) { w.int32(*e) })}
}

// readMigrationEpochTag decodes tag 1000 of a GroupMetadata member; other
// tags are skipped.
func readMigrationEpochTag(tag uint64, sub *reader, m *GroupMetadataMember) bool {
	if tag != classicMemberMetadataTag {
		return false
	}
	e := sub.int32()
	m.MigrationEpoch = &e
	return true
}

// Supports reports whether the member supports the named protocol.
func (a *ClassicMemberMetadata) Supports(name string) bool {
	for _, p := range a.SupportedProtocols {
		if p.Name == name {
			return true
		}
	}
	return false
}
