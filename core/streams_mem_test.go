package core

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"testing"
)

// memFleet is the shape of the wire memory comparison (docs/BENCHMARKS.md,
// "wire: memory and replay"): groups streams groups of members members,
// one subtopology reading one shared topic of members partitions, one
// standby replica, every member joined and steady. It returns the
// coordinator alone (the harness's log and clients dropped).
func memFleet(tb testing.TB, groups, members int) *Coordinator {
	cfg := DefaultConfig()
	cfg.Streams.NumStandbyReplicas = 1
	h := newHarness(tb, cfg)
	h.lastTopics = []TopicMetadata{{Name: "src", ID: [16]byte{1}, Partitions: int32(members)}}
	h.finish(h.c.UpdateTopics(h.now, h.lastTopics), false)
	h.topologies["default"] = parseTopology(0, "sub 0 sources=src")
	join := func() int {
		before := len(h.log)
		for g := 0; g < groups; g++ {
			for m := 0; m < members; m++ {
				h.heartbeat(map[string]string{"group": fmt.Sprintf("mem-%04d", g), "member": fmt.Sprintf("mem-%04d-m%02d-0123456789abcdef", g, m),
					"process": fmt.Sprintf("process-%04d-%02d-0123456789abcdef", g, m)})
			}
		}
		for g := 0; g < groups; g++ {
			h.answerRuns(fmt.Sprintf("mem-%04d", g), "ref", false)
		}
		return len(h.log) - before
	}
	stable := func() bool {
		for g := 0; g < groups; g++ {
			if h.c.groups[fmt.Sprintf("mem-%04d", g)].StateName() != "Stable" {
				return false
			}
		}
		return true
	}
	quiet := 0
	for round := 0; quiet < 2; round++ { // two passes that change nothing, as hbload waits for
		if round > 50 {
			tb.Fatal("the fleet did not settle in 50 rounds")
		}
		h.advanceTo(h.now + 1000)
		if join() == 0 && stable() {
			quiet++
		} else {
			quiet = 0
		}
	}
	return h.c
}

func liveHeap() int64 {
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return int64(s[0].Value.Uint64())
}

var memSink *Coordinator

// BenchmarkStreamsMemberMemory reports the live heap a coordinator holds
// per steady streams member in 1,000 groups × 10 members (the wire
// comparison's shape; run with -benchtime=1x).
func BenchmarkStreamsMemberMemory(b *testing.B) {
	for i := 0; i < b.N; i++ {
		memSink = nil
		base := liveHeap()
		memSink = memFleet(b, 1000, 10)
		grown := liveHeap() - base
		b.ReportMetric(float64(grown)/10000, "B/member")
	}
}
