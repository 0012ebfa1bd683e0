package abi

import (
	"math"
	"testing"
)

func TestOffsetAgainst(t *testing.T) {
	m := &Member{TaskEndOffsets: []TaskOffset{{Task: 1, Offset: 1000}, {Task: 2, Offset: math.MaxInt64}, {Task: 3, Offset: -1}, {Task: 5, Offset: 300}}}
	for _, c := range []struct {
		name     string
		task     int32
		off, end int64
		want     int64
	}{
		{"own end: end − own lag", 1, 950, 5000, 4950},
		{"at its own end: lag 0", 1, 1000, 5000, 5000},
		{"one past its own end (a position): lag 0", 1, 1001, 5000, 5000},
		{"own end MaxInt64 (unknown): as reported", 2, 950, 5000, 950},
		{"negative own end: as reported", 3, 950, 5000, 950},
		{"no own end: as reported", 4, 950, 5000, 950},
		{"MaxInt64 offset (not restoring yet): as reported", 1, math.MaxInt64, 5000, math.MaxInt64},
		{"negative offset: as reported", 1, -1, 5000, -1},
		{"last entry found", 5, 100, 300, 100},
	} {
		if got := m.OffsetAgainst(c.task, c.off, c.end); got != c.want {
			t.Errorf("%s: OffsetAgainst(%d, %d, %d) = %d, want %d", c.name, c.task, c.off, c.end, got, c.want)
		}
	}
}
