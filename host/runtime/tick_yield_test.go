package runtime

import (
	goruntime "runtime"
	"runtime/metrics"
	"testing"
	"time"
)

// TestTickYieldsOnlyWhenACoreIsWanted: a Tick's Yield gives up the
// owner's core only when a goroutine waits for a core and none is idle.
// With a core idle and nothing waiting, every Yield due (YieldTime 1 ns
// here) yielded before, taking the owner off its core for nothing; on
// one core with a goroutine woken and waiting, it still yields, and that
// goroutine runs before the Tick goes on.
func TestTickYieldsOnlyWhenACoreIsWanted(t *testing.T) {
	yields := 0
	defer func(g func()) { gosched = g }(gosched)
	gosched = func() { yields++; goruntime.Gosched() }
	p := &partition{rt: &Runtime{cfg: Config{Now: time.Now, YieldTime: time.Nanosecond}}}

	prev := goruntime.GOMAXPROCS(2)
	defer goruntime.GOMAXPROCS(prev)
	const due = 200
	for range due {
		time.Sleep(time.Microsecond) // each Yield is due
		p.tickYield()
	}
	// The test's own goroutines (the test runner's timer, the collector's
	// workers) may be counted waiting now and then.
	if yields > due/10 {
		t.Errorf("%d of %d Yields gave up the core with nothing waiting for it, want at most %d", yields, due, due/10)
	}

	goruntime.GOMAXPROCS(1)
	yields = 0
	ran := make(chan struct{})
	go close(ran) // waits for the only core, held by this goroutine
	p.looked = time.Time{}
	p.tickYield()
	select {
	case <-ran:
	default:
		t.Fatalf("the woken goroutine had not run when the Yield returned (%d yields)", yields)
	}
	if yields != 1 {
		t.Errorf("%d yields with a goroutine waiting for the only core, want 1", yields)
	}
}

// TestYieldNeededAllocatesNothing: the Tick asks once per YieldTime.
func TestYieldNeededAllocatesNothing(t *testing.T) {
	var s [3]metrics.Sample
	if n := testing.AllocsPerRun(100, func() { yieldNeeded(&s) }); n != 0 {
		t.Errorf("yieldNeeded allocates %v times, want 0", n)
	}
}
