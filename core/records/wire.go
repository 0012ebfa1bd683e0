package records

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
)

// This file holds the primitive readers and writers of Kafka's generated
// message encoding, enough for coordinator records: big-endian integers,
// classic (int16-length) strings for record keys, and the flexible "compact"
// encoding (uvarint length+1, tagged-field sections) for record values.

// errShort is returned when a record ends before a field does.
var errShort = errors.New("record truncated")

// reader decodes untrusted bytes; the first error sticks and every later read
// returns zero values, so decoders check r.err once at the end of a struct.
type reader struct {
	b    []byte
	err  error
	sub  *reader  // the reader tags hands to its callback, reused per field
	ids  *Decoder // keys: shares repeated group and member ids (nil: none)
	slab *slabs   // values: where arrays are cut from (nil: each its own)
}

// slabs are the backing arrays a Decoder cuts small decoded arrays from,
// one allocation for many arrays. Each array is a part of its own,
// capacity-limited (an append to it copies it), and a part is never
// handed out twice: a full slab is replaced by a new one, and lives as
// long as any of its arrays does.
type slabs struct {
	int32s []int32
	tasks  []TaskIDs
	tps    []TopicPartitions
	chars  strings.Builder // strings' bytes: written once, never changed
}

// textSlabLen is the size of a new slab of string bytes; a string of
// more than an eighth of it gets its own.
const textSlabLen = 4096

// text returns b as a string: cut from the text slab when there is one
// and b is short (a Builder's String shares its bytes, and the bytes it
// holds are never written again), else a copy of its own.
func (s *slabs) text(b []byte) string {
	if s == nil || len(b) == 0 || len(b) > textSlabLen/8 {
		return string(b)
	}
	if s.chars.Cap()-s.chars.Len() < len(b) {
		s.chars = strings.Builder{}
		s.chars.Grow(textSlabLen)
	}
	start := s.chars.Len()
	s.chars.Write(b)
	return s.chars.String()[start:]
}

// slabLen is the element count of a new slab; an array of more than an
// eighth of it gets its own.
const slabLen = 512

// cut returns a zeroed array of n elements, from *slab when there is
// one and n is small.
func cut[T any](slab *[]T, n int) []T {
	if slab == nil || n == 0 || n > slabLen/8 {
		return make([]T, n) // n == 0: an empty array, not nil; no allocation
	}
	if len(*slab)+n > cap(*slab) {
		*slab = make([]T, 0, slabLen)
	}
	start := len(*slab)
	*slab = (*slab)[:start+n]
	return (*slab)[start : start+n : start+n]
}

// int32Slab, taskSlab and tpSlab are r's slabs (nil: none).
func (r *reader) int32Slab() *[]int32 {
	if r.slab == nil {
		return nil
	}
	return &r.slab.int32s
}

func (r *reader) taskSlab() *[]TaskIDs {
	if r.slab == nil {
		return nil
	}
	return &r.slab.tasks
}

func (r *reader) tpSlab() *[]TopicPartitions {
	if r.slab == nil {
		return nil
	}
	return &r.slab.tps
}

// maxPrealloc bounds the capacity a decoder reserves for an array from its
// claimed length: enough for the arrays records hold, never a large
// allocation on a lying length.
const maxPrealloc = 64

func (r *reader) fail(err error) {
	if r.err == nil {
		r.err = err
	}
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail(errShort)
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) int8() int8 {
	b := r.take(1)
	if b == nil {
		return 0
	}
	return int8(b[0])
}

func (r *reader) int16() int16 {
	b := r.take(2)
	if b == nil {
		return 0
	}
	return int16(binary.BigEndian.Uint16(b))
}

func (r *reader) uint16() uint16 { return uint16(r.int16()) }

func (r *reader) int32() int32 {
	b := r.take(4)
	if b == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(b))
}

func (r *reader) int64() int64 {
	b := r.take(8)
	if b == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > math.MaxInt32 {
		r.fail(errors.New("bad unsigned varint"))
		return 0
	}
	r.b = r.b[n:]
	return v
}

