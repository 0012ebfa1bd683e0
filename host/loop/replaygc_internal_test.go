package loop

import (
	"runtime/debug"
	"testing"
)

// gcPercent reads the collector's target percentage.
func gcPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}

// TestReplayGCRestores: the replay's percentage holds until restore and
// the previous one after it; a process's own higher percentage, or the
// collector turned off, is left alone.
func TestReplayGCRestores(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, c := range []struct{ before, during int }{{100, replayGCPercent}, {50, replayGCPercent}, {800, 800}, {-1, -1}} {
		debug.SetGCPercent(c.before)
		restore := replayGC()
		during := gcPercent()
		restore()
		if after := gcPercent(); during != c.during || after != c.before {
			t.Errorf("GOGC %d: %d during the replay, %d after; want %d, %d", c.before, during, after, c.during, c.before)
		}
	}
}
