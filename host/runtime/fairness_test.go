package runtime_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordhost/coordhost/host/runtime"
)

// traceShard records what the runtime does with it: "step <name>" for each
// input stepped, "commit" and "append <n>" for each commit and append.
// An input "write:<name>" writes one record; "gate" waits for the gate.
type traceShard struct {
	mu      sync.Mutex
	trace   []string
	entered chan struct{} // closed when the gate is stepped
	gate    chan struct{}
	steps   int // close done after this many steps and a commit
	done    chan struct{}
}

func (s *traceShard) note(e string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trace = append(s.trace, e)
	if e == "commit" && s.steps == 0 && s.done != nil {
		close(s.done)
		s.done = nil
	}
	if strings.HasPrefix(e, "step ") {
		s.steps--
	}
}

func (s *traceShard) Replay(runtime.Record) error { return nil }

func (s *traceShard) Step(_ int64, in any) []runtime.Record {
	name, ok := in.(string)
	if !ok {
		return nil // Loaded, Tick
	}
	if name == "gate" {
		close(s.entered)
		<-s.gate
	}
	s.note("step " + name)
	if w, ok := strings.CutPrefix(name, "write:"); ok {
		return []runtime.Record{{Key: []byte(w), Value: []byte("v")}}
	}
	return nil
}

func (s *traceShard) Commit()                     { s.note("commit") }
func (s *traceShard) Rollback(error)              { s.note("rollback") }
func (s *traceShard) NextDeadline() (int64, bool) { return 0, false }
func (s *traceShard) Unload()                     {}

// TestRoundFairness: events queued behind a busy round are taken at most
// MaxPerKey of one key per round; events without a key come first, then
// the keys with the fewest events in the round, each key in its order;
// an event that wrote nothing while nothing waits to be appended is
// committed before the next is stepped.
func TestRoundFairness(t *testing.T) {
	sh := &traceShard{entered: make(chan struct{}), gate: make(chan struct{}), steps: 8, done: make(chan struct{})}
	done := sh.done
	rt := startCfg(t, runtime.Config{Partitions: 1, Workers: 1, MaxPerKey: 2, Log: runtime.NewMemLog(),
		NewShard: func(int) (runtime.Shard, error) { return sh, nil }})
	if err := rt.Submit(0, runtime.Event{Input: "gate"}); err != nil {
		t.Fatal(err)
	}
	<-sh.entered // the events below queue behind the gate's round
	for _, ev := range []runtime.Event{
		{Input: "write:f1", Key: "flood"}, {Input: "write:f2", Key: "flood"}, {Input: "write:f3", Key: "flood"},
		{Input: "c1", Key: "canary"},
		{Input: "write:f4", Key: "flood"}, {Input: "write:f5", Key: "flood"},
		{Input: "input"},
	} {
		if err := rt.Submit(0, ev); err != nil {
			t.Fatal(err)
		}
	}
	close(sh.gate)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the queued events were not all handled in 10s")
	}
	sh.mu.Lock()
	trace := sh.trace
	sh.mu.Unlock()
	want := []string{
		"commit", "step gate", "commit",
		"step input", "commit", "step c1", "commit", "step write:f1", "step write:f2", "commit",
		"step write:f3", "step write:f4", "commit",
		"step write:f5", "commit",
	}
	if strings.Join(trace, "|") != strings.Join(want, "|") {
		t.Errorf("trace\n got %q\nwant %q", trace, want)
	}
}

// blockingLog holds partition 0's appends until release is closed.
type blockingLog struct {
	runtime.Log
	entered chan struct{}
	release chan struct{}
	once    sync.Once
}

func (l *blockingLog) Append(p int, recs []runtime.Record) error {
	if p == 0 {
		l.once.Do(func() { close(l.entered) })
		<-l.release
	}
	return l.Log.Append(p, recs)
}

// TestSlowAppendDoesNotHoldWorker: with one worker, a partition whose
// append waits for the disk does not keep another partition's write
// from being handled and answered.
func TestSlowAppendDoesNotHoldWorker(t *testing.T) {
	log := &blockingLog{Log: runtime.NewMemLog(), entered: make(chan struct{}), release: make(chan struct{})}
	defer close(log.release)
	rt := startCfg(t, runtime.Config{Partitions: 2, Workers: 1, Log: log,
		NewShard: func(int) (runtime.Shard, error) { return newKV(), nil }})
	var groups [2]string
	for i := 0; groups[0] == "" || groups[1] == ""; i++ {
		g := fmt.Sprintf("g%d", i)
		groups[rt.PartitionFor(g)] = g
	}
	stuck := make(chan error, 1)
	go func() { stuck <- doPut(rt, groups[0], "k", "v") }()
	<-log.entered
	done := make(chan error, 1)
	go func() { done <- doPut(rt, groups[1], "k", "v") }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("partition 1's write waited for partition 0's append")
	}
	select {
	case err := <-stuck:
		t.Fatalf("partition 0's write answered before its append: %v", err)
	default:
	}
}
