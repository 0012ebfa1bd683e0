package abi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrTruncated reports a message that ends before its last field.
var ErrTruncated = errors.New("abi: message truncated")

// DecodeError describes why a message could not be decoded: the field being
// read and the byte offset where decoding stopped.
type DecodeError struct {
	Field  string
	Offset int
	Err    error
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("abi: decode %s at byte %d: %v", e.Field, e.Offset, e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// reader decodes the primitives of SPEC.md section 4 with a sticky error:
// after the first failure every read returns zero values.
type reader struct {
	b   []byte
	off int
	err error
	// slab and offSlab back the task sets and offset lists of a message:
	// a few geometrically growing chunks instead of one allocation per set
	// (allocation is what costs most inside a Go guest).
	slab    []int32
	offSlab []TaskOffset
	chunk   int
	// usedTasks/usedOffsets count elements taken; grown* are set when a
	// slab ran out, to the total a Decoder should provide next time.
	usedTasks, usedOffsets   int
	grownTasks, grownOffsets int
	// text is the message as one string, made on the first string read:
	// every decoded name is a substring of it, so a message costs one
	// string allocation, not one per name.
	text string
}

// take returns n int32s of the slab, full-capacity-limited so appends by a
// caller never overwrite the next set.
func (r *reader) take(n int) []int32 {
	r.usedTasks += n
	if len(r.slab) < n {
		r.slab = make([]int32, max(n, r.nextChunk()))
		r.grownTasks = max(r.grownTasks, r.usedTasks+r.remaining())
	}
	s := r.slab[:0:n]
	r.slab = r.slab[n:]
	return s
}

// nextChunk doubles the chunk size from 256 elements, never beyond what the
// rest of the message could hold (one element per byte).
func (r *reader) nextChunk() int {
	r.chunk = min(max(2*r.chunk, 256), r.remaining())
	return r.chunk
}

func (r *reader) takeOffsets(n int) []TaskOffset {
	r.usedOffsets += n
	if len(r.offSlab) < n {
		r.offSlab = make([]TaskOffset, max(n, r.nextChunk()/2))
		r.grownOffsets = max(r.grownOffsets, r.usedOffsets+r.remaining()/2)
	}
	s := r.offSlab[:0:n]
	r.offSlab = r.offSlab[n:]
	return s
}

func (r *reader) fail(field string, err error) {
	if r.err == nil {
		r.err = &DecodeError{Field: field, Offset: r.off, Err: err}
	}
}

func (r *reader) remaining() int { return len(r.b) - r.off }

func (r *reader) u8(field string) byte {
	if r.err != nil {
		return 0
	}
	if r.off >= len(r.b) {
		r.fail(field, ErrTruncated)
		return 0
	}
	v := r.b[r.off]
	r.off++
	return v
}

func (r *reader) u64(field string) uint64 {
	if r.err != nil {
		return 0
	}
	if r.remaining() < 8 {
		r.fail(field, ErrTruncated)
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b[r.off:])
	r.off += 8
	return v
}

func (r *reader) uvarint(field string) uint64 {
	if r.err != nil {
		return 0
	}
	// Fast paths: most values (gaps, counts, indices, offsets of a few
	// thousand) fit one or two bytes.
	if r.off+1 < len(r.b) {
		b0 := r.b[r.off]
		if b0 < 0x80 {
			r.off++
			return uint64(b0)
		}
		if b1 := r.b[r.off+1]; b1 < 0x80 {
			r.off += 2
			return uint64(b0&0x7f) | uint64(b1)<<7
		}
	}
	v, n := binary.Uvarint(r.b[r.off:])
	switch {
	case n == 0:
		r.fail(field, ErrTruncated)
		return 0
	case n < 0:
		r.fail(field, errors.New("uvarint overflows 64 bits"))
		return 0
	}
	r.off += n
	return v
}

// int32 reads a uvarint that must fit a non-negative int32 and be <= max.
func (r *reader) int32(field string, max int64) int32 {
	v := r.uvarint(field)
	if r.err == nil && v > uint64(max) {
		r.fail(field, fmt.Errorf("value %d exceeds limit %d", v, max))
		return 0
	}
	return int32(v)
}

func (r *reader) varint(field string) int64 {
	u := r.uvarint(field)
	return int64(u>>1) ^ -int64(u&1)
}

// count reads an element count: each element needs at least minBytes bytes,
// so a count larger than the rest of the message is rejected before any
// allocation.
// shortCount reads a count of one byte (< 128, below every count limit)
// that fits the rest of the message; ok is false, with nothing read, for
// anything else, which count then reads and checks. It inlines: lists are
// mostly short, and a Go wasm guest pays for every call.
func (r *reader) shortCount(minBytes int) (n int, ok bool) {
	off := r.off
	if r.err != nil || off >= len(r.b) {
		return 0, false
	}
	c := int(r.b[off])
	if c >= 0x80 || c*minBytes > len(r.b)-off-1 {
		return 0, false
	}
	r.off = off + 1
	return c, true
}

func (r *reader) count(field string, max int64, minBytes int) int {
	n := r.int32(field, max)
	if r.err == nil && int64(n)*int64(minBytes) > int64(r.remaining()) {
		r.fail(field, fmt.Errorf("count %d exceeds the %d bytes left", n, r.remaining()))
		return 0
	}
	return int(n)
}

func (r *reader) string(field string) string {
	n := r.count(field, MaxString, 1)
	if r.err != nil {
		return ""
	}
	if n == 0 {
		return ""
	}
	if r.text == "" {
		r.text = string(r.b)
	}
	s := r.text[r.off : r.off+n]
	r.off += n
	return s
}

func (r *reader) strings(field string, max int64, ascending bool) []string {
	return r.stringsInto(nil, field, max, ascending)
}

// stringsInto is strings reusing dst's memory when it is large enough.
func (r *reader) stringsInto(dst []string, field string, max int64, ascending bool) []string {
	n := r.count(field, max, 1)
	if n == 0 {
		return nil
	}
	out := dst[:0]
	if cap(out) < n {
		out = make([]string, n)
	}
	out = out[:n]
	for i := range out {
		out[i] = r.string(field)
		if ascending && i > 0 && r.err == nil && out[i] <= out[i-1] {
			r.fail(field, fmt.Errorf("entry %q not strictly after %q", out[i], out[i-1]))
		}
	}
	return out
}

func (r *reader) pairs(field string) []KV {
	n, ok := r.shortCount(2)
	if !ok {
		n = r.count(field, MaxString, 2)
	}
	if n == 0 {
		return nil
	}
	out := make([]KV, n)
	for i := range out {
		out[i].Key = r.string(field)
		out[i].Value = r.string(field)
		if i > 0 && r.err == nil && out[i].Key <= out[i-1].Key {
			r.fail(field, fmt.Errorf("key %q not strictly after %q", out[i].Key, out[i-1].Key))
		}
	}
	return out
}

// taskset reads a gap-encoded, strictly ascending task set. The loop keeps
// the read position in a local and fills the set by index: this is the
// decoder's hottest loop, and a Go guest pays for every field access and
// append check (wasm code generation keeps little in registers).
func (r *reader) taskset(field string) []int32 {
	n, ok := r.shortCount(1)
	if !ok {
		n = r.count(field, MaxTasks, 1)
	}
	if n == 0 {
		return nil
	}
	dst := r.take(n)[:n]
	b, off := r.b, r.off
	next := int64(0)
	for i := range dst {
		var gap uint64
		if off < len(b) && b[off] < 0x80 { // inline one-byte gap
			gap = uint64(b[off])
			off++
		} else {
			r.off = off
			gap = r.uvarint(field)
			if r.err != nil {
				return dst[:i]
			}
			off = r.off
		}
		t := next + int64(gap)
		if gap >= MaxTasks || t >= MaxTasks { // gap first: a huge gap wraps int64
			r.off = off
			r.fail(field, fmt.Errorf("task index %d exceeds limit %d", uint64(next)+gap, MaxTasks))
			return dst[:i]
		}
		dst[i] = int32(t)
		next = t + 1
	}
	r.off = off
	return dst
}

// localUvarint decodes a uvarint of at most 9 bytes at b[off:] and returns
// it with the offset after it, or 0 for the offset when the caller must take
// the checked path (truncated, or 10 bytes long). It inlines, which the
// checked reader.uvarint does not.
func localUvarint(b []byte, off int) (v uint64, next int) {
	var shift uint
	for off < len(b) && shift < 63 {
		c := b[off]
		off++
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, off
		}
		shift += 7
	}
	return 0, 0
}

// taskoffsets reads a task-offset list; like taskset, its loop keeps the
// read position in a local and decodes one-byte values inline.
func (r *reader) taskoffsets(field string) []TaskOffset {
	n, ok := r.shortCount(2)
	if !ok {
		n = r.count(field, MaxTasks, 2)
	}
	if n == 0 {
		return nil
	}
	out := r.takeOffsets(n)[:n]
	b, off := r.b, r.off
	next := int64(0)
	for i := range out {
		gap, o := localUvarint(b, off)
		var z uint64
		if o > 0 {
			z, o = localUvarint(b, o)
		}
		if o > 0 {
			off = o
		} else {
			r.off = off
			gap = r.uvarint(field)
			z = r.uvarint(field)
			if r.err != nil {
				return out[:i]
			}
			off = r.off
		}
		t := next + int64(gap)
		if gap >= MaxTasks || t >= MaxTasks { // gap first: a huge gap wraps int64
			r.off = off
			r.fail(field, fmt.Errorf("task index %d exceeds limit %d", uint64(next)+gap, MaxTasks))
			return out[:i]
		}
		out[i] = TaskOffset{Task: int32(t), Offset: int64(z>>1) ^ -int64(z&1)}
		next = t + 1
	}
	r.off = off
	return out
}

// tags skips a tags section whose tags are all unknown.
func (r *reader) tags(field string) { r.tagsFunc(field, nil) }

// tagsFunc reads a tags section, handing each tag's payload to known (nil:
// none known) as a reader; a tag known reads (it returns true) must
// consume its payload exactly, the others are skipped.
func (r *reader) tagsFunc(field string, known func(tag uint64, payload *reader) bool) {
	n := r.count(field, math.MaxInt32, 2)
	last := int64(-1)
	for i := 0; i < n && r.err == nil; i++ {
		tag := r.uvarint(field)
		if r.err == nil && int64(tag) <= last {
			r.fail(field, fmt.Errorf("tag %d not strictly after %d", tag, last))
			return
		}
		last = int64(tag)
		size := r.count(field, math.MaxInt32, 1)
		if r.err != nil {
			return
		}
		if known != nil {
			payload := reader{b: r.b[r.off : r.off+size]}
			if known(tag, &payload) && payload.err == nil && payload.off != size {
				payload.fail(field, fmt.Errorf("tag %d: %d trailing bytes", tag, size-payload.off))
			}
			if payload.err != nil {
				r.err = payload.err
				return
			}
		}
		r.off += size
	}
}

func (r *reader) kind(want byte, field string) {
	if k := r.u8(field); r.err == nil && k != want {
		r.fail(field, fmt.Errorf("message kind %d, want %d", k, want))
	}
}

func (r *reader) end(field string) error {
	if r.err == nil && r.off != len(r.b) {
		r.fail(field, fmt.Errorf("%d trailing bytes", len(r.b)-r.off))
	}
	return r.err
}

// EncodeError reports a value that cannot be encoded (it breaks an ordering
// or limit rule of SPEC.md).
type EncodeError struct {
	Field string
	Err   error
}

func (e *EncodeError) Error() string { return fmt.Sprintf("abi: encode %s: %v", e.Field, e.Err) }

func (e *EncodeError) Unwrap() error { return e.Err }

// writer appends the primitives of SPEC.md section 4, keeping the first error.
type writer struct {
	b   []byte
	err error
}

func (w *writer) fail(field string, err error) {
	if w.err == nil {
		w.err = &EncodeError{Field: field, Err: err}
	}
}

func (w *writer) u8(v byte)        { w.b = append(w.b, v) }
func (w *writer) u64(v uint64)     { w.b = binary.LittleEndian.AppendUint64(w.b, v) }
func (w *writer) uvarint(v uint64) { w.b = appendUvar(w.b, v) }

// appendUvar appends v as a uvarint, inline for the one- and two-byte
// values that most gaps, counts, indices and small offsets are.
func appendUvar(b []byte, v uint64) []byte {
	switch {
	case v < 1<<7:
		return append(b, byte(v))
	case v < 1<<14:
		return append(b, byte(v)|0x80, byte(v>>7))
	}
	return binary.AppendUvarint(b, v)
}
func (w *writer) varint(v int64) { w.b = appendUvar(w.b, uint64(v<<1)^uint64(v>>63)) }
func (w *writer) noTags()        { w.b = append(w.b, 0) }
func (w *writer) count(n int)    { w.uvarint(uint64(n)) }
func (w *writer) nonneg(field string, v int32) {
	if v < 0 {
		w.fail(field, fmt.Errorf("negative value %d", v))
	}
	w.uvarint(uint64(uint32(v)))
}

func (w *writer) string(field, s string) {
	if len(s) > MaxString {
		w.fail(field, fmt.Errorf("string of %d bytes exceeds limit %d", len(s), MaxString))
	}
	w.count(len(s))
	w.b = append(w.b, s...)
}

func (w *writer) strings(field string, ss []string, ascending bool) {
	w.count(len(ss))
	for i, s := range ss {
		if ascending && i > 0 && s <= ss[i-1] {
			w.fail(field, fmt.Errorf("entry %q not strictly after %q", s, ss[i-1]))
		}
		w.string(field, s)
	}
}

func (w *writer) pairs(field string, kvs []KV) {
	w.count(len(kvs))
	for i, kv := range kvs {
		if i > 0 && kv.Key <= kvs[i-1].Key {
			w.fail(field, fmt.Errorf("key %q not strictly after %q", kv.Key, kvs[i-1].Key))
		}
		w.string(field, kv.Key)
		w.string(field, kv.Value)
	}
}

func (w *writer) taskset(field string, ts []int32) {
	w.count(len(ts))
	b, next := w.b, int32(0)
	for _, t := range ts {
		if t < next {
			w.b = b
			w.fail(field, fmt.Errorf("task %d out of order or repeated (sets must be strictly ascending)", t))
			return
		}
		b = appendUvar(b, uint64(t-next))
		next = t + 1
	}
	w.b = b
}

func (w *writer) taskoffsets(field string, offs []TaskOffset) {
	w.count(len(offs))
	// The buffer and position live in locals: storing w.b per element
	// costs a write barrier check each time.
	b, next := w.b, int32(0)
	for _, o := range offs {
		if o.Task < next {
			w.b = b
			w.fail(field, fmt.Errorf("task %d out of order or repeated", o.Task))
			return
		}
		b = appendUvar(b, uint64(o.Task-next))
		b = appendUvar(b, uint64(o.Offset<<1)^uint64(o.Offset>>63))
		next = o.Task + 1
	}
	w.b = b
}
