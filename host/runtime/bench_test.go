package runtime_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

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
