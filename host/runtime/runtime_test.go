package runtime_test

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/coordhost/coordhost/host/runtime"
	"github.com/coordhost/coordhost/host/store"
	"github.com/coordhost/coordhost/host/store/kafkalog"
)

// kvShard is a test coordinator: groups hold string values; a put writes
// the record "group/key" = value and is answered after Commit.
type kvShard struct {
	committed, pending map[string]string
	replies            []chan error
	deadline           int64
	ticks              *int
	slow               time.Duration
}

type put struct {
	group, key, val string
	slow, cpu       bool
	reply           chan error
	// onStep, if set, is called when the put is stepped.
	onStep func()
}

type get struct {
	fn func(map[string]string)
}

func newKV() *kvShard { return &kvShard{committed: map[string]string{}, pending: map[string]string{}} }

func (s *kvShard) Replay(r runtime.Record) error {
	if r.Value == nil {
		delete(s.committed, string(r.Key))
		return nil
	}
	s.committed[string(r.Key)] = string(r.Value)
	return nil
}

func (s *kvShard) Step(_ int64, in any) []runtime.Record {
	switch in := in.(type) {
	case put:
		if in.slow {
			time.Sleep(s.slow)
		}
		if in.cpu {
			cpuWork()
		}
		if in.onStep != nil {
			in.onStep()
		}
		k := in.group + "/" + in.key
		s.pending[k] = in.val
		if in.reply != nil {
			s.replies = append(s.replies, in.reply)
		}
		return []runtime.Record{{Key: []byte(k), Value: []byte(in.val)}}
	case get:
		in.fn(maps.Clone(s.committed))
	case runtime.Tick:
		if s.ticks != nil {
			*s.ticks++
		}
		s.deadline = 0
	}
	return nil
}

func (s *kvShard) Commit() {
	maps.Copy(s.committed, s.pending)
	clear(s.pending)
	for _, r := range s.replies {
		r <- nil
	}
	s.replies = nil
}

func (s *kvShard) Rollback(err error) {
	clear(s.pending)
	for _, r := range s.replies {
		r <- err
	}
	s.replies = nil
}

func (s *kvShard) NextDeadline() (int64, bool) { return s.deadline, s.deadline != 0 }
func (s *kvShard) Unload()                     {}

// backends are the logs every runtime test runs on.
// lentLog is a runtime.LendingLog over a MemLog whose ReplayLent hands
// each record in one buffer overwritten after fn returns, as a store
// lends its file's pages, and whose Replay fails: a load must go through
// ReplayLent, and the shard must keep nothing of a record's bytes.
type lentLog struct{ *runtime.MemLog }

func (l lentLog) Replay(int, func(runtime.Record) error) error {
	return errors.New("lentLog: a load used Replay, not ReplayLent")
}

func (l lentLog) ReplayLent(p int, fn func(runtime.Record) error) error {
	var buf []byte
	return l.MemLog.Replay(p, func(r runtime.Record) error {
		buf = append(append(buf[:0], r.Key...), r.Value...)
		lent := runtime.Record{Key: buf[:len(r.Key):len(r.Key)]}
		if r.Value != nil {
			lent.Value = buf[len(r.Key):]
		}
		err := fn(lent)
		for i := range buf {
			buf[i] = '#'
		}
		return err
	})
}

