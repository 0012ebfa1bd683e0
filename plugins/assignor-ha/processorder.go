package ha

import "slices"

// Kafka Streams keys its clients by ProcessId, a wrapper of java.util.UUID
// whose compareTo is UUID.compareTo: a signed comparison of the most
// significant 64 bits, then of the least significant. Its
// HighAvailabilityTaskAssignor walks them in that order (a TreeMap and a
// TreeSet of ProcessId), which is not the order of the ids as strings: a
// UUID whose first hex digit is 8 to f is negative there and comes before
// one starting with 0 to 7. The request lists process ids in string order
// (abi/SPEC.md), so the assignor sorts its clients itself.

// processLess orders process ids as Kafka Streams orders its clients:
// UUIDs by UUID.compareTo; an id that is not a UUID in its canonical form
// (never one a Kafka Streams client sends) after every UUID, in string
// order among themselves.
func processLess(a, b string) bool {
	am, al, aok := uuidHalves(a)
	bm, bl, bok := uuidHalves(b)
	switch {
	case aok != bok:
		return aok
	case !aok:
		return a < b
	case am != bm:
		return am < bm
	}
	return al < bl
}

// uuidHalves reads a UUID in its canonical form (8-4-4-4-12 hex digits,
// either case) as Java's UUID holds it: its most and least significant 64
// bits, signed.
func uuidHalves(s string) (msb, lsb int64, ok bool) {
	if len(s) != 36 {
		return 0, 0, false
	}
	var v [2]uint64
	digits := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if i == 8 || i == 13 || i == 18 || i == 23 {
			if c != '-' {
				return 0, 0, false
			}
			continue
		}
		d, isHex := hexDigit(c)
		if !isHex {
			return 0, 0, false
		}
		half := digits / 16
		v[half] = v[half]<<4 | uint64(d)
		digits++
	}
	return int64(v[0]), int64(v[1]), true
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// SortProcesses returns ids sorted as the assignor orders its clients.
func SortProcesses(ids []string) []string {
	out := slices.Clone(ids)
	slices.SortFunc(out, func(a, b string) int {
		switch {
		case processLess(a, b):
			return -1
		case processLess(b, a):
			return 1
		}
		return 0
	})
	return out
}
