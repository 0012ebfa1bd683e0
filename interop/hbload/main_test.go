package main

import (
	"math"
	"os"
	"testing"
	"time"
)

func TestPhaseRate(t *testing.T) {
	for _, c := range []struct {
		phase  string
		closed float64
		want   float64
		err    bool
	}{
		{"closed", 0, 0, false},
		{"rate=2000", 0, 2000, false},
		{"rate=0.8x", 5000, 4000, false},
		{"rate=0.8x", 0, 0, true}, // no closed phase before it
		{"rate=fast", 0, 0, true},
		{"rate=0", 0, 0, true},
		{"open", 0, 0, true},
	} {
		got, err := phaseRate(c.phase, c.closed)
		if (err != nil) != c.err || math.Abs(got-c.want) > 1e-9 {
			t.Errorf("phaseRate(%q, %v) = %v, %v; want %v, error %v", c.phase, c.closed, got, err, c.want, c.err)
		}
	}
}

// TestServerCPU reads this process's own /proc/<pid>/stat while it burns
// CPU: the figure must grow with the CPU used, as getrusage sees it.
func TestServerCPU(t *testing.T) {
	if serverCPU(0) != 0 {
		t.Error("pid 0 must read as no process")
	}
	pid := os.Getpid()
	s0, r0 := serverCPU(pid), selfCPU()
	deadline := time.Now().Add(30 * time.Second)
	x := 0
	for serverCPU(pid)-s0 < 0.1 && time.Now().Before(deadline) {
		for i := 0; i < 1e6; i++ {
			x += i % 7
		}
	}
	s, r := serverCPU(pid)-s0, selfCPU()-r0
	if s < 0.1 {
		t.Fatalf("/proc/%d/stat grew by %.2f s in 30 s of spinning (getrusage: %.2f s; x=%d)", pid, s, r, x)
	}
	if math.Abs(s-r) > 0.1 {
		t.Errorf("/proc/%d/stat grew by %.2f s, getrusage by %.2f s", pid, s, r)
	}
}
