package runtime_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coordhost/coordhost/host/runtime"
)

// BenchmarkRuntimeWorkers: events with a fixed CPU cost (cpuWork) of 64
// groups spread over 50 partitions, 64 clients in flight, on 1 and 2
// workers: how the pool spreads partitions over cores, apart from core's
// cost (docs/BENCHMARKS.md).
func BenchmarkRuntimeWorkers(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			rt := startCfg(b, runtime.Config{Partitions: runtime.DefaultPartitions, Workers: workers, Log: runtime.NewMemLog(),
				NewShard: func(int) (runtime.Shard, error) { return newKV(), nil }})
			defer rt.Close(context.Background())
			var next atomic.Int64
			b.SetParallelism(32) // 64 clients on 2 procs
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				g := fmt.Sprintf("group-%d", next.Add(1))
				p := rt.PartitionFor(g)
				reply := make(chan error, 1)
				for pb.Next() {
					if err := rt.Submit(p, runtime.Event{Input: put{group: g, key: "hb", val: "1", cpu: true, reply: reply}}); err != nil {
						b.Fatal(err)
					}
					if err := <-reply; err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// idleShard is a Finisher that writes no record, as a steady heartbeat
// is stepped: its deadline, a session's, stays 45 s ahead and its
// DeadlineBound is the deadline, so a pending timer covers it.
type idleShard struct{ deadline int64 }

func (s *idleShard) Replay(runtime.Record) error { return nil }
func (s *idleShard) Step(now int64, _ any) []runtime.Record {
	if s.deadline == 0 {
		s.deadline = now + 45_000
	}
	return nil
}
func (s *idleShard) Commit()                      {}
func (s *idleShard) Rollback(error)               {}
func (s *idleShard) NextDeadline() (int64, bool)  { return s.deadline, s.deadline != 0 }
func (s *idleShard) DeadlineBound() (int64, bool) { return s.NextDeadline() }
func (s *idleShard) Unload()                      {}
func (s *idleShard) Seal() func()                 { return nil }
func (s *idleShard) Finish() bool                 { return true }

// BenchmarkSubmitIdle: an Inline event of one group at an idle
// partition, stepped on the submitter's goroutine (solo) by a shard that
// does nothing: the runtime's own cost around a step, quota and timer
// check included (docs/BENCHMARKS.md).
func BenchmarkSubmitIdle(b *testing.B) {
	rt := startCfg(b, runtime.Config{Partitions: 1, Workers: 1, Log: runtime.NewMemLog(), // the real clock, as host/loop runs it
		NewShard: func(int) (runtime.Shard, error) { return &idleShard{}, nil }})
	ev := runtime.Event{Input: struct{}{}, Key: "group-1", Inline: true}
	// The Loaded round goes first, on a worker; the first step arms the
	// timer.
	if err := rt.Submit(0, ev); err != nil {
		b.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := rt.Submit(0, ev); err != nil {
			b.Fatal(err)
		}
	}
}
