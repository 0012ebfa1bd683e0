// Package records holds Kafka's group-coordinator records as Go structs
// and their byte codec: the key and value of every record type coordhost
// writes to or reads from __consumer_offsets, encoded exactly as Kafka 4.4's
// generated classes encode them. It knows nothing of groups or of the
// Coordinator that applies the records (package core).
package records

import (
	"errors"
	"fmt"
	"sort"
)

// Record is one coordinator record, as Kafka writes it to __consumer_offsets:
// a typed key and a value, where a nil Value is a tombstone that deletes the
// key. Records are the only way live state changes: entry points build
// records and apply them through the same code path as replay.
type Record struct {
	Key   RecordKey
	Value RecordValue // nil: tombstone
}

// RecordKey is the key of a coordinator record. Its type is the record type
// (Kafka's coordinator-key "apiKey"), written as the key's int16 version
// prefix.
type RecordKey interface {
	// RecordType is the record type number (17 = StreamsGroupMetadata, ...).
	RecordType() int16
	// Group is the id of the group the record belongs to.
	Group() string
	// encodeKey appends the key struct (version 0, non-flexible).
	encodeKey(w *writer)
}

// RecordValue is the value of a coordinator record.
type RecordValue interface {
	// RecordType is the record type number the value belongs to.
	RecordType() int16
	// encodeValue appends the value struct at its version (always 0 today).
	encodeValue(w *writer)
}

// recordType is one entry of the record-type decoder table: how to decode
// a key and a value of the type. Each group kind registers its record
// types from its own file (streams.go registers 17 and 19–23, classic.go
// type 2, consumer.go 3–8 and 16), so adding a kind never edits a shared
// switch. Applying a record to a Coordinator is core's business (its own
// table, keyed by the same type numbers).
type recordType struct {
	name        string
	decodeKey   func(r *reader) RecordKey
	decodeValue func(r *reader) RecordValue
	// decodeValueAt, when set, decodes values of every version the type
	// has (classic GroupMetadata: 0-4) and rejects unknown versions; types
	// without it accept version 0 only.
	decodeValueAt func(r *reader, version int16) RecordValue
}

// versionedValue is implemented by record values written at a version
// other than 0 (classic GroupMetadata is written at version 3).
type versionedValue interface {
	valueVersion() int16
}

var recordTypes = map[int16]recordType{}

// typeTable holds recordTypes indexed by type: a record's decode looks
// its type up there, not in the map.
var typeTable [64]*recordType

// registerRecordType adds a record type to the decoder table. It is called
// from init functions; registering a type twice is a programming error.
func registerRecordType(t int16, rt recordType) {
	if _, dup := recordTypes[t]; dup {
		panic(fmt.Sprintf("records: record type %d registered twice", t))
	}
	if t < 0 || int(t) >= len(typeTable) {
		panic(fmt.Sprintf("records: record type %d outside the table", t))
	}
	recordTypes[t] = rt
	typeTable[t] = &rt
}

// lookupType returns record type t's decoders.
func lookupType(t int16) (*recordType, bool) {
	if t < 0 || int(t) >= len(typeTable) || typeTable[t] == nil {
		return nil, false
	}
	return typeTable[t], true
}

// RecordTypeName names a registered record type, or says it is unknown.
func RecordTypeName(t int16) string {
	if rt, ok := recordTypes[t]; ok {
		return rt.name
	}
	return fmt.Sprintf("unknown(%d)", t)
}

