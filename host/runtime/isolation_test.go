package runtime_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coordhost/coordhost/host/runtime"
)

// isoShard is a runtime.Sealer that traces what the runtime does with it
// ("step <name>", "seal", "commit", "rollback") and answers each event's
// reply when the runtime calls its round's durable function, or with the
// error on a rollback if it was not answered.
type isoShard struct {
	mu     sync.Mutex
	trace  []string
	round  []*isoReply
	sealed [][]*isoReply
}

// iev is an input of isoShard: it writes a record owned by owner when
// write is set, and waits for hold (reporting entered) when set.
type iev struct {
	name    string
	write   bool
	owner   string
	hold    chan struct{}
	entered chan struct{}
	reply   *isoReply
}

type isoReply struct {
	sent atomic.Bool
	c    chan error
}

func newReply() *isoReply { return &isoReply{c: make(chan error, 1)} }

func (r *isoReply) answer(err error) {
	if r.sent.CompareAndSwap(false, true) {
		r.c <- err
	}
}

func (s *isoShard) note(e string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trace = append(s.trace, e)
}

func (s *isoShard) Replay(runtime.Record) error { return nil }

func (s *isoShard) Step(_ int64, in any) []runtime.Record {
	ev, ok := in.(iev)
	if !ok {
		return nil
	}
	if ev.entered != nil {
		close(ev.entered)
	}
	if ev.hold != nil {
		<-ev.hold
	}
	s.note("step " + ev.name)
	if ev.reply != nil {
		s.round = append(s.round, ev.reply)
	}
	if ev.write {
		return []runtime.Record{{Key: []byte(ev.name), Value: []byte("v"), Owner: ev.owner}}
	}
	return nil
}

func (s *isoShard) Seal() func() {
	s.note("seal")
	r := s.round
	s.sealed, s.round = append(s.sealed, r), nil
	return func() {
		for _, x := range r {
			x.answer(nil)
		}
	}
}

func (s *isoShard) Commit() {
	s.note("commit")
	if len(s.sealed) > 0 {
		s.sealed = s.sealed[1:]
	}
}

func (s *isoShard) Rollback(err error) {
	s.note("rollback")
	for _, r := range append(s.sealed, s.round) {
		for _, x := range r {
			x.answer(err) // a reply released early is not answered again
		}
	}
	s.sealed, s.round = nil, nil
}

func (s *isoShard) NextDeadline() (int64, bool) { return 0, false }
func (s *isoShard) Unload()                     {}

func (s *isoShard) steps() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, e := range s.trace {
		if name, ok := strings.CutPrefix(e, "step "); ok {
			out = append(out, name)
		}
	}
	return out
}

// isoRuntime is one partition of an isoShard on a heldLog.
func isoRuntime(t *testing.T, cfg runtime.Config) (*runtime.Runtime, *isoShard, *heldLog) {
	t.Helper()
	sh := &isoShard{}
	log := &heldLog{Log: runtime.NewMemLog(), calls: make(chan heldAppend)}
	cfg.Partitions, cfg.Log = 1, log
	cfg.NewShard = func(int) (runtime.Shard, error) { return sh, nil }
	if cfg.RoundTime == 0 {
		cfg.RoundTime = time.Hour
	}
	if cfg.YieldTime == 0 {
		cfg.YieldTime = time.Hour
	}
	rt, err := runtime.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.LoadAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		done := make(chan struct{})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // a failed test may hold an append
		go func() { rt.Close(ctx); cancel(); close(done) }()
		for {
			select {
			case <-done:
				return
			case h := <-log.calls:
				h.result <- nil
			}
		}
	})
	return rt, sh, log
}

func submit(t *testing.T, rt *runtime.Runtime, key string, in iev) {
	t.Helper()
	if err := rt.Submit(0, runtime.Event{Input: in, Key: key}); err != nil {
		t.Fatal(err)
	}
}

func answered(t *testing.T, r *isoReply, what string) error {
	t.Helper()
	select {
	case err := <-r.c:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: no answer in 10s", what)
	}
	return nil
}

func notAnswered(t *testing.T, r *isoReply, what string) {
	t.Helper()
	select {
	case err := <-r.c:
		t.Fatalf("%s answered (%v) while an append it depends on is in flight", what, err)
	case <-time.After(50 * time.Millisecond):
	}
}

