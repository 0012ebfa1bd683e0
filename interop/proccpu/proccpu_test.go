package proccpu

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestStatusField(t *testing.T) {
	status := []byte("Name:\tx\nvoluntary_ctxt_switches:\t12\nnonvoluntary_ctxt_switches:\t3\n")
	if got := statusField(status, "voluntary_ctxt_switches:"); got != 12 {
		t.Errorf("voluntary = %d, want 12", got)
	}
	if got := statusField(status, "nonvoluntary_ctxt_switches:"); got != 3 {
		t.Errorf("nonvoluntary = %d, want 3", got)
	}
	if got := statusField(status, "missing:"); got != 0 {
		t.Errorf("missing = %d, want 0", got)
	}
	if got := statusField([]byte("voluntary_ctxt_switches:\t7"), "voluntary_ctxt_switches:"); got != 7 {
		t.Errorf("last line without a newline = %d, want 7", got)
	}
}

// A thread that sleeps twenty times switches out voluntarily at least
// twenty times, and the process's sum sees it.
func TestReadSwitchesCountsSleeps(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	before, ok := ReadSwitches(os.Getpid())
	if !ok {
		t.Fatal("ReadSwitches of this process: not read")
	}
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // the thread lives on: its counts stay in the sum
		for range 20 {
			time.Sleep(time.Millisecond)
		}
		close(done)
		select {} // keep the thread (and its counts) until the process ends
	}()
	<-done
	after, ok := ReadSwitches(os.Getpid())
	if !ok {
		t.Fatal("ReadSwitches of this process: not read the second time")
	}
	if d := after.Voluntary - before.Voluntary; d < 20 {
		t.Errorf("voluntary switches grew by %d over 20 sleeps, want at least 20", d)
	}
	if _, ok := ReadSwitches(0); ok {
		t.Error("ReadSwitches(0): ok, want not read")
	}
}
