package interop

import (
	"os/exec"
	"testing"

	"github.com/coordhost/coordhost/internal/testtool"
)

// TestFleetStopAllKeepsEveryLog: after stopAll every stopped instance is
// in all(), so later log scans (sim-validate's task runs, the lost-task
// checks) read each one. The parallel stops used to append to the list
// of stopped instances concurrently and could lose some (under -race: a
// reported data race). No Kafka: it runs without COORDHOST_INTEROP.
func TestFleetStopAllKeepsEveryLog(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		testtool.Missing(t, "sleep: "+err.Error())
	}
	f := &fleet{t: t, logDir: t.TempDir()}
	for range 16 {
		f.procs = append(f.procs, startProc(t, "sleeper", f.logDir, sleep, "30"))
	}
	want := f.all()
	if err := f.stopAll(); err != nil {
		t.Fatal(err)
	}
	got := map[*proc]bool{}
	for _, p := range f.all() {
		got[p] = true
	}
	for _, p := range want {
		if !got[p] || !p.exited() {
			t.Fatalf("after stopAll %d of %d instances listed (%s listed %v, exited %v)", len(got), len(want), p.log, got[p], p.exited())
		}
	}
}
