package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/coordhost/coordhost/host/runtime"
)

// pipeShard is a runtime.Sealer over a map: a put writes "key" = value
// (or, with none, writes no record) and is answered when its round is
// durable (by the function Seal returns); stepped reports each put as it is stepped, and "|seal" at
// each Seal.
type pipeShard struct {
	committed, live map[string]string
	round           pipeRound
	sealed          []pipeRound
	stepped         chan string
}

type pipeRound struct {
	writes  map[string]string
	replies []chan error
}

type pput struct {
	key, val string
	none     bool          // writes no record
	bad      bool          // writes a record the log refuses (empty key)
	hold     chan struct{} // Step waits until it is closed
	reply    chan error
	owner    string // its record's Owner ("": it may change any key's state)
	onStep   func()
}

func newPipeShard(stepped chan string) *pipeShard {
	return &pipeShard{committed: map[string]string{}, live: map[string]string{}, stepped: stepped}
}

func (s *pipeShard) Replay(r runtime.Record) error {
	s.committed[string(r.Key)] = string(r.Value)
	s.live[string(r.Key)] = string(r.Value)
	return nil
}

func (s *pipeShard) Step(_ int64, in any) []runtime.Record {
	switch in := in.(type) {
	case pput:
		if in.reply != nil {
			s.round.replies = append(s.round.replies, in.reply)
		}
		if in.onStep != nil {
			in.onStep()
		}
		if s.stepped != nil {
			s.stepped <- in.key
		}
		if in.hold != nil {
			<-in.hold
		}
		if in.none {
			return nil
		}
		key := in.key
		if in.bad {
			key = ""
		}
		if s.round.writes == nil {
			s.round.writes = map[string]string{}
		}
		s.round.writes[key], s.live[key] = in.val, in.val
		return []runtime.Record{{Key: []byte(key), Value: []byte(in.val), Owner: in.owner}}
	case get:
		in.fn(maps.Clone(s.committed))
	}
	return nil
}

func (s *pipeShard) Seal() func() {
	if s.stepped != nil {
		s.stepped <- "|seal"
	}
	r := s.round
	s.sealed = append(s.sealed, r)
	s.round = pipeRound{}
	return func() {
		for _, c := range r.replies {
			c <- nil
		}
	}
}

func (s *pipeShard) Commit() {
	r := s.sealed[0]
	s.sealed = s.sealed[1:]
	maps.Copy(s.committed, r.writes)
}

func (s *pipeShard) Rollback(err error) {
	for _, r := range append(s.sealed, s.round) {
		for _, c := range r.replies {
			c <- err // none was answered: the runtime calls Seal's function only for durable rounds
		}
	}
	s.sealed, s.round = nil, pipeRound{}
	s.live = maps.Clone(s.committed)
}

func (s *pipeShard) NextDeadline() (int64, bool) { return 0, false }
func (s *pipeShard) Unload()                     {}

// heldLog holds each append until the test answers it: nil appends the
// batch, an error fails it.
type heldLog struct {
	runtime.Log
	calls chan heldAppend
}

type heldAppend struct {
	recs   []runtime.Record
	result chan error
}

func (l *heldLog) Append(p int, recs []runtime.Record) error {
	h := heldAppend{recs: recs, result: make(chan error)}
	l.calls <- h
	if err := <-h.result; err != nil {
		return err
	}
	return l.Log.Append(p, recs)
}

// pipeline is one partition on a heldLog with a pipelined shard.
type pipeline struct {
	t       *testing.T
	rt      *runtime.Runtime
	log     *heldLog
	base    *runtime.MemLog
	stepped chan string
}

