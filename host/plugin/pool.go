package plugin

import (
	"context"

	"github.com/tetratelabs/wazero/api"
)

// instance is one instantiated module: a single-threaded guest process.
type instance struct {
	mod    api.Module
	assign api.Function
	probe  api.Function
	parts  api.Function // coordhost_assign_partitions
	kinds  int32
}

// pool bounds the instances of one module: tokens limits how many exist
// (and so how many calls run) at once; idle holds those ready for reuse.
type pool struct {
	tokens chan struct{}
	idle   chan *instance
}

func newPool(size int) *pool {
	return &pool{tokens: make(chan struct{}, size), idle: make(chan *instance, size)}
}

// slot waits for room for one more call, or for ctx to end.
func (p *pool) slot(ctx context.Context) error {
	select {
	case p.tokens <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// idleInstance returns a reusable instance, or nil if a new one is needed.
func (p *pool) idleInstance() *instance {
	select {
	case inst := <-p.idle:
		return inst
	default:
		return nil
	}
}

// release ends a call: a healthy instance goes back to the idle set.
func (p *pool) release(inst *instance) {
	if inst != nil {
		p.idle <- inst
	}
	<-p.tokens
}

// drain closes the idle instances (the module is being closed).
func (p *pool) drain(ctx context.Context) {
	for {
		select {
		case inst := <-p.idle:
			_ = inst.mod.Close(ctx)
		default:
			return
		}
	}
}
