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

// TestReplayGCRestores: from Go's default 100 the replay runs at
// replayGCPercent until restore and at 100 after it; any other
// percentage (a program's own, or the collector off) is left alone, and
// so is every percentage when GOGC is in the environment.
func TestReplayGCRestores(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	check := func(env bool, before, during int) {
		t.Helper()
		debug.SetGCPercent(before)
		raise := raiseGC
		if env {
			raise = replayGC
		}
		restore := raise()
		got := gcPercent()
		restore()
		if after := gcPercent(); got != during || after != before {
			t.Errorf("GOGC in the environment %v, percentage %d: %d during the replay, %d after; want %d, %d", env, before, got, after, during, before)
		}
	}
	for _, c := range []struct{ before, during int }{{100, replayGCPercent}, {50, 50}, {800, 800}, {-1, -1}} {
		check(false, c.before, c.during)
	}
	t.Setenv("GOGC", "100")
	check(true, 100, 100)
}
