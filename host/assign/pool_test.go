package assign

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPoolBounds: at most size pieces of work compute at once, and work
// waiting for a slot runs when one is free.
func TestPoolBounds(t *testing.T) {
	var wg sync.WaitGroup
	p := NewPool(context.Background(), &wg, 2)
	release := make(chan struct{})
	var running, peak, handed atomic.Int32
	for range 5 {
		p.Go(func() func() {
			n := running.Add(1)
			for old := peak.Load(); n > old && !peak.CompareAndSwap(old, n); old = peak.Load() {
			}
			<-release
			running.Add(-1)
			return func() { handed.Add(1) }
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for running.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if peak.Load() != 2 || handed.Load() != 5 {
		t.Fatalf("peak %d, handed on %d; want peak 2 (the pool's size), 5 handed on", peak.Load(), handed.Load())
	}
}

// TestPoolHandsOnWithSlotFree: the function work returns runs once the
// slot is free: here it waits for the next work to start on the pool's
// only slot.
func TestPoolHandsOnWithSlotFree(t *testing.T) {
	var wg sync.WaitGroup
	p := NewPool(context.Background(), &wg, 1)
	second := make(chan struct{})
	p.Go(func() func() {
		p.Go(func() func() { close(second); return func() {} })
		return func() {
			select {
			case <-second:
			case <-time.After(10 * time.Second):
				t.Error("the result was handed on while the work still held the only slot")
			}
		}
	})
	wg.Wait()
}

// TestPoolDropsAfterEnd: work that finds no free slot once the pool's
// context has ended never runs.
func TestPoolDropsAfterEnd(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	p := NewPool(ctx, &wg, 1)
	release, started := make(chan struct{}), make(chan struct{})
	p.Go(func() func() { close(started); <-release; return func() {} })
	<-started
	cancel()
	var late sync.WaitGroup // the same slots, its own count: it ends before the slot frees
	q := &Pool{ctx: ctx, wg: &late, slots: p.slots}
	var ran atomic.Bool
	q.Go(func() func() { ran.Store(true); return func() {} })
	late.Wait()
	close(release)
	wg.Wait()
	if ran.Load() {
		t.Fatal("work handed in after the context ended ran")
	}
}
