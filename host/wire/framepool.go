package wire

import (
	"sync"
	"time"
)

// Buffers of frames forwarded as they came.
//
// A Produce over pooledFrame forwarded to an external cluster
// (passThrough) is written to the link before its answer comes, and its
// buffer is not read again: the next frame over pooledFrame is read into
// it instead of into a fresh one. A fresh buffer of a few MiB is zeroed by
// Go and faulted in page by page by the kernel, and the released ones
// force collections (collectIfDue): kept, the gateway's CPU per GiB of
// franz-go's 6 MB Produce requests halved. The Java producer's requests
// (a 16 KiB batch per partition by default, tens to hundreds of KiB) are
// under largeFrame but over Go's own large-object size, so each fresh one
// is zeroed too: 8 % of the gateway's CPU while one produced through it
// (docs/BENCHMARKS.md). The idle buffers kept are at most a quarter of
// the request budget, the garbage of large frames the forced collection
// otherwise lets accumulate (collectIfDue), and they are let go once none
// was taken for framePoolIdle.

// pooledFrame is the size over which a frame's buffer comes from the
// pool and goes back to it: Go's largest small-object size, above which
// every allocation is zeroed and has pages of its own.
const pooledFrame = 32 << 10

// framePoolIdle is how long kept buffers wait for a large frame before
// they are given to the collector.
const framePoolIdle = 10 * time.Second

// framePool holds buffers of large frames no longer read.
type framePool struct {
	mu    sync.Mutex
	free  [][]byte
	bytes int64 // the capacities of free's buffers
	idle  *time.Timer
}

// frameBuffer returns a buffer of n bytes (over pooledFrame) for a frame
// to be read into: a kept one, or a fresh one.
func (l *Limits) frameBuffer(n int32) []byte {
	if l != nil {
		if b := l.frames.take(int(n)); b != nil {
			return b[:n]
		}
	}
	return make([]byte, n)
}

// take removes and returns the smallest kept buffer of at least n bytes,
// or nil.
func (p *framePool) take(n int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	best := -1
	for i, b := range p.free {
		if cap(b) >= n && (best < 0 || cap(b) < cap(p.free[best])) {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	b := p.free[best]
	last := len(p.free) - 1
	p.free[best], p.free[last] = p.free[last], nil
	p.free = p.free[:last]
	p.bytes -= int64(cap(b))
	return b
}

// recycle keeps the buffer of frame, a frame over pooledFrame that
// nothing reads any more, for the next such frame, while the kept buffers
// stay within a quarter of the budget. A kept frame is no garbage: the
// release of its bytes (release, for a large frame) does not count toward
// a forced collection.
func (l *Limits) recycle(frame []byte) {
	if l == nil || len(frame) <= pooledFrame {
		return
	}
	p := &l.frames
	p.mu.Lock()
	defer p.mu.Unlock()
	c := int64(cap(frame))
	if p.bytes+c > l.budget.size/4 {
		return
	}
	p.free = append(p.free, frame[:0])
	p.bytes += c
	if len(frame) >= largeFrame {
		l.garbage.Add(-int64(len(frame)))
	}
	if p.idle == nil {
		p.idle = time.AfterFunc(framePoolIdle, p.drop)
	} else {
		p.idle.Reset(framePoolIdle)
	}
}

// drop gives every kept buffer to the collector.
func (p *framePool) drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	clear(p.free)
	p.free, p.bytes = nil, 0
}
