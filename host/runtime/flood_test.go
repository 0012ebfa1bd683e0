package runtime_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coordhost/coordhost/host/runtime"
)

// floodWork is the cost of one flooding event (a join or a huge streams
// heartbeat of the flooded group), spent holding the worker.
const floodWork = 2 * time.Millisecond

// canaryP99 runs canary groups (on partitions other than the flooded
// group's when there are several) that each send sequential writes, while
// flood (when true) keeps 32 expensive events queued for the flooded
// group; it returns the canaries' p99 latency.
func canaryP99(t *testing.T, parts int, flood bool) time.Duration {
	rt := startCfg(t, runtime.Config{Partitions: parts, Workers: 2, Log: runtime.NewMemLog(), NewShard: func(int) (runtime.Shard, error) {
		s := newKV()
		s.slow = floodWork
		return s, nil
	}})
	defer rt.Close(context.Background())
	const floodGroup = "flood"
	var canaries []string
	for i := 0; len(canaries) < 4; i++ {
		g := fmt.Sprintf("canary-%d", i)
		if parts == 1 || rt.PartitionFor(g) != rt.PartitionFor(floodGroup) {
			canaries = append(canaries, g)
		}
	}
	stop := make(chan struct{})
	var floodWG sync.WaitGroup
	var flooded atomic.Int64
	if flood {
		for w := 0; w < 32; w++ {
			floodWG.Add(1)
			go func() {
				defer floodWG.Done()
				reply := make(chan error, 1)
				for {
					select {
					case <-stop:
						return
					default:
					}
					if rt.Submit(rt.PartitionFor(floodGroup), runtime.Event{Input: put{group: floodGroup, key: "m", val: "v", slow: true, reply: reply}}) != nil {
						return
					}
					<-reply
					flooded.Add(1)
				}
			}()
		}
		time.Sleep(50 * time.Millisecond)
	}
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	for _, g := range canaries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				start := time.Now()
				if err := doPut(rt, g, "hb", fmt.Sprint(i)); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				lat = append(lat, time.Since(start))
				mu.Unlock()
				time.Sleep(3 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	close(stop)
	floodWG.Wait()
	p := p99(lat)
	t.Logf("partitions=%d flood=%v: canary p99 %v over %d heartbeats; %d flood events", parts, flood, p, len(lat), flooded.Load())
	return p
}

// TestFloodedGroupLeavesOtherPartitionsAlone: while one group floods its
// partition with expensive events, canary groups on other partitions keep
// their p99 within 2× of their unflooded p99 (floored at 1 ms, the
// resolution of the sleeps between heartbeats) and under 50 ms; with the
// runtime forced to one partition the same flood pushes them over 50 ms.
// A timing test: it runs with COORDHOST_FLOOD=1 (about 10 s).
func TestFloodedGroupLeavesOtherPartitionsAlone(t *testing.T) {
	if os.Getenv("COORDHOST_FLOOD") != "1" {
		t.Skip("timing test: set COORDHOST_FLOOD=1 to run it")
	}
	base := canaryP99(t, runtime.DefaultPartitions, false)
	sharded := canaryP99(t, runtime.DefaultPartitions, true)
	if limit := 2 * max(base, time.Millisecond); sharded > limit || sharded > 50*time.Millisecond {
		t.Errorf("50 partitions: flooded canary p99 %v, unflooded %v: want ≤ %v and ≤ 50ms", sharded, base, limit)
	}
	one := canaryP99(t, 1, true)
	if one <= 50*time.Millisecond {
		t.Errorf("one partition: flooded canary p99 %v, want the flood to push it over 50ms", one)
	}
}
