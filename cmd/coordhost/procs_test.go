package main

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// The governor gives a process one P after procsQuietWindows quiet
// windows in a row (a busier window starts the count again), every P
// after one window of half a core's use, and sets GOMAXPROCS to match.
func TestProcsGovernor(t *testing.T) {
	defer runtime.SetDefaultGOMAXPROCS()
	runtime.SetDefaultGOMAXPROCS()
	max := runtime.GOMAXPROCS(0)
	if max < 2 {
		t.Skipf("GOMAXPROCS %d: nothing to govern", max)
	}
	g := &procsGovernor{max: max, cur: max}
	step := func(busy float64, want int) {
		t.Helper()
		g.apply(busy, false)
		if got := runtime.GOMAXPROCS(0); got != want || g.cur != want {
			t.Fatalf("after a window at %.2f of a core: GOMAXPROCS %d (governor %d), want %d", busy, got, g.cur, want)
		}
	}
	for range procsQuietWindows - 1 {
		step(0.1, max)
	}
	step(0.3, max) // not quiet: the count starts again
	for range procsQuietWindows - 1 {
		step(0, max)
	}
	step(0.2, 1)
	step(0.49, 1) // one P still has room
	step(0.3, 1)
	step(0.5, max)
	step(1.5, max)
	for range procsQuietWindows - 1 {
		step(0.24, max)
	}
	step(0.24, 1)
	g.apply(0.1, true) // a goroutine waited for the one P
	if got := runtime.GOMAXPROCS(0); got != max {
		t.Fatalf("after a long wait to run: GOMAXPROCS %d, want %d", got, max)
	}
}

// runWaits sees a goroutine that waited for the process's one P while
// another held it.
func TestRunWaits(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	w := newRunWaits()
	w.since()
	// The runtime samples one scheduling of a goroutine in eight: make
	// several wait behind a busy one.
	for range 64 {
		done := make(chan struct{})
		go func() { close(done) }() // runnable while this one spins
		for start := time.Now(); time.Since(start) < 2*procsRaiseWait; {
		}
		<-done
	}
	if !w.since() {
		t.Fatal("goroutines that waited 2 ms for the P: no long wait seen")
	}
	if w.since() {
		t.Error("a second look with nothing new: a long wait seen again")
	}
}

// runtime.procs: a GOMAXPROCS in the environment wins over it, -1 leaves
// the default, a positive value is set, and 0 starts at every P and gives the runtime its default
// back when the context ends.
func TestGovernProcs(t *testing.T) {
	defer runtime.SetDefaultGOMAXPROCS()
	runtime.SetDefaultGOMAXPROCS()
	def := runtime.GOMAXPROCS(0)
	governProcs(context.Background(), 1, []string{"HOME=/", "GOMAXPROCS=4"})
	if got := runtime.GOMAXPROCS(0); got != def {
		t.Fatalf("GOMAXPROCS in the environment: %d Ps, want the default %d left", got, def)
	}
	governProcs(context.Background(), -1, nil)
	if got := runtime.GOMAXPROCS(0); got != def {
		t.Fatalf("runtime.procs=-1: %d Ps, want the default %d left", got, def)
	}
	governProcs(context.Background(), 3, nil)
	if got := runtime.GOMAXPROCS(0); got != 3 {
		t.Fatalf("runtime.procs=3: %d Ps", got)
	}
	runtime.SetDefaultGOMAXPROCS()
	ctx, cancel := context.WithCancel(context.Background())
	governProcs(ctx, 0, nil)
	if got := runtime.GOMAXPROCS(0); got != def {
		t.Fatalf("runtime.procs=0: starts at %d Ps, want every P (%d)", got, def)
	}
	runtime.GOMAXPROCS(1) // as the governor does once the process is quiet
	cancel()
	for deadline := time.Now().Add(10 * time.Second); runtime.GOMAXPROCS(0) != def; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("context ended: %d Ps, want the default %d back", runtime.GOMAXPROCS(0), def)
		}
	}
}
