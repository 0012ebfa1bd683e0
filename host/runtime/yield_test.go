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