func backends(t *testing.T, parts int) map[string]func() runtime.Log {
	dir := t.TempDir()
	var st *store.Store
	var kc *kfake.Cluster
	return map[string]func() runtime.Log{
		"memory": func() runtime.Log { return runtime.NewMemLog() },
		"lent":   func() runtime.Log { return lentLog{runtime.NewMemLog()} },
		"fault":  func() runtime.Log { return runtime.NewFaultLog(runtime.NewMemLog()) },
		"bbolt": func() runtime.Log {
			if st == nil {
				var err error
				if st, err = store.Open(filepath.Join(dir, "coordhost.db")); err != nil {
					t.Fatal(err)
				}
				if err := st.Partition(parts, func(k []byte) (string, error) { g, _, _ := strings.Cut(string(k), "/"); return g, nil }); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { st.Close() })
			}
			l, err := store.NewLog(st)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			return l
		},
		// kafka: the state topic on an in-process cluster; a second log
		// on it takes the partitions over when it replays them.
		"kafka": func() runtime.Log {
			if kc == nil {
				var err error
				if kc, err = kfake.NewCluster(kfake.NumBrokers(1)); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(kc.Close)
			}
			l, err := kafkalog.Open(context.Background(), kafkalog.Config{ClientOpts: []kgo.Opt{kgo.SeedBrokers(kc.ListenAddrs()...)},
				Partitions: parts, Timeout: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			return l
		},
	}
}

func start(t *testing.T, log runtime.Log, parts, workers int, shards map[int]*kvShard) *runtime.Runtime {
	t.Helper()
	var mu sync.Mutex
	return startCfg(t, runtime.Config{Partitions: parts, Workers: workers, Log: log, NewShard: func(p int) (runtime.Shard, error) {
		s := newKV()
		mu.Lock()
		shards[p] = s
		mu.Unlock()
		return s, nil
	}})
}

// startCfg starts a runtime that holds every partition.
func startCfg(tb testing.TB, cfg runtime.Config) *runtime.Runtime {
	tb.Helper()
	if cfg.RoundTime == 0 {
		cfg.RoundTime = time.Hour // rounds as the tests expect them on a loaded machine
	}
	if cfg.YieldTime == 0 {
		cfg.YieldTime = time.Hour
	}
	rt, err := runtime.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close(context.Background()) })
	if err := rt.LoadAll(context.Background()); err != nil {
		tb.Fatal(err)
	}
	return rt
}

func doPut(rt *runtime.Runtime, group, key, val string) error {
	reply := make(chan error, 1)
	if err := rt.Submit(rt.PartitionFor(group), runtime.Event{Input: put{group: group, key: key, val: val, reply: reply}}); err != nil {
		return err
	}
	return <-reply
}

func readAll(t *testing.T, rt *runtime.Runtime) map[string]string {
	t.Helper()
	all := map[string]string{}
	for p := 0; p < rt.Partitions(); p++ {
		done := make(chan map[string]string, 1)
		if err := rt.Submit(p, runtime.Event{Read: true, Input: get{fn: func(m map[string]string) { done <- m }}}); err != nil {
			t.Fatal(err)
		}
		maps.Copy(all, <-done)
	}
	return all
}

// TestRuntimeCommitsAndReplays: writes of many groups land in their
// partitions; a second runtime on the same log replays the same state.
func TestRuntimeCommitsAndReplays(t *testing.T) {
	const parts = 7
	for name, mk := range backends(t, parts) {
		t.Run(name, func(t *testing.T) {
			log := mk()
			shards := map[int]*kvShard{}
			rt := start(t, log, parts, 2, shards)
			var wg sync.WaitGroup
			for g := 0; g < 20; g++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < 10; i++ {
						if err := doPut(rt, fmt.Sprintf("group-%d", g), fmt.Sprint(i%3), fmt.Sprint(i)); err != nil {
							t.Error(err)
						}
					}
				}()
			}
			wg.Wait()
			want := readAll(t, rt)
			if len(want) != 60 || want["group-3/0"] != "9" {
				t.Fatalf("state: %d keys, group-3/0=%q", len(want), want["group-3/0"])
			}
			for k := range want {
				g, _, _ := strings.Cut(k, "/")
				if _, ok := shards[runtime.PartitionFor(g, parts)].committed[k]; !ok {
					t.Fatalf("%s is not in its group's partition", k)
				}
			}
			if err := rt.Close(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := rt.Close(context.Background()); err != nil {
				t.Fatalf("second Close: %v", err)
			}
			again := start(t, log, parts, 1, map[int]*kvShard{})
			if got := readAll(t, again); !maps.Equal(got, want) {
				t.Fatalf("replayed %v, want %v", got, want)
			}
		})
	}
}

