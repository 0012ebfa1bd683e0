package assign

import (
	"context"
	"sync"
)

// Pool runs assignor runs and probing-policy checks off the loop's
// partitions, at most its size at once. Work that has not found a slot
// when the pool's context ends never runs.
type Pool struct {
	ctx   context.Context
	wg    *sync.WaitGroup
	slots chan struct{}
}

// NewPool is a pool of size slots whose goroutines end with ctx and are
// counted in wg, so that whoever ends ctx can wait for them.
func NewPool(ctx context.Context, wg *sync.WaitGroup, size int) *Pool {
	return &Pool{ctx: ctx, wg: wg, slots: make(chan struct{}, size)}
}

// Go runs work in the background on a slot; once the slot is free again it
// calls the function work returned, which hands the result on.
func (p *Pool) Go(work func() (then func())) {
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		select {
		case p.slots <- struct{}{}:
		case <-p.ctx.Done():
			return
		}
		then := work()
		<-p.slots
		then()
	}()
}
