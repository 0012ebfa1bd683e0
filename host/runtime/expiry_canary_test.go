package runtime_test

import (
	"context"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coordhost/coordhost/host/runtime"
)

// expiryShard is a pipeShard with a Tick and a hook in Commit: its Tick,
// once the test makes its deadline due, waits until Tick.Waiting reports
// a group's event queued (as a slice of a mass expiry ends when a
// canary's heartbeat waits), then writes one record of owner "mass";
// onCommit, when set, runs at each Commit before the commit.
type expiryShard struct {
	*pipeShard
	due, ticked atomic.Bool
	tickBegan   chan struct{}
	// proceed, when set, holds the Tick after it began until it is closed.
	proceed  chan struct{}
	onCommit func()
}

func (s *expiryShard) NextDeadline() (int64, bool) {
	if !s.due.Load() || s.ticked.Load() {
		return 0, false
	}
	return time.Now().UnixMilli() - 1, true
}

func (s *expiryShard) Step(now int64, in any) []runtime.Record {
	tick, ok := in.(runtime.Tick)
	if !ok {
		return s.pipeShard.Step(now, in)
	}
	if s.ticked.Swap(true) {
		return nil
	}
	close(s.tickBegan)
	if s.proceed != nil {
		<-s.proceed
	}
	return fenceOnceWaiting(s.pipeShard, now, tick)
}

// fenceOnceWaiting is a slice of a mass expiry that ends for a group's
// event: it waits until tick.Waiting reports one queued, then steps sh
// with one record of owner "mass" (nothing if none is queued within 10
// s: the test fails).
func fenceOnceWaiting(sh *pipeShard, now int64, tick runtime.Tick) []runtime.Record {
	for end := time.Now().Add(10 * time.Second); tick.Waiting == nil || !tick.Waiting(); {
		if time.Now().After(end) {
			return nil
		}
		time.Sleep(time.Millisecond)
	}
	return sh.Step(now, pput{key: "mass-1", val: "fenced", owner: "mass"})
}

func (s *expiryShard) Commit() {
	if s.onCommit != nil {
		s.onCommit()
	}
	s.pipeShard.Commit()
}

// TestTickTakesTheGroupWaitingBehindIt: a group's event that waits in the
// queue when a Tick's slice ends for it is stepped in the Tick's round,
// after the slice's records are sealed, and not in a round after it. With
// a pipeline of one round, a round after it would wait for the slice's
// append; the canary, which writes nothing and reads nothing in flight,
// must be answered while that append is held. Before, the round looked
// for waiting events only YieldTime after its last look (an hour here),
// and the canary waited for the append.
func TestTickTakesTheGroupWaitingBehindIt(t *testing.T) {
	sh := &expiryShard{pipeShard: newPipeShard(nil), tickBegan: make(chan struct{}), proceed: make(chan struct{})}
	// Due from the start: the Loaded round's release arms the timer, whose
	// Tick is the only one (a second release before it began could queue
	// a second Tick, which the canary would be queued behind).
	sh.due.Store(true)
	log := &heldLog{Log: runtime.NewMemLog(), calls: make(chan heldAppend, 4)}
	rt := startCfg(t, runtime.Config{Partitions: 1, Workers: 2, Log: log, Pipeline: 1, QuotaPercent: -1,
		NewShard: func(int) (runtime.Shard, error) { return sh, nil }})
	select {
	case <-sh.tickBegan:
	case <-time.After(10 * time.Second):
		t.Fatal("no Tick")
	}
	reply := make(chan error, 1)
	if err := rt.Submit(0, runtime.Event{Key: "canary", Input: pput{key: "canary", none: true, reply: reply}}); err != nil {
		t.Fatal(err)
	}
	close(sh.proceed)
	var held heldAppend
	select {
	case held = <-log.calls:
	case <-time.After(10 * time.Second):
		t.Fatal("the Tick's records were not appended")
	}
	defer func() { held.result <- nil }()
	answeredWithin(t, reply, 3*time.Second, "the canary waiting behind the Tick was not answered while the Tick's append was held")
}

// answeredWithin fails the test with msg unless c gives nil within d.
func answeredWithin(t *testing.T, c chan error, d time.Duration, msg string) {
	t.Helper()
	select {
	case err := <-c:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(d):
		t.Fatal(msg)
	}
}

