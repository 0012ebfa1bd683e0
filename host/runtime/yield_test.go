package runtime_test

import (
	"fmt"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coordhost/coordhost/host/runtime"
)

// TestReleasedReplyRunsBeforeTheNextStep: a response the owner releases
// reaches the goroutine waiting for it before the owner steps again. On
// one core (GOMAXPROCS 1), a canary's event stepped in a round with a
// flooded group's events — steps that write nothing, so the worker never
// waits for an append and takes turn after turn — is answered; the
// canary's goroutine must run before the flood's next steps, not once
// the flood's whole queue is stepped (the worker blocking for lack of
// work was the first moment its core was free).
func TestReleasedReplyRunsBeforeTheNextStep(t *testing.T) {
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(1))
	const floods = 200
	rt := startCfg(t, runtime.Config{Partitions: 1, Workers: 1, Log: runtime.NewMemLog(), QuotaPercent: -1,
		NewShard: func(int) (runtime.Shard, error) { return newPipeShard(nil), nil }})
	submit := func(key string, in pput) {
		t.Helper()
		if err := rt.Submit(0, runtime.Event{Key: key, Input: in}); err != nil {
			t.Fatal(err)
		}
	}
	// The worker steps the flood's first event and holds there while the
	// canary's event and the rest of the flood are queued behind it.
	hold, entered := make(chan struct{}), make(chan struct{})
	submit("flood", pput{key: "f", none: true, hold: hold, onStep: func() { close(entered) }})
	<-entered
	var stepped atomic.Int64
	reply := make(chan error, 1)
	submit("canary", pput{key: "canary", none: true, reply: reply})
	for i := range floods {
		submit("flood", pput{key: fmt.Sprint("f", i), none: true, onStep: func() { stepped.Add(1) }})
	}
	woke := make(chan int64, 1)
	waiting := make(chan struct{})
	go func() {
		close(waiting)
		if err := <-reply; err != nil {
			t.Error(err)
		}
		woke <- stepped.Load()
	}()
	<-waiting // on one core the goroutine runs until it blocks on reply
	close(hold)
	select {
	case n := <-woke:
		// The round after the held one steps the canary first (its key
		// has the fewest events in it); its goroutine runs at the owner's
		// next yield, before the next step or, if Go's scheduler picks the
		// worker back from its global queue, the one after.
		if n > 2 {
			t.Fatalf("the canary's goroutine ran after %d of the flood's %d steps behind its answer, want at most 2", n, floods)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the canary was not answered")
	}
}

// spinShard's Tick is a slice of a mass expiry: units of spinUnit of
// work, yielding (Tick.Yield) and asking Tick.Waiting after each whether
// a group's event waits, as the loop's shard does between timers. Its deadline is due until its
// first Tick is stepped, once the test makes it due.
type spinShard struct {
	started chan struct{} // closed as the Tick begins
	units   chan int      // how many units the Tick ran
	due     atomic.Bool
	ticked  atomic.Bool
}

type spinCanary struct{}

const (
	spinUnit  = 20 * time.Microsecond
	spinUnits = 250 // 5 ms: within Go's 10 ms preemption
)

func (s *spinShard) Replay(runtime.Record) error { return nil }
func (s *spinShard) Commit()                     {}
func (s *spinShard) Rollback(error)              {}
func (s *spinShard) Unload()                     {}

func (s *spinShard) NextDeadline() (int64, bool) {
	if !s.due.Load() || s.ticked.Load() {
		return 0, false
	}
	return time.Now().UnixMilli() - 1, true
}

func (s *spinShard) Step(_ int64, in any) []runtime.Record {
	tick, ok := in.(runtime.Tick)
	if !ok || s.ticked.Swap(true) {
		return nil
	}
	close(s.started)
	n := 0
	for ; n < spinUnits; n++ {
		if n > 0 && tick.Waiting != nil {
			if tick.Yield != nil {
				tick.Yield()
			}
			if tick.Waiting() {
				break
			}
		}
		spin(spinUnit)
	}
	s.units <- n
	return nil
}

// spin keeps its core busy for d.
func spin(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); {
	}
}

// TestTickLetsAWokenGroupQueue: a group's request that becomes ready to
// run while a slice of a mass expiry is stepped is queued, and seen by
// the Tick's Waiting, before the slice ends. On one core (GOMAXPROCS 1),
// a canary's goroutine, woken as the Tick begins, runs only when the
// owner gives up its core: the Tick's Yield must give it up, or the
// canary's event is queued only after the whole slice.
func TestTickLetsAWokenGroupQueue(t *testing.T) {
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(1))
	sh := &spinShard{started: make(chan struct{}), units: make(chan int, 1)}
	rt := startCfg(t, runtime.Config{Partitions: 1, Workers: 1, Log: runtime.NewMemLog(), QuotaPercent: -1,
		YieldTime: 50 * time.Microsecond, NewShard: func(int) (runtime.Shard, error) { return sh, nil }})
	go func() {
		<-sh.started
		if err := rt.Submit(0, runtime.Event{Key: "canary", Input: spinCanary{}}); err != nil {
			t.Error(err)
		}
	}()
	// The deadline is due from now: the release after this event's
	// round arms the timer, whose Tick follows.
	sh.due.Store(true)
	if err := rt.Submit(0, runtime.Event{Key: "kick", Input: spinCanary{}}); err != nil {
		t.Fatal(err)
	}
	select {
	case n := <-sh.units:
		if n >= 25 {
			t.Fatalf("the Tick ran %d units of %v before it saw the canary's event (of %d), want under 25", n, spinUnit, spinUnits)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no Tick")
	}
}
