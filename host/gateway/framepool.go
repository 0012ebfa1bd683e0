package gateway

import "sync"

// maxPooledFrame is the largest buffer kept for reuse: a larger response
// (a big fetch) gets its own buffer and leaves it to the collector, so the
// pool never holds more than a few such buffers per forwarding goroutine.
const maxPooledFrame = 8 << 20

// framePool holds response-frame buffers of frames forwarded as they came.
var framePool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// getFrame returns a buffer of n bytes (n already checked against
// maxResponseBytes) and its release.
func getFrame(n int) ([]byte, func()) {
	if n > maxPooledFrame {
		return make([]byte, n), func() {}
	}
	bp := framePool.Get().(*[]byte)
	if cap(*bp) < n {
		*bp = make([]byte, n, max(n, 2*cap(*bp)))
	}
	buf := (*bp)[:n]
	return buf, func() { framePool.Put(bp) }
}
