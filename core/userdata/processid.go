package userdata

import (
	"cmp"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"strings"
)

// ProcessID is a Kafka Streams process id: a UUID, carried in
// SubscriptionInfo as 16 bytes (most significant 64 bits first).
type ProcessID [16]byte

// String returns the canonical UUID text form, as java.util.UUID.toString
// and the KIP-1071 (streams protocol) ProcessId field use.
func (p ProcessID) String() string {
	h := hex.EncodeToString(p[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// ParseProcessID parses the canonical UUID text form.
func ParseProcessID(s string) (ProcessID, error) {
	var p ProcessID
	parts := strings.Split(s, "-")
	if len(s) != 36 || len(parts) != 5 || len(parts[0]) != 8 || len(parts[1]) != 4 ||
		len(parts[2]) != 4 || len(parts[3]) != 4 || len(parts[4]) != 12 {
		return p, fmt.Errorf("process id %q is not a canonical UUID", s)
	}
	if _, err := hex.Decode(p[:], []byte(strings.Join(parts, ""))); err != nil {
		return p, fmt.Errorf("process id %q: %v", s, err)
	}
	return p, nil
}

// Compare orders process ids as java.util.UUID.compareTo does: signed
// comparison of the most significant 64 bits, then of the least significant
// 64 bits. Kafka Streams' assignors iterate clients in this order, which is
// not the unsigned byte order.
func (p ProcessID) Compare(o ProcessID) int {
	if c := cmp.Compare(int64(binary.BigEndian.Uint64(p[:8])), int64(binary.BigEndian.Uint64(o[:8]))); c != 0 {
		return c
	}
	return cmp.Compare(int64(binary.BigEndian.Uint64(p[8:])), int64(binary.BigEndian.Uint64(o[8:])))
}
