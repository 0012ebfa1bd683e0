package plugin

import "sync"

// maxPooledBuffer is the largest buffer kept for reuse; a call with a
// larger request or response allocates its own.
const maxPooledBuffer = 16 << 20

// buffers holds the byte buffers of calls (encoded requests, copied
// outputs): a call's host work then allocates no buffer once the pool has
// seen a call of the same size.
var buffers = sync.Pool{New: func() any { return new([]byte) }}

func getBuffer() *[]byte { return buffers.Get().(*[]byte) }

func putBuffer(b *[]byte) {
	if cap(*b) > maxPooledBuffer {
		*b = nil
	}
	buffers.Put(b)
}