// TestRuntimeLoadStates: a partition not held answers ErrNotCoordinator,
// one loading ErrLoadInProgress; unloading rejects what is queued after it.
func TestRuntimeLoadStates(t *testing.T) {
	for name, mk := range backends(t, 3) {
		t.Run(name, func(t *testing.T) {
			gate := make(chan struct{})
			rt, err := runtime.New(runtime.Config{Partitions: 3, Workers: 1, Log: mk(), NewShard: func(p int) (runtime.Shard, error) {
				if p == 1 {
					<-gate
				}
				return newKV(), nil
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer rt.Close(context.Background())
			if err := rt.Submit(0, runtime.Event{Input: put{group: "g"}}); !errors.Is(err, runtime.ErrNotCoordinator) {
				t.Fatalf("before load: %v", err)
			}
			loaded := make(chan error, 1)
			go func() { loaded <- rt.Load(context.Background(), 1) }()
			// NewShard of partition 1 blocks on gate: the partition stays loading.
			for end := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
				err := rt.Submit(1, runtime.Event{Input: put{group: "g"}})
				if errors.Is(err, runtime.ErrLoadInProgress) {
					break
				}
				if !errors.Is(err, runtime.ErrNotCoordinator) || time.Now().After(end) {
					t.Fatalf("while loading: %v", err)
				}
			}
			if rt.Held(1) {
				t.Fatal("a loading partition is reported held")
			}
			close(gate)
			if err := <-loaded; err != nil {
				t.Fatal(err)
			}
			reply := make(chan error, 1)
			if err := rt.Submit(1, runtime.Event{Input: put{group: "g", key: "k", val: "v", reply: reply}}); err != nil || <-reply != nil {
				t.Fatalf("after load: %v", err)
			}
			if err := rt.Unload(context.Background(), 1); err != nil {
				t.Fatal(err)
			}
			if err := rt.Submit(1, runtime.Event{Input: put{group: "g"}}); !errors.Is(err, runtime.ErrNotCoordinator) {
				t.Fatalf("after unload: %v", err)
			}
			if err := rt.Load(context.Background(), 1); err != nil {
				t.Fatal(err)
			}
			done := make(chan map[string]string, 1)
			rt.Submit(1, runtime.Event{Read: true, Input: get{fn: func(m map[string]string) { done <- m }}})
			if m := <-done; m["g/k"] != "v" {
				t.Fatalf("reloaded partition lost its write: %v", m)
			}
		})
	}
}

// TestRuntimeIsolatesFailures: an append that fails (storage, fencing) or
// a record the log cannot hold rolls back only its partition's round.
func TestRuntimeIsolatesFailures(t *testing.T) {
	const parts = 5
	fl := runtime.NewFaultLog(runtime.NewMemLog())
	rt := start(t, fl, parts, 2, map[int]*kvShard{})
	bad, good := "group-a", "group-b"
	for runtime.PartitionFor(good, parts) == runtime.PartitionFor(bad, parts) {
		good += "x"
	}
	fl.FailAppends(rt.PartitionFor(bad), 1, runtime.ErrStorage)
	if err := doPut(rt, bad, "k", "1"); !errors.Is(err, runtime.ErrStorage) {
		t.Fatalf("storage failure: %v", err)
	}
	if err := doPut(rt, good, "k", "1"); err != nil {
		t.Fatalf("another partition during a failure: %v", err)
	}
	fl.FailAppends(rt.PartitionFor(bad), 1, runtime.ErrFenced)
	if err := doPut(rt, bad, "k", "2"); !errors.Is(err, runtime.ErrFenced) {
		t.Fatalf("fenced: %v", err)
	}
	huge := strings.Repeat("k", 1<<10+1)
	ml := runtime.NewMemLog()
	ml.MaxKey = 1 << 10
	rt2 := start(t, ml, parts, 2, map[int]*kvShard{})
	if err := doPut(rt2, bad, huge, "1"); !errors.Is(err, runtime.ErrInvalidRecord) {
		t.Fatalf("huge key: %v", err)
	}
	if err := doPut(rt2, good, "k", "1"); err != nil {
		t.Fatal(err)
	}
	if err := doPut(rt2, bad, "k", "3"); err != nil {
		t.Fatalf("the partition after its invalid record: %v", err)
	}
	got := readAll(t, rt)
	want := map[string]string{good + "/k": "1"}
	if !maps.Equal(got, want) {
		t.Fatalf("state after failures: %v, want %v", got, want)
	}
}

// TestRuntimeTicks: a shard's deadline gets it a Tick.
func TestRuntimeTicks(t *testing.T) {
	ticks := 0
	var s *kvShard
	rt := startCfg(t, runtime.Config{Partitions: 1, Log: runtime.NewMemLog(), NewShard: func(int) (runtime.Shard, error) {
		s = newKV()
		s.ticks = &ticks
		s.deadline = time.Now().Add(20 * time.Millisecond).UnixMilli()
		return s, nil
	}})
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := readTicks(rt, &ticks)
		if n >= 1 { // a timer reset racing its firing may add a spare tick
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d ticks after the deadline", n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRuntimeTickAfterDeadlineMoves: the partition's timer, armed for a
// deadline 10 s away, does not hold the Tick back when a step brings the
// deadline 10 s nearer, nor when the runtime's clock (Config.Now) jumps
// past the deadline it is armed for while the deadline stays put.
func TestRuntimeTickAfterDeadlineMoves(t *testing.T) {
	for _, tc := range []struct {
		name  string
		jump  time.Duration // the clock's jump before the step
		moved bool          // the step moves the deadline to the clock's now + 20 ms
	}{{"deadline nearer", 0, true}, {"clock jumps", 10 * time.Second, false}} {
		t.Run(tc.name, func(t *testing.T) {
			var offset atomic.Int64
			now := func() time.Time { return time.Now().Add(time.Duration(offset.Load())) }
			ticks := 0
			var s *kvShard
			rt := startCfg(t, runtime.Config{Partitions: 1, Log: runtime.NewMemLog(), Now: now, NewShard: func(int) (runtime.Shard, error) {
				s = newKV()
				s.ticks = &ticks
				s.deadline = now().Add(10 * time.Second).UnixMilli()
				return s, nil
			}})
			readTicks(rt, &ticks) // the timer is armed for the first deadline
			offset.Store(int64(tc.jump))
			stepped := make(chan error, 1)
			rt.Submit(0, runtime.Event{Key: "g", Input: put{group: "g", key: "k", val: "v", reply: stepped, onStep: func() {
				if tc.moved {
					s.deadline = now().Add(20 * time.Millisecond).UnixMilli()
				}
			}}})
			if err := <-stepped; err != nil {
				t.Fatal(err)
			}
			giveUp := time.Now().Add(3 * time.Second)
			for {
				if readTicks(rt, &ticks) >= 1 {
					return
				}
				if time.Now().After(giveUp) {
					t.Fatalf("no Tick 3 s after the step (deadline 20 ms away, or passed)")
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// boundShard is a kvShard with a DeadlineBound, bound, that counts its
// NextDeadline calls.
type boundShard struct {
	*kvShard
	bound int64
	exact atomic.Int32
}

func (s *boundShard) NextDeadline() (int64, bool) {
	s.exact.Add(1)
	return s.kvShard.NextDeadline()
}

func (s *boundShard) DeadlineBound() (int64, bool) { return s.bound, s.bound != 0 }

// startBound starts cfg with one partition, its shard a boundShard whose
// deadline and bound are 10 s away, the timer armed for them; ticks
// counts its Ticks (readTicks).
func startBound(t *testing.T, cfg runtime.Config) (*runtime.Runtime, *boundShard, *int) {
	t.Helper()
	ticks := new(int)
	var s *boundShard
	cfg.Partitions, cfg.Log = 1, runtime.NewMemLog()
	cfg.NewShard = func(int) (runtime.Shard, error) {
		s = &boundShard{kvShard: newKV()}
		s.ticks = ticks
		s.deadline = time.Now().Add(10 * time.Second).UnixMilli()
		s.bound = s.deadline
		return s, nil
	}
	rt := startCfg(t, cfg)
	readTicks(rt, ticks) // the timer is armed for the first deadline
	return rt, s, ticks
}

// While the pending Tick is due no later than a shard's DeadlineBound,
// a round does not ask for the exact deadline (a steady heartbeat moving
// the exact one later costs core a heap entry's move); once the bound
// moves earlier than the pending Tick, the exact deadline is armed.
func TestRuntimeArmsFromDeadlineBound(t *testing.T) {
	rt, s, ticks := startBound(t, runtime.Config{})
	put := func(onStep func()) {
		stepped := make(chan error, 1)
		rt.Submit(0, runtime.Event{Key: "g", Input: put{group: "g", key: "k", val: "v", reply: stepped, onStep: onStep}})
		if err := <-stepped; err != nil {
			t.Fatal(err)
		}
	}
	before := s.exact.Load()
	for range 5 { // the exact deadline moves later, the bound stays
		put(func() { s.deadline += 1000 })
	}
	readTicks(rt, ticks)
	if n := s.exact.Load() - before; n != 0 {
		t.Fatalf("NextDeadline asked %d times while the pending Tick was no later than the bound", n)
	}
	put(func() { s.deadline = time.Now().Add(20 * time.Millisecond).UnixMilli(); s.bound = s.deadline })
	giveUp := time.Now().Add(3 * time.Second)
	for readTicks(rt, ticks) < 1 {
		if time.Now().After(giveUp) {
			t.Fatalf("no Tick 3 s after the bound and the deadline moved 20 ms away")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// readTicks returns *ticks as partition 0's shard has counted them once
// every round before this read is done.
func readTicks(rt *runtime.Runtime, ticks *int) int {
	n := -1
	done := make(chan struct{})
	rt.Submit(0, runtime.Event{Read: true, Input: get{fn: func(map[string]string) { n = *ticks; close(done) }}})
	<-done
	return n
}

var cpuBuf = make([]byte, 16<<10)

// cpuWork is a fixed amount of computation (a SHA-256 of 16 KiB, tens of
// microseconds), standing for an event that keeps its worker busy.
func cpuWork() [32]byte { return sha256.Sum256(cpuBuf) }

func p99(ds []time.Duration) time.Duration {
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)*99/100]
}

// rejectingPut is an Input that is its own Rejecter.
type rejectingPut struct{ rejected chan error }

func (r rejectingPut) Reject(err error) { r.rejected <- err }

// TestRuntimeUnloadTwiceAndQueuedRejects: events queued behind an unload
// are rejected, not lost, and a second unload queued behind the first
// returns with it.
func TestRuntimeUnloadTwiceAndQueuedRejects(t *testing.T) {
	gate := make(chan struct{})
	rt := startCfg(t, runtime.Config{Partitions: 1, Workers: 1, Log: runtime.NewMemLog(), NewShard: func(int) (runtime.Shard, error) { return newKV(), nil }})
	// Hold the worker so that what follows queues behind this event.
	if err := rt.Submit(0, runtime.Event{Read: true, Input: get{fn: func(map[string]string) { <-gate }}}); err != nil {
		t.Fatal(err)
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if err := rt.Unload(gone, 0); !errors.Is(err, context.Canceled) { // queued; not waited for
		t.Fatalf("unload: %v", err)
	}
	rejected := make(chan error, 1)
	if err := rt.Submit(0, runtime.Event{Input: put{group: "g"}, Reject: func(err error) { rejected <- err }}); err != nil {
		t.Fatal(err)
	}
	// An Input that is a Rejecter is rejected through it.
	rejecter := rejectingPut{rejected: make(chan error, 1)}
	if err := rt.Submit(0, runtime.Event{Input: rejecter}); err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		second <- rt.Unload(ctx, 0)
	}()
	time.Sleep(100 * time.Millisecond) // let the second unload queue
	close(gate)
	if err := <-rejected; !errors.Is(err, runtime.ErrNotCoordinator) {
		t.Fatalf("event behind an unload: %v", err)
	}
	select {
	case err := <-rejecter.rejected:
		if !errors.Is(err, runtime.ErrNotCoordinator) {
			t.Fatalf("Rejecter behind an unload: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a Rejecter behind an unload was not rejected")
	}
	if err := <-second; err != nil {
		t.Fatalf("second unload: %v", err)
	}
	if rt.Held(0) {
		t.Fatal("partition still held")
	}
}