// heldMassRound starts one partition of an expiryShard with workers
// workers and steps a round of the mass group that writes a record,
// whose append it returns held, with the channel of that round's answer.
func heldMassRound(t *testing.T, workers int) (*expiryShard, *runtime.Runtime, chan error, heldAppend) {
	t.Helper()
	sh := &expiryShard{pipeShard: newPipeShard(nil), tickBegan: make(chan struct{})}
	log := &heldLog{Log: runtime.NewMemLog(), calls: make(chan heldAppend, 4)}
	rt := startCfg(t, runtime.Config{Partitions: 1, Workers: workers, Log: log, QuotaPercent: -1,
		NewShard: func(int) (runtime.Shard, error) { return sh, nil }})
	massReply := make(chan error, 1)
	if err := rt.Submit(0, runtime.Event{Key: "mass", Input: pput{key: "mass-1", val: "fenced", owner: "mass", reply: massReply}}); err != nil {
		t.Fatal(err)
	}
	select {
	case held := <-log.calls:
		return sh, rt, massReply, held
	case <-time.After(10 * time.Second):
		t.Fatal("the mass group's round was not appended")
	}
	return nil, nil, nil, heldAppend{}
}

// TestInlineStepLeavesTheCommitsToTheWorkers: a request stepped by its
// own goroutine (Event.Inline) returns once its round is stepped, even
// when a round before it became durable meanwhile: that round's commit
// is left to a worker. Here the commit is held until the request
// returns; before, the request's goroutine settled the durable round
// itself, and its answer waited for the commit.
func TestInlineStepLeavesTheCommitsToTheWorkers(t *testing.T) {
	sh, rt, massReply, held := heldMassRound(t, 2)
	commitHeld := make(chan struct{})
	released := false
	defer func() {
		if !released {
			close(commitHeld)
		}
	}()
	sh.onCommit = func() { <-commitHeld }
	// The canary is stepped on its own goroutine; while its step runs,
	// the mass group's append ends.
	inStep, stepHeld := make(chan struct{}), make(chan struct{})
	reply := make(chan error, 1)
	returned := make(chan error, 1)
	go func() {
		returned <- rt.Submit(0, runtime.Event{Key: "canary", Inline: true,
			Input: pput{key: "canary", none: true, reply: reply, hold: stepHeld, onStep: func() { close(inStep) }}})
	}()
	select {
	case <-inStep:
	case <-time.After(10 * time.Second):
		t.Fatal("the canary was not stepped")
	}
	held.result <- nil
	// durable: the appender releases its answer
	answeredWithin(t, massReply, 10*time.Second, "the mass group's round was not answered after its append")
	close(stepHeld)
	answeredWithin(t, returned, 3*time.Second, "the canary's Submit waited for the commit of the round before it")
	close(commitHeld)
	released = true
	if err := <-reply; err != nil {
		t.Fatal(err)
	}
}

// TestWorkerYieldsBeforeItSettles: on one core, a worker that released a
// response in its round lets the response's goroutine run before it
// commits the rounds that became durable meanwhile. Before, the worker
// committed them first (for a slice of a mass expiry's fenced members,
// 0.1-0.3 ms), and the canary's goroutine ran only after. Go's scheduler
// takes a goroutine from its global queue first once in 61 turns, so
// the yielded worker may run again first: the test fails only if the
// commit came first in each of three tries.
func TestWorkerYieldsBeforeItSettles(t *testing.T) {
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(1))
	for try := 0; try < 3; try++ {
		if !committedBeforeTheCanaryRan(t) {
			return
		}
	}
	t.Fatal("the worker committed the durable round before the canary's goroutine ran, in three tries of three")
}

