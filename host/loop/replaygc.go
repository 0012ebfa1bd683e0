package loop

import "runtime/debug"

// replayGCPercent is the collector's target percentage while a start
// replays the store: replay allocates the groups it keeps and much it
// drops at once (decoded records), and with the default 100 the
// collector runs several times over a heap that is mostly live.
const replayGCPercent = 400

// replayGC raises the collector's target percentage to replayGCPercent
// for the replay and returns the function that puts the previous one
// back. A process that set its own (GOGC above it, or off) keeps it.
// The memory limit (GOMEMLIMIT), when set, still holds.
func replayGC() (restore func()) {
	prev := debug.SetGCPercent(replayGCPercent)
	if prev < 0 || prev >= replayGCPercent {
		debug.SetGCPercent(prev)
		return func() {}
	}
	return func() { debug.SetGCPercent(prev) }
}