// RegisteredRecordTypes lists the record types the codec can decode, in
// ascending order.
func RegisteredRecordTypes() []int16 {
	out := make([]int16, 0, len(recordTypes))
	for t := range recordTypes {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// ErrUnknownRecordType is wrapped by DecodeRecord for a record type the
// codec does not know (and by core's apply for one it cannot apply).
// Kafka's loader logs and skips such records; a host may do the same after
// checking errors.Is(err, ErrUnknownRecordType).
var ErrUnknownRecordType = errors.New("unknown coordinator record type")

// EncodeRecord returns the key bytes and value bytes (nil for a tombstone)
// of rec in Kafka's __consumer_offsets format: key = int16 record type +
// key struct v0; value = int16 version 0 + flexible value struct.
func EncodeRecord(rec Record) (key, value []byte) {
	var kw writer
	kw.int16(rec.Key.RecordType())
	rec.Key.encodeKey(&kw)
	if rec.Value == nil {
		return kw.b, nil
	}
	var vw writer
	encodeValue(&vw, rec.Value)
	return kw.b, vw.b
}

// Encoder appends records' bytes, as EncodeRecord returns them, to a
// caller's buffer: a host that encodes many records into one buffer
// allocates once for them, not once or more a record. The zero value is
// ready; an Encoder is not safe for concurrent use.
type Encoder struct {
	w writer // reused: a writer handed to a record's methods escapes
}

// Append appends rec's key bytes and then its value bytes to dst and
// returns the extended buffer and the length of the key: the key is
// b[len(dst):len(dst)+keyLen], the value the rest (none for a tombstone,
// rec.Value == nil).
func (e *Encoder) Append(dst []byte, rec Record) (b []byte, keyLen int) {
	w := &e.w
	w.b = dst
	w.int16(rec.Key.RecordType())
	rec.Key.encodeKey(w)
	keyLen = len(w.b) - len(dst)
	if rec.Value != nil {
		encodeValue(w, rec.Value)
	}
	b, w.b = w.b, nil
	return b, keyLen
}

// encodeValue writes v's version and v.
func encodeValue(w *writer, v RecordValue) {
	version := int16(0)
	if vv, ok := v.(versionedValue); ok {
		version = vv.valueVersion()
	}
	w.int16(version)
	v.encodeValue(w)
}

// DecodeRecord parses key and value bytes (value nil or empty-and-nil for a
// tombstone) written by Kafka or by EncodeRecord. It never panics; malformed
// input yields an error naming the record type and the problem.
func DecodeRecord(key, value []byte) (Record, error) {
	rs := &[2]reader{{b: key}, {b: value}} // one allocation for both readers
	return decode(&rs[0], &rs[1], key, value)
}

// Decoder decodes records as DecodeRecord does, and lets records share the
// strings of the ids that repeat from one record to the next: the group id
// of consecutive records of a group, and the member ids within it (a log
// holds a group's records side by side, so a replay allocates each id
// about once). It also reuses its readers from record to record. The zero
// value is ready; a Decoder is not safe for concurrent use.
type Decoder struct {
	group   string            // group id of the last key
	members map[string]string // member ids seen since the group changed
	readers [2]reader         // key and value readers, reused
	slab    slabs             // where values' small arrays are cut from
}

// maxInternedMembers bounds the member ids a Decoder keeps for one group.
const maxInternedMembers = 1 << 12

// Decode is DecodeRecord, sharing repeated ids.
func (d *Decoder) Decode(key, value []byte) (Record, error) {
	kr, vr := &d.readers[0], &d.readers[1]
	*kr = reader{b: key, ids: d, sub: kr.sub}
	*vr = reader{b: value, sub: vr.sub, slab: &d.slab}
	rec, err := decode(kr, vr, key, value)
	for _, r := range []*reader{kr, vr} { // keep no reference to the caller's bytes
		for ; r != nil; r = r.sub {
			r.b = nil
		}
	}
	return rec, err
}

func decode(kr, vr *reader, key, value []byte) (Record, error) {
	t := kr.int16()
	if kr.err != nil {
		return Record{}, fmt.Errorf("record key: %w", kr.err)
	}
	rt, ok := lookupType(t)
	if !ok {
		return Record{}, fmt.Errorf("record type %d: %w", t, ErrUnknownRecordType)
	}
	k := rt.decodeKey(kr)
	if err := kr.done(); err != nil {
		return Record{}, fmt.Errorf("%s key: %w", rt.name, err)
	}
	rec := Record{Key: k}
	if value == nil {
		return rec, nil
	}
	var val RecordValue
	if v := vr.int16(); rt.decodeValueAt != nil {
		val = rt.decodeValueAt(vr, v)
	} else if vr.err == nil && v != 0 {
		return Record{}, fmt.Errorf("%s value: unsupported version %d", rt.name, v)
	} else {
		val = rt.decodeValue(vr)
	}
	if err := vr.done(); err != nil {
		return Record{}, fmt.Errorf("%s value: %w", rt.name, err)
	}
	rec.Value = val
	return rec, nil
}
