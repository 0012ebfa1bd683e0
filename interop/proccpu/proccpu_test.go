package proccpu

import (
	"os"
	"runtime"
	"syscall"
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

// Work in user space raises the user time, work in the kernel (page
// faults of freshly mapped memory) the system time; pid 0 reads nothing.
func TestTimesSplitsUserAndSystem(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	pid := os.Getpid()
	grows := func(part func() float64, work func()) bool {
		from := part()
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
			work()
			if part()-from >= 0.05 {
				return true
			}
		}
		return false
	}
	user := func() float64 { u, _ := Times(pid); return u }
	system := func() float64 { _, s := Times(pid); return s }
	x := 1
	if !grows(user, func() {
		for i := range 10_000_000 {
			x = x*31 + i
		}
	}) {
		t.Errorf("user time did not grow by 0.05 s over a busy loop (%d)", x)
	}
	if !grows(system, func() {
		m, err := syscall.Mmap(-1, 0, 16<<20, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(m); i += os.Getpagesize() {
			m[i] = 1
		}
		syscall.Munmap(m)
	}) {
		t.Error("system time did not grow by 0.05 s over page faults of fresh memory")
	}
	if u, s := Times(0); u != 0 || s != 0 {
		t.Errorf("Times(0) = %v, %v, want 0, 0", u, s)
	}
	if u, s := Times(pid); Seconds(pid) < u+s-0.02 {
		t.Errorf("Seconds = %v, below user %v + system %v read before it", Seconds(pid), u, s)
	}
}
