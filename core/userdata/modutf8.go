package userdata

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxJavaUTFLen is the largest encoded length java.io.DataOutput.writeUTF
// accepts (its length prefix is an unsigned 16-bit integer).
const maxJavaUTFLen = 65535

// appendJavaUTF appends s as java.io.DataOutput.writeUTF does: a uint16
// length, then "modified UTF-8" of its UTF-16 code units (NUL as C0 80,
// supplementary characters as two 3-byte surrogates).
func appendJavaUTF(dst []byte, s, field string) ([]byte, error) {
	if !utf8.ValidString(s) {
		return dst, unencodable("%s %q is not valid UTF-8", field, s)
	}
	units := utf16Units(s)
	n := 0
	for _, c := range units {
		n += modifiedUTF8Len(c)
	}
	if n > maxJavaUTFLen {
		return dst, unencodable("%s is %d bytes in modified UTF-8, more than writeUTF's %d", field, n, maxJavaUTFLen)
	}
	dst = binary.BigEndian.AppendUint16(dst, uint16(n))
	for _, c := range units {
		switch modifiedUTF8Len(c) {
		case 1:
			dst = append(dst, byte(c))
		case 2:
			dst = append(dst, 0xC0|byte(c>>6), 0x80|byte(c&0x3F))
		default:
			dst = append(dst, 0xE0|byte(c>>12), 0x80|byte((c>>6)&0x3F), 0x80|byte(c&0x3F))
		}
	}
	return dst, nil
}

func modifiedUTF8Len(c uint16) int {
	switch {
	case c >= 0x0001 && c <= 0x007F:
		return 1
	case c <= 0x07FF:
		return 2
	default:
		return 3
	}
}

var errLoneSurrogate = errors.New("unpaired UTF-16 surrogate (not representable as a Go string)")

// decodeModifiedUTF8 decodes what java.io.DataInput.readUTF accepts, except
// unpaired surrogates, which Java keeps in a String but UTF-8 cannot carry.
func decodeModifiedUTF8(b []byte) (string, error) {
	units := make([]uint16, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		switch {
		case c < 0x80:
			units = append(units, uint16(c))
			i++
		case c>>5 == 0x6: // 110xxxxx 10xxxxxx
			if i+1 >= len(b) || b[i+1]>>6 != 0x2 {
				return "", fmt.Errorf("malformed modified UTF-8 around byte %d", i)
			}
			units = append(units, uint16(c&0x1F)<<6|uint16(b[i+1]&0x3F))
			i += 2
		case c>>4 == 0xE: // 1110xxxx 10xxxxxx 10xxxxxx
			if i+2 >= len(b) || b[i+1]>>6 != 0x2 || b[i+2]>>6 != 0x2 {
				return "", fmt.Errorf("malformed modified UTF-8 around byte %d", i)
			}
			units = append(units, uint16(c&0x0F)<<12|uint16(b[i+1]&0x3F)<<6|uint16(b[i+2]&0x3F))
			i += 3
		default:
			return "", fmt.Errorf("malformed modified UTF-8 around byte %d", i)
		}
	}
	return utf16String(units)
}

// utf16String converts UTF-16 code units to a Go string, refusing unpaired
// surrogates.
func utf16String(units []uint16) (string, error) {
	for i := 0; i < len(units); i++ {
		c := units[i]
		switch {
		case utf16.IsSurrogate(rune(c)) && c < 0xDC00:
			if i+1 >= len(units) || units[i+1] < 0xDC00 || units[i+1] > 0xDFFF {
				return "", errLoneSurrogate
			}
			i++
		case utf16.IsSurrogate(rune(c)):
			return "", errLoneSurrogate
		}
	}
	return string(utf16.Decode(units)), nil
}

// javaCompare orders strings as java.lang.String.compareTo does: by UTF-16
// code units, which differs from Go's byte order for supplementary characters.
// Strings that are not valid UTF-8 and differ only in bytes that both decode
// to U+FFFD tie in UTF-16 order; their bytes break the tie, so that the order
// is total and a sort of distinct strings does not depend on their input
// order.
func javaCompare(a, b string) int {
	if !hasHighPlane(a) && !hasHighPlane(b) {
		return strings.Compare(a, b) // byte order = code point order = UTF-16 order here
	}
	ua, ub := utf16Units(a), utf16Units(b)
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return int(ua[i]) - int(ub[i])
		}
	}
	if d := len(ua) - len(ub); d != 0 {
		return d
	}
	return strings.Compare(a, b)
}

// hasHighPlane reports whether s may hold a character at or above U+E000,
// the only characters whose UTF-16 order differs from their UTF-8 order.
func hasHighPlane(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0xEE {
			return true
		}
	}
	return false
}

func utf16Units(s string) []uint16 { return utf16.Encode([]rune(s)) }
