package records

import (
	"errors"
	"fmt"
)

// Classic group record type 2 (GroupMetadata) with Kafka 4.4's schema
// (group-coordinator common/message/GroupMetadataKey.json and
// GroupMetadataValue.json). The key is version 2 (= the record type) and
// non-flexible. The value has versions 0-4 (4 is flexible); Kafka 4.4 writes
// version 3, and so do we. Every version decodes; re-encoding writes the
// version a value was decoded at, so Kafka's bytes round-trip exactly.

// RecGroupMetadata is the record type of classic group metadata.
const RecGroupMetadata int16 = 2

// GroupMetadataWriteVersion is the value version Kafka 4.4 writes
// (GroupCoordinatorRecordHelpers.newGroupMetadataRecord).
const GroupMetadataWriteVersion int16 = 3

func init() {
	registerRecordType(RecGroupMetadata, recordType{
		name:          "GroupMetadata",
		decodeKey:     func(r *reader) RecordKey { return GroupMetadataKey{GroupID: r.groupID()} },
		decodeValueAt: decodeGroupMetadataValue,
	})
}

// GroupMetadataKey is the key of record type 2.
type GroupMetadataKey struct{ GroupID string }

// GroupMetadataValue is the value of record type 2: one generation of a
// classic group.
type GroupMetadataValue struct {
	// Version is the value version (0-4) the value is written at.
	Version               int16
	ProtocolType          string
	Generation            int32
	Protocol              *string
	Leader                *string
	CurrentStateTimestamp int64 // v2+, default -1
	Members               []GroupMetadataMember
}

// GroupMetadataMember is one member of a GroupMetadataValue.
type GroupMetadataMember struct {
	MemberID         string
	GroupInstanceID  *string // v3+
	ClientID         string
	ClientHost       string
	RebalanceTimeout int32 // v1+, default -1
	SessionTimeout   int32
	Subscription     []byte
	Assignment       []byte
	// MigrationEpoch is coordhost's extension (v4+ tagged field 1000,
	// docs/MIGRATION.md): the member's last member epoch in the streams
	// group this classic group was converted from; nil when absent.
	MigrationEpoch *int32
}

// RecordType implements RecordKey.
func (GroupMetadataKey) RecordType() int16 { return RecGroupMetadata }

// Group implements RecordKey.
func (k GroupMetadataKey) Group() string { return k.GroupID }

func (k GroupMetadataKey) encodeKey(w *writer) { w.classicString(k.GroupID) }

// RecordType implements RecordValue.
func (GroupMetadataValue) RecordType() int16 { return RecGroupMetadata }

func (v GroupMetadataValue) valueVersion() int16 { return v.Version }

func (v GroupMetadataValue) encodeValue(w *writer) {
	flex := v.Version >= 4
	str := func(s string) {
		if flex {
			w.compactString(s)
		} else {
			w.classicString(s)
		}
	}
	nstr := func(s *string) {
		switch {
		case flex:
			w.compactNullableString(s)
		case s == nil:
			w.int16(-1)
		default:
			w.classicString(*s)
		}
	}
	bytes := func(b []byte) {
		if flex {
			w.uvarint(len(b) + 1)
		} else {
			w.int32(int32(len(b)))
		}
		w.b = append(w.b, b...)
	}
	str(v.ProtocolType)
	w.int32(v.Generation)
	nstr(v.Protocol)
	nstr(v.Leader)
	if v.Version >= 2 {
		w.int64(v.CurrentStateTimestamp)
	}
	if flex {
		w.uvarint(len(v.Members) + 1)
	} else {
		w.int32(int32(len(v.Members)))
	}
	for _, m := range v.Members {
		str(m.MemberID)
		if v.Version >= 3 {
			nstr(m.GroupInstanceID)
		}
		str(m.ClientID)
		str(m.ClientHost)
		if v.Version >= 1 {
			w.int32(m.RebalanceTimeout)
		}
		w.int32(m.SessionTimeout)
		bytes(m.Subscription)
		bytes(m.Assignment)
		if flex {
			w.tags(migrationEpochTags(m.MigrationEpoch)...)
		}
	}
	if flex {
		w.tags()
	}
}

// classicNullableString reads an int16-length string where -1 is null.
func (r *reader) classicNullableString() *string {
	n := r.int16()
	if n < 0 {
		if n != -1 {
			r.fail(fmt.Errorf("bad string length %d", n))
		}
		return nil
	}
	s := r.slab.text(r.take(int(n)))
	return &s
}

// classicBytes reads an int32-length byte array (non-nullable).
func (r *reader) classicBytes() []byte {
	n := r.int32()
	if n < 0 {
		r.fail(errors.New("null bytes in a non-nullable field"))
		return nil
	}
	return append([]byte{}, r.take(int(n))...)
}

func (r *reader) compactBytes() []byte {
	n := r.compactLen()
	if n < 0 {
		r.fail(errors.New("null bytes in a non-nullable field"))
		return nil
	}
	return append([]byte{}, r.take(n)...)
}

func decodeGroupMetadataValue(r *reader, version int16) RecordValue {
	if r.err == nil && (version < 0 || version > 4) {
		r.fail(fmt.Errorf("unsupported version %d", version))
		return GroupMetadataValue{}
	}
	flex := version >= 4
	str := func() string {
		if flex {
			return r.compactString()
		}
		return r.classicString()
	}
	nstr := func() *string {
		if flex {
			return r.compactNullableString()
		}
		return r.classicNullableString()
	}
	bytes := func() []byte {
		if flex {
			return r.compactBytes()
		}
		return r.classicBytes()
	}
	v := GroupMetadataValue{Version: version, CurrentStateTimestamp: -1}
	v.ProtocolType = str()
	v.Generation = r.int32()
	v.Protocol = nstr()
	v.Leader = nstr()
	if version >= 2 {
		v.CurrentStateTimestamp = r.int64()
	}
	n := 0
	if flex {
		n = r.compactLen()
	} else if n = int(r.int32()); r.err == nil && (n < 0 || n > len(r.b)) {
		r.fail(fmt.Errorf("bad member count %d", n))
	}
	if r.err == nil && n < 0 {
		r.fail(errors.New("null members array"))
	}
	if n > 0 && r.err == nil {
		v.Members = make([]GroupMetadataMember, 0, min(n, maxPrealloc))
	}
	for i := 0; i < n && r.err == nil; i++ {
		m := GroupMetadataMember{RebalanceTimeout: -1}
		m.MemberID = str()
		if version >= 3 {
			m.GroupInstanceID = nstr()
		}
		m.ClientID = str()
		m.ClientHost = str()
		if version >= 1 {
			m.RebalanceTimeout = r.int32()
		}
		m.SessionTimeout = r.int32()
		m.Subscription = bytes()
		m.Assignment = bytes()
		if flex {
			r.tags(func(tag uint64, sub *reader) bool { return readMigrationEpochTag(tag, sub, &m) })
		}
		v.Members = append(v.Members, m)
	}
	if flex {
		r.noTags()
	}
	return v
}