func newPipeline(t *testing.T, depth int) *pipeline {
	pl := &pipeline{t: t, base: runtime.NewMemLog(), stepped: make(chan string, 64)}
	pl.log = &heldLog{Log: pl.base, calls: make(chan heldAppend)}
	rt, err := runtime.New(runtime.Config{Partitions: 1, Workers: 2, Log: pl.log, Pipeline: depth, RoundTime: time.Hour, YieldTime: time.Hour,
		NewShard: func(int) (runtime.Shard, error) { return newPipeShard(pl.stepped), nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.LoadAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	pl.rt = rt
	pl.wait("|seal") // the Loaded round
	return pl
}

// put submits a put as a round of its own and waits until the round is
// stepped and sealed.
func (pl *pipeline) put(in pput) chan error {
	pl.t.Helper()
	in.reply = make(chan error, 1)
	if err := pl.rt.Submit(0, runtime.Event{Input: in}); err != nil {
		pl.t.Fatal(err)
	}
	pl.wait(in.key)
	pl.wait("|seal")
	return in.reply
}

// wait waits for the shard to report what.
func (pl *pipeline) wait(what string) {
	pl.t.Helper()
	select {
	case k := <-pl.stepped:
		if k != what {
			pl.t.Fatalf("shard reported %q, want %q", k, what)
		}
	case <-time.After(10 * time.Second):
		pl.t.Fatalf("%q not reported (with appends before it in flight)", what)
	}
}

// nextAppend waits for the next append and returns it, held.
func (pl *pipeline) nextAppend() heldAppend {
	pl.t.Helper()
	select {
	case h := <-pl.log.calls:
		return h
	case <-time.After(10 * time.Second):
		pl.t.Fatal("no append")
	}
	return heldAppend{}
}

// noAppend checks that no append is attempted.
func (pl *pipeline) noAppend() {
	pl.t.Helper()
	select {
	case h := <-pl.log.calls:
		pl.t.Fatalf("an append of %s was attempted", h.keys())
	case <-time.After(50 * time.Millisecond):
	}
}

func (h heldAppend) keys() string {
	var ks []string
	for _, r := range h.recs {
		ks = append(ks, string(r.Key))
	}
	return fmt.Sprint(ks)
}

// pending fails the test if a reply came.
func pending(t *testing.T, name string, c chan error) {
	t.Helper()
	select {
	case err := <-c:
		t.Fatalf("%s answered (%v) before its round was durable", name, err)
	default:
	}
}

func answer(t *testing.T, name string, c chan error) error {
	t.Helper()
	select {
	case err := <-c:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s not answered", name)
	}
	return nil
}

func (pl *pipeline) close() {
	go func() { // answer whatever the closing runtime still appends
		for h := range pl.log.calls {
			h.result <- nil
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := pl.rt.Close(ctx); err != nil {
		pl.t.Error(err)
	}
	close(pl.log.calls)
}

// TestPipelineReleasesOnlyDurable: rounds are stepped while the appends
// before them are held, and each response — of a round that wrote
// records or of one that wrote none — comes only once its round and every
// round before it are durable; a Read waits for all of them.
func TestPipelineReleasesOnlyDurable(t *testing.T) {
	pl := newPipeline(t, 4)
	defer pl.close()
	a := pl.put(pput{key: "a", val: "1"})
	first := pl.nextAppend()
	b := pl.put(pput{key: "b", val: "2"}) // stepped while a's append is held
	c := pl.put(pput{key: "c", none: true})
	read := make(chan map[string]string, 1)
	if err := pl.rt.Submit(0, runtime.Event{Read: true, Input: get{fn: func(m map[string]string) { read <- m }}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	pending(t, "a", a)
	pending(t, "b", b)
	pending(t, "c (no record)", c)
	select {
	case m := <-read:
		t.Fatalf("the read ran before the rounds before it were committed: %v", m)
	default:
	}
	if first.keys() != "[a]" {
		t.Fatalf("first append is %s", first.keys())
	}
	first.result <- nil
	if err := answer(t, "a", a); err != nil {
		t.Fatal(err)
	}
	second := pl.nextAppend()
	if second.keys() != "[b]" { // c wrote no record
		t.Fatalf("second append is %s", second.keys())
	}
	pending(t, "b", b)
	pending(t, "c (no record)", c)
	second.result <- nil
	for name, ch := range map[string]chan error{"b": b, "c": c} {
		if err := answer(t, name, ch); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case m := <-read:
		if m["a"] != "1" || m["b"] != "2" {
			t.Fatalf("read %v, want a and b", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the read never ran")
	}
}

// TestPipelineDepthBoundsRounds: with Pipeline 2 a third round waits
// until the first is committed.
func TestPipelineDepthBoundsRounds(t *testing.T) {
	pl := newPipeline(t, 2)
	defer pl.close()
	pl.put(pput{key: "a", val: "1"})
	first := pl.nextAppend()
	pl.put(pput{key: "b", val: "2"})
	c := make(chan error, 1)
	if err := pl.rt.Submit(0, runtime.Event{Input: pput{key: "c", val: "3", reply: c}}); err != nil {
		t.Fatal(err)
	}
	select {
	case k := <-pl.stepped:
		t.Fatalf("%q stepped with two rounds in flight and Pipeline 2", k)
	case <-time.After(50 * time.Millisecond):
	}
	first.result <- nil
	pl.wait("c")
	pl.wait("|seal")
	var appended []string
	for len(appended) < 2 { // b and c, in one append or two
		h := pl.nextAppend()
		for _, r := range h.recs {
			appended = append(appended, string(r.Key))
		}
		h.result <- nil
	}
	if fmt.Sprint(appended) != "[b c]" {
		t.Fatalf("appended %v after a", appended)
	}
	if err := answer(t, "c", c); err != nil {
		t.Fatal(err)
	}
}

// TestPipelineFailedAppendRollsBackLaterRounds: the second of three
// rounds in flight fails to append: the first stays committed, the second
// and third are rolled back (the third is never appended), none of their
// responses says success, and the partition goes on from the first.
func TestPipelineFailedAppendRollsBackLaterRounds(t *testing.T) {
	pl := newPipeline(t, 4)
	defer pl.close()
	a := pl.put(pput{key: "a", val: "1"})
	first := pl.nextAppend()
	b := pl.put(pput{key: "b", val: "2"})
	c := pl.put(pput{key: "c", val: "3"})
	d := pl.put(pput{key: "d", none: true})
	first.result <- nil
	if err := answer(t, "a", a); err != nil {
		t.Fatal(err)
	}
	// b and c, sealed while a's append was held, go in one append.
	second := pl.nextAppend()
	if second.keys() != "[b c]" {
		t.Fatalf("second append is %s, want b and c together", second.keys())
	}
	second.result <- fmt.Errorf("injected: %w", runtime.ErrStorage)
	for name, ch := range map[string]chan error{"b": b, "c": c, "d (no record)": d} {
		if err := answer(t, name, ch); !errors.Is(err, runtime.ErrStorage) {
			t.Fatalf("%s answered %v after the append of b failed", name, err)
		}
	}
	pl.noAppend()
	e := pl.put(pput{key: "e", val: "5"})
	if h := pl.nextAppend(); h.keys() != "[e]" {
		t.Fatalf("append after the rollback is %s", h.keys())
	} else {
		h.result <- nil
	}
	if err := answer(t, "e", e); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "1", "e": "5"}
	if got := readPart(t, pl); !maps.Equal(got, want) {
		t.Fatalf("committed state %v, want %v", got, want)
	}
	var logged []string
	pl.base.Replay(0, func(r runtime.Record) error { logged = append(logged, string(r.Key)); return nil })
	if fmt.Sprint(logged) != "[a e]" {
		t.Fatalf("log holds %v, want [a e]", logged)
	}
}

// TestPipelineCrashReplaysDurableState: the process dies after the first
// of three pipelined appends is durable; a runtime replaying the log has
// the first round's state only, and neither later round was answered.
func TestPipelineCrashReplaysDurableState(t *testing.T) {
	pl := newPipeline(t, 4)
	a := pl.put(pput{key: "a", val: "1"})
	first := pl.nextAppend()
	b := pl.put(pput{key: "b", val: "2"})
	c := pl.put(pput{key: "c", val: "3"})
	first.result <- nil
	if err := answer(t, "a", a); err != nil {
		t.Fatal(err)
	}
	second := pl.nextAppend() // b's append is in flight when the process dies
	pending(t, "b", b)
	pending(t, "c", c)
	// The crash: what is in the log now is all a new process finds.
	after := runtime.NewMemLog()
	pl.base.Replay(0, func(r runtime.Record) error { return after.Append(0, []runtime.Record{r}) })
	second.result <- errors.New("process gone")
	pl.close()

	rt, err := runtime.New(runtime.Config{Partitions: 1, Log: after,
		NewShard: func(int) (runtime.Shard, error) { return newPipeShard(nil), nil }})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close(context.Background())
	if err := rt.LoadAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"a": "1"}
	if got := readPart(t, &pipeline{t: t, rt: rt}); !maps.Equal(got, want) {
		t.Fatalf("replayed state %v, want the durable %v", got, want)
	}
}

// TestPipelineRefusedRecordWaitsForRoundsBefore: a record the log
// refuses, stepped while a round is in flight, fails its own round once
// the round before it is committed; the round before succeeds, and the
// events after the refused one run on the committed state.
func TestPipelineRefusedRecordWaitsForRoundsBefore(t *testing.T) {
	pl := newPipeline(t, 4)
	defer pl.close()
	a := pl.put(pput{key: "a", val: "1"})
	first := pl.nextAppend()
	bad := pl.put(pput{key: "x", val: "2", bad: true})
	first.result <- nil
	if err := answer(t, "a", a); err != nil {
		t.Fatal(err)
	}
	if err := answer(t, "the refused put", bad); !errors.Is(err, runtime.ErrInvalidRecord) {
		t.Fatalf("the refused put answered %v", err)
	}
	pl.noAppend()
	want := map[string]string{"a": "1"}
	if got := readPart(t, pl); !maps.Equal(got, want) {
		t.Fatalf("committed state %v, want %v", got, want)
	}
}

func readPart(t *testing.T, pl *pipeline) map[string]string {
	t.Helper()
	done := make(chan map[string]string, 1)
	if err := pl.rt.Submit(0, runtime.Event{Read: true, Input: get{fn: func(m map[string]string) { done <- m }}}); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-done:
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("read not answered")
	}
	return nil
}

// TestPipelineNoRecordEventWaitsOnlyForRoundsBefore: an event that wrote
// no record, stepped first in a round while another round is in flight,
// is answered once that round is durable, not after the append of the
// events stepped after it in its own round.
func TestPipelineNoRecordEventWaitsOnlyForRoundsBefore(t *testing.T) {
	pl := newPipeline(t, 4)
	defer pl.close()
	pl.put(pput{key: "a", val: "1"})
	first := pl.nextAppend()
	// g holds the worker in its Step until c and d are queued: they then
	// run as one round.
	hold := make(chan struct{})
	if err := pl.rt.Submit(0, runtime.Event{Input: pput{key: "g", none: true, hold: hold}}); err != nil {
		t.Fatal(err)
	}
	pl.wait("g")
	c, d := make(chan error, 1), make(chan error, 1)
	for _, in := range []pput{{key: "c", none: true, reply: c}, {key: "d", val: "4", reply: d}} {
		if err := pl.rt.Submit(0, runtime.Event{Input: in}); err != nil {
			t.Fatal(err)
		}
	}
	close(hold)
	for _, what := range []string{"|seal", "c", "|seal", "d", "|seal"} {
		pl.wait(what)
	}
	pending(t, "c", c)
	first.result <- nil
	if err := answer(t, "c", c); err != nil {
		t.Fatal(err)
	}
	second := pl.nextAppend()
	if second.keys() != "[d]" {
		t.Fatalf("second append is %s", second.keys())
	}
	pending(t, "d", d)
	second.result <- nil
	if err := answer(t, "d", d); err != nil {
		t.Fatal(err)
	}
}

// TestPipelineDurableRoundAnsweredWhileStepping: a round's responses go
// as soon as its append is durable, while a worker is still stepping a
// later round of the partition.
func TestPipelineDurableRoundAnsweredWhileStepping(t *testing.T) {
	pl := newPipeline(t, 4)
	defer pl.close()
	a := pl.put(pput{key: "a", val: "1"})
	first := pl.nextAppend()
	hold := make(chan struct{})
	if err := pl.rt.Submit(0, runtime.Event{Input: pput{key: "g", val: "2", hold: hold}}); err != nil {
		t.Fatal(err)
	}
	pl.wait("g") // the worker is in g's Step until hold is closed
	first.result <- nil
	err := answer(t, "a (while g is being stepped)", a)
	close(hold)
	if err != nil {
		t.Fatal(err)
	}
	pl.wait("|seal")
	pl.nextAppend().result <- nil
}

// TestIndependentKeyStepsBeforeTheCommit: an event of a group that
// nothing in flight touches, joining a round while the round before
// became durable, is stepped before that round's commit (the commit of
// a mass expiry's slice took 0.1-0.3 ms, which a canary's heartbeat
// waited for); the round is committed right after it.
func TestIndependentKeyStepsBeforeTheCommit(t *testing.T) {
	log := &heldLog{Log: runtime.NewMemLog(), calls: make(chan heldAppend)}
	sh := newPipeShard(nil)
	rt := startCfg(t, runtime.Config{Partitions: 1, Workers: 1, Log: log, QuotaPercent: -1, YieldTime: time.Nanosecond,
		NewShard: func(int) (runtime.Shard, error) { return sh, nil }})
	submit := func(key string, in pput) {
		t.Helper()
		if err := rt.Submit(0, runtime.Event{Key: key, Input: in}); err != nil {
			t.Fatal(err)
		}
	}
	// Round 1: the flood's record, its append held.
	first := make(chan error, 1)
	submit("flood", pput{key: "a", val: "1", owner: "flood", reply: first})
	call := <-log.calls
	// Round 2: the flood's next event, held in its step while round 1's
	// append ends and the canary's event is queued.
	hold, entered := make(chan struct{}), make(chan struct{})
	submit("flood", pput{key: "b", val: "2", owner: "flood", hold: hold, onStep: func() { close(entered) }})
	<-entered
	call.result <- nil
	if err := <-first; err != nil { // durable: round 1 waits only for its commit
		t.Fatal(err)
	}
	committedFirst := make(chan bool, 1)
	reply := make(chan error, 1)
	submit("canary", pput{key: "c", none: true, reply: reply, onStep: func() { _, ok := sh.committed["a"]; committedFirst <- ok }})
	close(hold)
	go func() { // round 2's append
		for c := range log.calls {
			c.result <- nil
		}
	}()
	if <-committedFirst {
		t.Error("the canary's event was stepped after the durable round's commit, want before")
	}
	if err := <-reply; err != nil {
		t.Fatal(err)
	}
	read := make(chan map[string]string, 1)
	if err := rt.Submit(0, runtime.Event{Read: true, Input: get{fn: func(m map[string]string) { read <- m }}}); err != nil {
		t.Fatal(err)
	}
	if m := <-read; m["a"] != "1" || m["b"] != "2" {
		t.Errorf("committed %v, want both rounds' records", m)
	}
}