// classicString reads an int16-length string (non-flexible versions).
func (r *reader) classicString() string { return r.slab.text(r.classicStringBytes()) }

func (r *reader) classicStringBytes() []byte {
	n := r.int16()
	if n < 0 {
		r.fail(errors.New("null string in a non-nullable field"))
		return nil
	}
	return r.take(int(n))
}

// groupID reads a key's group id, a classic string, shared with the
// previous key's when equal.
func (r *reader) groupID() string { return r.keyID(false) }

// memberID reads a key's member id, a classic string, shared with an
// earlier key of the same group when equal. It follows groupID.
func (r *reader) memberID() string { return r.keyID(true) }

func (r *reader) keyID(member bool) string {
	d := r.ids
	if d == nil {
		return r.classicString()
	}
	b := r.classicStringBytes()
	switch {
	case r.err != nil:
		return ""
	case !member:
		if string(b) != d.group {
			d.group = d.slab.text(b)
			clear(d.members)
		}
		return d.group
	}
	if s, ok := d.members[string(b)]; ok {
		return s
	}
	s := d.slab.text(b)
	if d.members == nil {
		d.members = map[string]string{}
	}
	if len(d.members) < maxInternedMembers {
		d.members[s] = s
	}
	return s
}

// compactLen reads a compact length; -1 means null.
func (r *reader) compactLen() int {
	n := int(r.uvarint()) - 1
	if r.err == nil && n > len(r.b) {
		// Every element takes at least one byte: a longer claim is a lie.
		r.fail(fmt.Errorf("length %d exceeds the %d bytes left", n, len(r.b)))
		return -1
	}
	return n
}

func (r *reader) compactString() string {
	n := r.compactLen()
	if n < 0 {
		r.fail(errors.New("null string in a non-nullable field"))
		return ""
	}
	return r.slab.text(r.take(n))
}

func (r *reader) compactNullableString() *string {
	n := r.compactLen()
	if n < 0 {
		return nil
	}
	s := r.slab.text(r.take(n))
	return &s
}

// compactArray reads a compact array length and calls elem that many times.
// It returns false for a null array.
func (r *reader) compactArray(elem func()) bool {
	n := r.compactLen()
	if n < 0 {
		return false
	}
	for i := 0; i < n && r.err == nil; i++ {
		elem()
	}
	return true
}

func (r *reader) compactInt32s(nullable bool) []int32 {
	n := r.compactLen()
	if n < 0 {
		if !nullable {
			r.fail(errors.New("null array in a non-nullable field"))
		}
		return nil
	}
	if r.err == nil && n*4 > len(r.b) {
		r.fail(errShort)
		return nil
	}
	out := cut(r.int32Slab(), n)
	for i := range out {
		out[i] = r.int32()
	}
	return out
}

func (r *reader) compactStrings() []string {
	n := r.compactLen()
	if n < 0 {
		r.fail(errors.New("null array in a non-nullable field"))
		return []string{}
	}
	out := make([]string, 0, min(n, maxPrealloc))
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, r.compactString())
	}
	return out
}

func (r *reader) compactInt16s() []int16 {
	n := r.compactLen()
	if n < 0 {
		r.fail(errors.New("null array in a non-nullable field"))
		return nil
	}
	if r.err == nil && n*2 > len(r.b) {
		r.fail(errShort)
		return nil
	}
	out := make([]int16, n)
	for i := range out {
		out[i] = r.int16()
	}
	return out
}

// tags reads a tagged-field section, handing known tags to field (which must
// consume exactly the tag's bytes from the sub-reader it is given) and
// skipping unknown ones, as Kafka's generated readers do.
func (r *reader) tags(field func(tag uint64, sub *reader) bool) {
	n := r.uvarint()
	last := int64(-1)
	for i := uint64(0); i < n && r.err == nil; i++ {
		tag := r.uvarint()
		size := r.uvarint()
		data := r.take(int(size))
		if r.err != nil {
			return
		}
		if int64(tag) <= last {
			r.fail(fmt.Errorf("tagged field %d out of order", tag))
			return
		}
		last = int64(tag)
		if field == nil {
			continue
		}
		if r.sub == nil {
			r.sub = &reader{}
		}
		sub := r.sub
		*sub = reader{b: data, sub: sub.sub, slab: r.slab}
		if field(tag, sub) {
			if sub.err != nil {
				r.fail(fmt.Errorf("tagged field %d: %w", tag, sub.err))
			} else if len(sub.b) != 0 {
				r.fail(fmt.Errorf("tagged field %d: %d trailing bytes", tag, len(sub.b)))
			}
		}
	}
}

