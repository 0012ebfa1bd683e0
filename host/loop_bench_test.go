package host_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/loop"
	"github.com/coordhost/coordhost/host/runtime"
)

// BenchmarkLoopHeartbeatWorkers: steady StreamsGroupHeartbeats of 64
// one-member groups spread over 50 partitions, 64 clients in flight,
// through the event loop (runtime, core, no wire) on 1 and 2 workers;
// docs/BENCHMARKS.md compares the two in the same run. cpu-ns/hb is the
// process's CPU time per heartbeat, the clients' included.
func BenchmarkLoopHeartbeatWorkers(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run(fmt.Sprintf("workers=%d", workers), func(b *testing.B) {
			l, err := loop.New(loop.Deps{NewCore: newTestCore, Partitions: runtime.DefaultPartitions, Workers: workers})
			if err != nil {
				b.Fatal(err)
			}
			defer l.Shutdown(context.Background())
			const groups = 64
			epochs := make([]int32, groups)
			for g := range epochs {
				resp, err := handleHB(l, joinRequest(fmt.Sprintf("bench-%d", g), "m"))
				if err != nil || resp.ErrorCode != 0 {
					b.Fatalf("join: %v %v", err, resp)
				}
				epochs[g] = resp.MemberEpoch
			}
			var next atomic.Int64
			b.SetParallelism(groups / 2) // 64 clients on 2 procs
			cpu0 := cpuTime()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				g := int(next.Add(1)-1) % groups
				epoch := epochs[g]
				for pb.Next() {
					req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
					req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, fmt.Sprintf("bench-%d", g), "m", epoch
					resp, err := handleHB(l, req)
					if err != nil || resp.ErrorCode != 0 {
						b.Fatalf("heartbeat: %v %v", err, resp)
					}
					epoch = resp.MemberEpoch
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N), "cpu-ns/hb")
		})
	}
}

// cpuTime is the process's user and system CPU time so far, in ns: the
// loop's and the benchmark clients' together.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
