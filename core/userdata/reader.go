package userdata

import (
	"encoding/binary"
	"fmt"
)

// reader is a big-endian cursor over untrusted bytes. The first failure is
// sticky: later reads return zero values and err keeps the first message.
type reader struct {
	b    []byte
	off  int
	what string // the structure being decoded, for error messages
	err  error
}

func newReader(b []byte, what string) *reader { return &reader{b: b, what: what} }

func (r *reader) failf(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s: %s (at byte %d of %d)", ErrMalformed, r.what,
			fmt.Sprintf(format, args...), r.off, len(r.b))
	}
}

func (r *reader) remaining() int { return len(r.b) - r.off }

// take returns the next n bytes, or nil after recording a truncation.
func (r *reader) take(n int, field string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > r.remaining() {
		r.failf("%s: need %d bytes, %d left", field, n, r.remaining())
		return nil
	}
	s := r.b[r.off : r.off+n]
	r.off += n
	return s
}

func (r *reader) int8(field string) int8 {
	if s := r.take(1, field); s != nil {
		return int8(s[0])
	}
	return 0
}

func (r *reader) int16(field string) int16 {
	if s := r.take(2, field); s != nil {
		return int16(binary.BigEndian.Uint16(s))
	}
	return 0
}

func (r *reader) int32(field string) int32 {
	if s := r.take(4, field); s != nil {
		return int32(binary.BigEndian.Uint32(s))
	}
	return 0
}

func (r *reader) int64(field string) int64 {
	if s := r.take(8, field); s != nil {
		return int64(binary.BigEndian.Uint64(s))
	}
	return 0
}

// count reads an int32 element count of a non-nullable array whose elements
// take at least minSize bytes each. A negative count (Java's null) or one
// that cannot fit in the remaining bytes is an error.
func (r *reader) count(field string, minSize int) int {
	n := r.int32(field + " count")
	if r.err != nil {
		return 0
	}
	if n < 0 {
		r.failf("%s: negative count %d (null is not allowed)", field, n)
		return 0
	}
	if int64(n)*int64(minSize) > int64(r.remaining()) {
		r.failf("%s: count %d does not fit in %d remaining bytes", field, n, r.remaining())
		return 0
	}
	return int(n)
}

// bytes32 reads non-nullable bytes with an int32 length (Kafka "bytes").
func (r *reader) bytes32(field string) []byte {
	n := r.int32(field + " length")
	if r.err != nil {
		return nil
	}
	if n < 0 {
		r.failf("%s: negative length %d (null is not allowed)", field, n)
		return nil
	}
	return r.take(int(n), field)
}

// nullableString16 reads a Kafka nullable string: int16 length, -1 is null.
// Any negative length reads as null, as in Kafka's generated readers.
func (r *reader) nullableString16(field string) *string {
	n := r.int16(field + " length")
	if r.err != nil || n < 0 {
		return nil
	}
	s := string(r.take(int(n), field))
	return &s
}

// javaUTF reads a java.io.DataInput.readUTF string: uint16 byte length and
// modified UTF-8.
func (r *reader) javaUTF(field string) string {
	n := r.int16(field + " length")
	raw := r.take(int(uint16(n)), field)
	if r.err != nil {
		return ""
	}
	s, err := decodeModifiedUTF8(raw)
	if err != nil {
		r.failf("%s: %v", field, err)
	}
	return s
}