// noTags reads a tagged-field section of a struct that defines no tags.
func (r *reader) noTags() { r.tags(nil) }

// done reports the sticky error, or trailing garbage.
func (r *reader) done() error {
	if r.err != nil {
		return r.err
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%d trailing bytes", len(r.b))
	}
	return nil
}

// writer appends Kafka's encoding to a byte slice.
type writer struct{ b []byte }

func (w *writer) int8(v int8)     { w.b = append(w.b, byte(v)) }
func (w *writer) int16(v int16)   { w.b = binary.BigEndian.AppendUint16(w.b, uint16(v)) }
func (w *writer) uint16(v uint16) { w.b = binary.BigEndian.AppendUint16(w.b, v) }
func (w *writer) int32(v int32)   { w.b = binary.BigEndian.AppendUint32(w.b, uint32(v)) }
func (w *writer) int64(v int64)   { w.b = binary.BigEndian.AppendUint64(w.b, uint64(v)) }
func (w *writer) uvarint(v int)   { w.b = binary.AppendUvarint(w.b, uint64(v)) }

func (w *writer) classicString(s string) {
	w.int16(int16(len(s)))
	w.b = append(w.b, s...)
}

func (w *writer) compactString(s string) {
	w.uvarint(len(s) + 1)
	w.b = append(w.b, s...)
}

func (w *writer) compactNullableString(s *string) {
	if s == nil {
		w.uvarint(0)
		return
	}
	w.compactString(*s)
}

func (w *writer) compactInt32s(v []int32) {
	w.uvarint(len(v) + 1)
	for _, x := range v {
		w.int32(x)
	}
}

func (w *writer) compactInt16s(v []int16) {
	w.uvarint(len(v) + 1)
	for _, x := range v {
		w.int16(x)
	}
}

func (w *writer) compactStrings(v []string) {
	w.uvarint(len(v) + 1)
	for _, s := range v {
		w.compactString(s)
	}
}

// taggedField is one tag of a tagged-field section, already encoded.
type taggedField struct {
	tag  int
	data []byte
}

// tags writes a tagged-field section; fields must be in ascending tag order.
func (w *writer) tags(fields ...taggedField) {
	w.uvarint(len(fields))
	for _, f := range fields {
		w.uvarint(f.tag)
		w.uvarint(len(f.data))
		w.b = append(w.b, f.data...)
	}
}

// tag writes one field of a tagged-field section whose count was written:
// the tag, the length of the payload fn writes, and the payload, in
// place (no buffer of its own for the payload, as encodeTag's).
func (w *writer) tag(tag int, fn func(w *writer)) {
	w.uvarint(tag)
	at := len(w.b)
	fn(w)
	n := len(w.b) - at
	var l [binary.MaxVarintLen64]byte
	ll := binary.PutUvarint(l[:], uint64(n))
	w.b = append(w.b, l[:ll]...) // room for the length before the payload
	copy(w.b[at+ll:], w.b[at:at+n])
	copy(w.b[at:], l[:ll])
}

// tagInt32 writes a tagged field holding v (tag, as tag does).
func (w *writer) tagInt32(tag int, v int32) {
	w.uvarint(tag)
	w.uvarint(4)
	w.int32(v)
}

// tagInt64 writes a tagged field holding v (tag, as tag does).
func (w *writer) tagInt64(tag int, v int64) {
	w.uvarint(tag)
	w.uvarint(8)
	w.int64(v)
}

// encodeTag encodes one tagged field's payload with fn.
func encodeTag(tag int, fn func(w *writer)) taggedField {
	var w writer
	fn(&w)
	return taggedField{tag: tag, data: w.b}
}
