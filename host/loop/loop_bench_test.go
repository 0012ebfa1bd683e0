package loop

import (
	"context"
	"fmt"
	"reflect"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/runtime"
	"github.com/coordhost/coordhost/host/wire"
)

// cpuTime is the process's user and system CPU time so far, in ns: on a
// loaded machine the benchmark's wall time moves with other jobs, its CPU
// time far less.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkLoopSteadyHeartbeat measures one steady streams heartbeat
// through the loop (Handle: preparation, the group quota's charge,
// stepping on the partition, the answer) of a member in a one-partition
// loop with a group quota: "reported" sends its (empty) task lists,
// "unreported" null ones, as a Streams client (and interop/hbload) does
// once its tasks are reported.
func BenchmarkLoopSteadyHeartbeat(b *testing.B) {
	for _, reported := range []bool{true, false} {
		name := "reported"
		if !reported {
			name = "unreported"
		}
		b.Run(name, func(b *testing.B) {
			l := quotaLoop(b, assign.Builtins["sticky"].Native)
			epoch := quotaBeat(b, l, "g", 0, 0).MemberEpoch
			req := streamsJoin("g", "m", "in")
			body := req.Body.(*kmsg.StreamsGroupHeartbeatRequest)
			body.MemberEpoch, body.Topology = epoch, nil
			if !reported {
				// Report what the member is given, as its client
				// does, until the answer is its epoch and tasks
				// again (the assignor runs on its own goroutine),
				// then send null lists.
				for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
					resp := beat(b, l, req)
					if resp.MemberEpoch == body.MemberEpoch && len(resp.ActiveTasks) > 0 && reflect.DeepEqual(resp.ActiveTasks, body.ActiveTasks) {
						break
					}
					if time.Now().After(deadline) {
						b.Fatalf("no steady answer: %+v", resp)
					}
					body.MemberEpoch = resp.MemberEpoch
					body.ActiveTasks, body.StandbyTasks, body.WarmupTasks = resp.ActiveTasks, resp.StandbyTasks, resp.WarmupTasks
				}
				body.ActiveTasks, body.StandbyTasks, body.WarmupTasks = nil, nil, nil
			}
			ctx := context.Background()
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				resp, err := l.Handle(ctx, req)
				if err != nil || resp.(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode != 0 {
					b.Fatalf("heartbeat: %v %+v", err, resp)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// beat sends req through l and fails b unless it is answered without an
// error.
func beat(b *testing.B, l *Loop, req *wire.Request) *kmsg.StreamsGroupHeartbeatResponse {
	b.Helper()
	resp, err := l.Handle(context.Background(), req)
	if err != nil || resp.(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode != 0 {
		b.Fatalf("heartbeat: %v %+v", err, resp)
	}
	return resp.(*kmsg.StreamsGroupHeartbeatResponse)
}

// BenchmarkShardMassExpiry: every member of a streams group of n members
// misses its session, and the shard fires the timers in Ticks as the
// runtime hands them (the slices of shard.tick), each Tick's round
// sealed and committed as after its append (records encoded, the
// commit's events noted in the group's history and log). An op is the
// expiry of the whole group; ns/member is one fenced member's share of
// the partition's time, which a waiting group's event shares.
//
//	go test -run '^$' -bench ShardMassExpiry -benchmem ./host/loop
func BenchmarkShardMassExpiry(b *testing.B) {
	for _, n := range []int{10000} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			l := quotaLoop(b, assign.Builtins["sticky"].Native)
			b.ReportAllocs()
			ticks := 0
			for b.Loop() {
				b.StopTimer()
				c, later := expiringGroup(b, n)
				s := &shard{l: l, c: c, pending: map[core.RequestID]*call{}, configured: map[string]bool{}}
				b.StartTimer()
				for {
					if at, ok := s.NextDeadline(); !ok || at > later {
						break
					}
					s.Step(later, runtime.Tick{})
					s.Seal()
					s.Commit()
					ticks++
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/member")
			b.ReportMetric(float64(ticks)/float64(b.N), "ticks/op")
		})
	}
}
