package core

import (
	"fmt"
	"testing"
)

// BenchmarkMassExpiry: every member of a Stable group of n members (4
// tasks each, built by replay as BenchmarkHeartbeatSteady builds it)
// misses its session, and the host fires the timers one at a time
// (Tick{Limit: 1}, as the loop's shard does) with a commit after each.
// An op is the expiry of the whole group; ns/member and allocs/member
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
					out, err := c.Step(at, Tick{Limit: 1})
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