// TestIndependentKeyAnsweredBeforeOthersAppend: while a round with a
// record of group "flood" waits for its append, an event of another
// group that writes nothing is answered at once; an event of "flood"
// that writes nothing, and any event once a record of no owner is in
// flight, waits for the append. A failed append afterwards rolls back
// every round not committed, the early one too, and does not answer it
// again.
func TestIndependentKeyAnsweredBeforeOthersAppend(t *testing.T) {
	rt, sh, log := isoRuntime(t, runtime.Config{Workers: 2})
	flood := newReply()
	submit(t, rt, "flood", iev{name: "f1", write: true, owner: "flood", reply: flood})
	first := <-log.calls // held
	canary := newReply()
	submit(t, rt, "canary", iev{name: "c1", reply: canary})
	if err := answered(t, canary, "the canary's heartbeat"); err != nil {
		t.Fatal(err)
	}
	same := newReply()
	submit(t, rt, "flood", iev{name: "f2", reply: same})
	waitSteps(t, sh, "f2")
	notAnswered(t, same, "the flooded group's event without records")
	all := newReply()
	submit(t, rt, "", iev{name: "tick", write: true, reply: all}) // a record of no owner
	late := newReply()
	submit(t, rt, "canary", iev{name: "c2", reply: late})
	waitSteps(t, sh, "c2")
	notAnswered(t, late, "an event after a record of no owner")

	first.result <- errors.New("disk full")
	for _, r := range []*isoReply{flood, same, all, late} {
		if err := answered(t, r, "a rolled back event"); err == nil {
			t.Error("an event of a rolled back round was answered as durable")
		}
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if !strings.Contains(strings.Join(sh.trace, "|"), "rollback") {
		t.Errorf("no rollback in %q", sh.trace)
	}
}

// TestFullPipelineStepsIndependentKeys: with Pipeline 2 and two rounds
// of group "flood" waiting for appends, the flood's next event waits,
// but another group's events are stepped, the one without records
// answered at once; the flood's event follows once an append ends.
func TestFullPipelineStepsIndependentKeys(t *testing.T) {
	rt, sh, log := isoRuntime(t, runtime.Config{Workers: 2, Pipeline: 2})
	f1, f2, f3 := newReply(), newReply(), newReply()
	submit(t, rt, "flood", iev{name: "f1", write: true, owner: "flood", reply: f1})
	first := <-log.calls // held: f1 in flight, f2's round waits behind it
	submit(t, rt, "flood", iev{name: "f2", write: true, owner: "flood", reply: f2})
	waitSteps(t, sh, "f2")
	submit(t, rt, "flood", iev{name: "f3", write: true, owner: "flood", reply: f3})
	c1, c2 := newReply(), newReply()
	submit(t, rt, "canary", iev{name: "c1", reply: c1})
	if err := answered(t, c1, "the canary's heartbeat"); err != nil {
		t.Fatal(err)
	}
	submit(t, rt, "other", iev{name: "c2", write: true, owner: "other", reply: c2})
	waitSteps(t, sh, "c2")
	if got := strings.Join(sh.steps(), ","); strings.Contains(got, "f3") {
		t.Fatalf("the flood's third event was stepped with two appends in flight: %s", got)
	}
	first.result <- nil
	defer appendAll(log)()
	for _, r := range []*isoReply{f1, f2, c2, f3} {
		if err := answered(t, r, "an appended event"); err != nil {
			t.Fatal(err)
		}
	}
}

// appendAll lets every append of log succeed until the returned stop is
// called.
func appendAll(log *heldLog) (stop func()) {
	done := make(chan struct{})
	go func() {
		for {
			select {
			case h := <-log.calls:
				h.result <- nil
			case <-done:
				return
			}
		}
	}()
	return func() { close(done) }
}

// waitSteps waits until the shard has stepped name.
func waitSteps(t *testing.T, sh *isoShard, name string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		for _, s := range sh.steps() {
			if s == name {
				return
			}
		}
	}
	t.Fatalf("%s not stepped in 10s; stepped %q", name, sh.steps())
}

