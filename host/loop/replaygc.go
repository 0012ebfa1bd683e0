package loop

import (
	"os"
	"runtime/debug"
)

// replayGCPercent is the collector's target percentage while a start
// replays the store: replay allocates the groups it keeps and much it
// drops at once (decoded records), and with the default 100 the
// collector runs several times over a heap that is mostly live.
const replayGCPercent = 400

// replayGC raises the collector's target percentage to replayGCPercent
// for the replay and returns the function that puts the previous one
// back. It changes nothing unless the process runs at Go's default (no
// GOGC in the environment, the percentage 100): an operator who set
// GOGC, or a program that set its own percentage, keeps it. The memory
// limit (GOMEMLIMIT), when set, still holds.
func replayGC() (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	return raiseGC()
}

// raiseGC is replayGC's change of a percentage of 100.
func raiseGC() (restore func()) {
	prev := debug.SetGCPercent(replayGCPercent)
	if prev != 100 {
		debug.SetGCPercent(prev)
		return func() {}
	}
	return func() { debug.SetGCPercent(prev) }
}
