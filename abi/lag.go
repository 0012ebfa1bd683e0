package abi

import "math"

// OffsetAgainst is member m's offset off for task t as seen against the
// task's end offset end (the largest over members, SPEC.md 5.1): where m
// reported its own end offset e for t (its TaskEndOffsets entry, sent with
// its offsets), off is measured against e — lag e − off, 0 at or beyond e
// (a position one past the last offset) — and returned as end − that lag,
// so end − result is m's own lag; otherwise, and for a negative or
// math.MaxInt64 offset (a Kafka Streams 4.4 client's "not restoring yet"),
// off itself. An own end offset that is negative or math.MaxInt64
// ("unknown") counts as none. end must be at least e (it is the largest).
func (m *Member) OffsetAgainst(t int32, off, end int64) int64 {
	es := m.TaskEndOffsets
	lo, hi := 0, len(es) // binary search: TaskEndOffsets is ascending by task
	for lo < hi {
		if mid := int(uint(lo+hi) >> 1); es[mid].Task < t {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if off < 0 || off == math.MaxInt64 || lo == len(es) || es[lo].Task != t {
		return off
	}
	if e := es[lo].Offset; e >= 0 && e != math.MaxInt64 {
		return end - max(e-off, 0)
	}
	return off
}