// TestRoundEndsAtBudget: a round that passes RoundTime (or MaxRoundBytes)
// ends after the event that passed it; the rest of its events go back to
// the head of the queue, so an event of another group submitted while the
// round ran is stepped before the flood's remaining events, and the
// flood's events keep their order. Past YieldTime the round is not cut:
// the waiting event joins it, stepped next, with the same order.
func TestRoundEndsAtBudget(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  runtime.Config
		want string
	}{
		{"no budget reached", runtime.Config{}, "gate,f1,f2,f3,f4,c1"},
		{"YieldTime", runtime.Config{YieldTime: time.Millisecond, Now: steppingClock()}, "gate,f1,c1,f2,f3,f4"},
		{"RoundTime", runtime.Config{RoundTime: time.Millisecond, Now: steppingClock()}, "gate,f1,c1,f2,f3,f4"},
		{"MaxRoundBytes", runtime.Config{MaxRoundBytes: 1}, "gate,f1,c1,f2,f3,f4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.Workers = 1
			rt, sh, log := isoRuntime(t, c.cfg)
			go func() {
				for h := range log.calls {
					h.result <- nil
				}
			}()
			gate := iev{name: "gate", hold: make(chan struct{}), entered: make(chan struct{})}
			submit(t, rt, "", gate)
			<-gate.entered // the events below queue behind the gate's round
			hold := iev{name: "f1", write: true, owner: "flood", hold: make(chan struct{}), entered: make(chan struct{})}
			submit(t, rt, "flood", hold)
			for _, f := range []string{"f2", "f3", "f4"} {
				submit(t, rt, "flood", iev{name: f, write: true, owner: "flood"})
			}
			close(gate.hold)
			<-hold.entered // the flood's round is stepping its first event
			last := newReply()
			submit(t, rt, "canary", iev{name: "c1", write: true, owner: "canary", reply: last})
			close(hold.hold)
			if err := answered(t, last, "the canary"); err != nil {
				t.Fatal(err)
			}
			waitSteps(t, sh, "f4")
			if got := strings.Join(sh.steps(), ","); got != c.want {
				t.Errorf("steps %s, want %s", got, c.want)
			}
		})
	}
}