// committedBeforeTheCanaryRan runs the scenario of
// TestWorkerYieldsBeforeItSettles once: a canary's event, stepped by the
// worker while the round before it becomes durable, is answered; it
// reports whether that round was committed before the canary's
// goroutine ran.
func committedBeforeTheCanaryRan(t *testing.T) bool {
	t.Helper()
	sh, rt, massReply, held := heldMassRound(t, 1)
	defer rt.Close(context.Background())
	var canaryRan atomic.Bool
	committedFirst := make(chan bool, 1)
	sh.onCommit = func() {
		select {
		case committedFirst <- !canaryRan.Load():
		default:
		}
	}
	inStep, stepHeld := make(chan struct{}), make(chan struct{})
	reply := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := <-reply; err != nil {
			t.Error(err)
		}
		canaryRan.Store(true)
	}()
	// Queued, not inline: the worker steps it.
	if err := rt.Submit(0, runtime.Event{Key: "canary",
		Input: pput{key: "canary", none: true, reply: reply, hold: stepHeld, onStep: func() { close(inStep) }}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-inStep:
	case <-time.After(10 * time.Second):
		t.Fatal("the canary was not stepped")
	}
	held.result <- nil
	if err := <-massReply; err != nil {
		t.Fatal(err)
	}
	close(stepHeld)
	var first bool
	select {
	case first = <-committedFirst:
	case <-time.After(10 * time.Second):
		t.Fatal("the durable round was not committed")
	}
	<-done
	return first
}

// slicedShard is a pipeShard whose Ticks are the slices of a mass
// expiry: its deadline is due from the start until it has stepped two
// Ticks. The first waits until Tick.Waiting reports a group's event
// queued (the slice ends for a canary's heartbeat) and writes a record of
// owner "mass"; the second sends on second whether ran was set when it
// began.
type slicedShard struct {
	*pipeShard
	ticks  atomic.Int32
	began  chan struct{} // closed as the first Tick begins
	ran    *atomic.Bool
	second chan bool
}

func (s *slicedShard) NextDeadline() (int64, bool) {
	if s.ticks.Load() >= 2 {
		return 0, false
	}
	return time.Now().UnixMilli() - 1, true
}

func (s *slicedShard) Step(now int64, in any) []runtime.Record {
	tick, ok := in.(runtime.Tick)
	if !ok {
		return s.pipeShard.Step(now, in)
	}
	switch s.ticks.Add(1) {
	case 1:
		close(s.began)
		return fenceOnceWaiting(s.pipeShard, now, tick)
	case 2:
		s.second <- s.ran.Load()
	}
	return nil
}

// TestAnsweredGoroutineRunsBeforeTheNextSlice: on one core, with two
// workers, a canary's event that ends a slice of a mass expiry and is
// answered in the slice's round (it writes nothing and depends on
// nothing in flight) reaches its goroutine before the next slice's Tick
// is stepped, though that Tick is due at once. Before, the worker armed
// the partition's timer, due, and yielded after it let the partition go:
// the scheduler ran the timer's goroutine first, which queued the Tick
// and woke the other worker, both ahead of the answered goroutine, and
// the next slice was stepped before it ran (in the mass expiry it waited
// for that slice's first Tick yield, 55-90 µs). Go's scheduler takes a
// goroutine from its global queue first once in 61 turns, so the yielded
// worker may run again first: the test fails only if the next slice came
// first in each of three tries.
func TestAnsweredGoroutineRunsBeforeTheNextSlice(t *testing.T) {
	defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(1))
	for try := 0; try < 3; try++ {
		if canaryRanFirst(t) {
			return
		}
	}
	t.Fatal("the next slice's Tick was stepped before the answered canary's goroutine ran, in three tries of three")
}

// canaryRanFirst runs the scenario of
// TestAnsweredGoroutineRunsBeforeTheNextSlice once and reports whether
// the canary's goroutine ran before the second Tick began.
func canaryRanFirst(t *testing.T) bool {
	t.Helper()
	var ran atomic.Bool
	sh := &slicedShard{pipeShard: newPipeShard(nil), began: make(chan struct{}), ran: &ran, second: make(chan bool, 1)}
	rt := startCfg(t, runtime.Config{Partitions: 1, Workers: 2, Log: runtime.NewMemLog(), QuotaPercent: -1,
		NewShard: func(int) (runtime.Shard, error) { return sh, nil }})
	defer rt.Close(context.Background())
	select {
	case <-sh.began:
	case <-time.After(10 * time.Second):
		t.Fatal("no Tick")
	}
	// Queued, not inline: the partition is a worker's, stepping the Tick.
	reply := make(chan error, 1)
	if err := rt.Submit(0, runtime.Event{Key: "canary", Input: pput{key: "canary", none: true, reply: reply}}); err != nil {
		t.Fatal(err)
	}
	answeredWithin(t, reply, 10*time.Second, "the canary was not answered")
	ran.Store(true)
	select {
	case first := <-sh.second:
		return first
	case <-time.After(10 * time.Second):
		t.Fatal("no second Tick")
	}
	return false
}
