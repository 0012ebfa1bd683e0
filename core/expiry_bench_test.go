package core

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkMassExpiry: every member of a Stable group of n members (4
// tasks each, built by replay as BenchmarkHeartbeatSteady builds it)
// misses its session, and the host fires the timers one at a time
// (Tick{Limit: 1, Scratch: true}, as the loop's shard does) with a
// commit after each. An op is the expiry of the whole group; ns/member and allocs/member
// are one fenced member's share, the cost a mass expiry puts on its
// partition per step.
//
//	go test -run '^$' -bench MassExpiry -benchmem ./core
func BenchmarkMassExpiry(b *testing.B) {
	for _, n := range []int{2000} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				c, _ := steadyGroup(b, n)
				at, ok := c.NextDeadline()
				if !ok {
					b.Fatal("no session timers")
				}
				b.StartTimer()
				fired := 0
				for {
					if next, ok := c.NextDeadline(); !ok || next > at {
						break
					}
					out, err := c.Step(at, Tick{Limit: 1, Scratch: true})
					if err != nil {
						b.Fatal(err)
					}
					c.Commit()
					if len(out.Records) > 0 {
						fired++
					}
				}
				if fired != n {
					b.Fatalf("%d members fenced, want %d", fired, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/member")
		})
	}
}

// BenchmarkJoinStartsRun: a member joins a Stable group of n members (4
// tasks each) and its join starts an assignor run; an op is that join's
// step and commit, the step a flood of joins puts on the group's
// partition. deferred: the run's input is left to BuildInput
// (DeferAssignorInputs), as the host builds it on a worker. Between ops,
// untimed, the member leaves again and the runs are forgotten.
//
//	go test -run '^$' -bench JoinStartsRun -benchmem ./core
func BenchmarkJoinStartsRun(b *testing.B) {
	for _, n := range []int{2000} {
		for _, deferred := range []bool{false, true} {
			b.Run(fmt.Sprintf("members=%d/deferred=%v", n, deferred), func(b *testing.B) {
				c, _ := steadyGroup(b, n)
				if deferred {
					c.DeferAssignorInputs()
				}
				g := c.groups["g"].(*streamsGroup)
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					i++
					id := fmt.Sprintf("joiner-%d", i)
					req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
					req.Version, req.Group, req.MemberID, req.RebalanceTimeoutMillis = 1, "g", id, 30000
					req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
						{SubtopologyID: "0", SourceTopics: []string{"in"}}}}
					req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
					out, err := c.Step(int64(1000+i), Request{ID: RequestID(i), Body: req})
					if err != nil || len(out.AssignorRuns) != 1 {
						b.Fatalf("the join started %d runs: %v", len(out.AssignorRuns), err)
					}
					c.Commit()
					b.StopTimer()
					g.soft.inflight = nil
					leave := kmsg.NewPtrStreamsGroupHeartbeatRequest()
					leave.Version, leave.Group, leave.MemberID, leave.MemberEpoch = 1, "g", id, -1
					if _, err := c.Step(int64(1000+i), Request{ID: RequestID(i), Body: leave}); err != nil {
						b.Fatal(err)
					}
					c.Commit()
					g.soft.inflight = nil
					b.StartTimer()
				}
			})
		}
	}
}