// TestRoundOfOneKeyNotCut: past RoundTime with no other key's event
// waiting, a round is not cut: one key's events keep sharing one round
// (and its append).
func TestRoundOfOneKeyNotCut(t *testing.T) {
	rt, sh, log := isoRuntime(t, runtime.Config{Workers: 1, RoundTime: time.Millisecond, Now: steppingClock()})
	go func() {
		for h := range log.calls {
			h.result <- nil
		}
	}()
	gate := iev{name: "gate", hold: make(chan struct{}), entered: make(chan struct{})}
	submit(t, rt, "", gate)
	<-gate.entered
	last := newReply()
	for _, f := range []string{"f1", "f2", "f3"} {
		in := iev{name: f, write: true, owner: "flood"}
		if f == "f3" {
			in.reply = last
		}
		submit(t, rt, "flood", in)
	}
	close(gate.hold)
	if err := answered(t, last, "the flood's last event"); err != nil {
		t.Fatal(err)
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	got := strings.Join(sh.trace, "|")
	if !strings.Contains(got, "step f1|step f2|step f3|seal") {
		t.Errorf("trace %s: want f1, f2 and f3 in one round", got)
	}
}

// steppingClock is a clock that advances a millisecond at each reading.
func steppingClock() func() time.Time {
	var ms atomic.Int64
	return func() time.Time { return time.UnixMilli(ms.Add(1)) }
}

// TestQueueLimitPerKey: beyond MaxQueuedPerKey events of one key queued,
// Submit answers ErrQueueFull (which is ErrLoadInProgress to a caller
// that knows only that); other keys and keyless events are still taken,
// and the key is taken again once its queue drains.
func TestQueueLimitPerKey(t *testing.T) {
	rt, _, _ := isoRuntime(t, runtime.Config{Workers: 1, MaxQueuedPerKey: 3})
	gate := iev{name: "gate", hold: make(chan struct{}), entered: make(chan struct{})}
	submit(t, rt, "", gate)
	<-gate.entered
	var replies []*isoReply
	for range 3 {
		r := newReply()
		replies = append(replies, r)
		submit(t, rt, "flood", iev{name: "f", reply: r})
	}
	err := rt.Submit(0, runtime.Event{Input: iev{name: "f"}, Key: "flood"})
	if !errors.Is(err, runtime.ErrQueueFull) || !errors.Is(err, runtime.ErrLoadInProgress) {
		t.Fatalf("4th event of one key: %v, want ErrQueueFull wrapping ErrLoadInProgress", err)
	}
	other := newReply()
	submit(t, rt, "canary", iev{name: "c", reply: other})
	submit(t, rt, "", iev{name: "tick"})
	close(gate.hold)
	for _, r := range append(replies, other) {
		if err := answered(t, r, "a queued event"); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		r := newReply()
		submit(t, rt, "flood", iev{name: "f", reply: r})
		if err := answered(t, r, "an event after the queue drained"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestIndependentKeyAnsweredAfterOtherKeysRecordsInItsRound: a round
// that steps an event of group "mass" writing a record, then an event of
// group "canary" writing none (a heartbeat behind a timer slice of a
// mass expiry), seals the mass's record before the canary's step, so the
// canary is answered at once while the mass's append is held.
func TestIndependentKeyAnsweredAfterOtherKeysRecordsInItsRound(t *testing.T) {
	rt, sh, log := isoRuntime(t, runtime.Config{Workers: 1})
	gate := iev{name: "gate", hold: make(chan struct{}), entered: make(chan struct{})}
	submit(t, rt, "", gate)
	<-gate.entered // the events below are taken in one round
	mass, canary := newReply(), newReply()
	submit(t, rt, "mass", iev{name: "m1", write: true, owner: "mass", reply: mass})
	submit(t, rt, "canary", iev{name: "c1", reply: canary})
	close(gate.hold)
	held := <-log.calls
	if err := answered(t, canary, "the canary's heartbeat"); err != nil {
		t.Fatal(err)
	}
	notAnswered(t, mass, "the mass group's event")
	held.result <- nil
	if err := answered(t, mass, "the mass group's event"); err != nil {
		t.Fatal(err)
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if got := strings.Join(sh.trace, "|"); !strings.Contains(got, "step m1|seal|step c1|seal") {
		t.Errorf("trace %s: want m1 sealed before c1's step", got)
	}
}

// TestRoundSealedInPartsCountsOnce: the parts of one round sealed apart
// (records of two groups) take one place in the pipeline: with Pipeline
// 2 and their append held, a later event of one of the groups is still
// stepped on top of them.
func TestRoundSealedInPartsCountsOnce(t *testing.T) {
	rt, sh, log := isoRuntime(t, runtime.Config{Workers: 1, Pipeline: 2})
	gate := iev{name: "gate", hold: make(chan struct{}), entered: make(chan struct{})}
	submit(t, rt, "", gate)
	<-gate.entered
	submit(t, rt, "a", iev{name: "a1", write: true, owner: "a"})
	submit(t, rt, "b", iev{name: "b1", write: true, owner: "b"})
	close(gate.hold)
	held := <-log.calls
	waitSteps(t, sh, "b1")
	submit(t, rt, "a", iev{name: "a2", write: true, owner: "a"})
	waitSteps(t, sh, "a2") // with each part counted, the pipeline would be full
	held.result <- nil     // the cleanup answers the appends after it
}

// TestJoinedEventsRespectFullPipeline: with Pipeline 2 and two rounds of
// group "flood" waiting for appends, a round of another group that passes
// YieldTime takes in a waiting event of a third group, but not the
// flood's next event, which waits until an append ends as it would in a
// round of its own.
func TestJoinedEventsRespectFullPipeline(t *testing.T) {
	rt, sh, log := isoRuntime(t, runtime.Config{Workers: 2, Pipeline: 2, YieldTime: time.Millisecond, Now: steppingClock()})
	submit(t, rt, "flood", iev{name: "f1", write: true, owner: "flood"})
	first := <-log.calls // held: f1 in flight, f2's round waits behind it
	submit(t, rt, "flood", iev{name: "f2", write: true, owner: "flood"})
	waitSteps(t, sh, "f2")
	gate := iev{name: "gate", hold: make(chan struct{}), entered: make(chan struct{})}
	submit(t, rt, "gate", gate)
	<-gate.entered // the events below wait while the gate's round steps
	f3, c1 := newReply(), newReply()
	submit(t, rt, "flood", iev{name: "f3", write: true, owner: "flood", reply: f3})
	submit(t, rt, "canary", iev{name: "c1", reply: c1})
	close(gate.hold)
	if err := answered(t, c1, "the canary's heartbeat"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sh.steps(), ","); got != "f1,f2,gate,c1" {
		t.Fatalf("steps %s, want f1,f2,gate,c1: the flood's third event waits for an append", got)
	}
	first.result <- nil
	defer appendAll(log)()
	if err := answered(t, f3, "the flood's third event"); err != nil {
		t.Fatal(err)
	}
}
