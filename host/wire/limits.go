package wire

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Limits are the memory and connection bounds every Kafka listener of one
// process shares: the in-flight request bytes (Kafka's
// queued.max.request.bytes), connections in total (max.connections) and
// per source address (max.connections.per.ip). A nil *Limits bounds
// nothing.
type Limits struct {
	budget   budget
	maxConns int
	maxPerIP int

	mu    sync.Mutex
	conns int
	perIP map[netip.Addr]int

	garbage atomic.Int64 // large-frame bytes released since the last forced collection
	pace    pace         // of large frames' bytes (pace.go)
	frames  framePool    // buffers of large frames forwarded (framepool.go)
}

// NewLimits returns limits for budget request bytes in flight (at least
// the largest frame a listener accepts, so every frame can be read), and
// maxConns / maxConnsPerIP open client connections.
func NewLimits(budget int64, maxConns, maxConnsPerIP int) *Limits {
	l := &Limits{maxConns: maxConns, maxPerIP: maxConnsPerIP, perIP: map[netip.Addr]int{}}
	l.budget.avail, l.budget.size = budget, budget
	return l
}

// inFlightBytes is the request bytes currently granted.
func (l *Limits) inFlightBytes() int64 {
	if l == nil {
		return 0
	}
	l.budget.mu.Lock()
	defer l.budget.mu.Unlock()
	return l.budget.size - l.budget.avail
}

// errTooManyConns reports a connection over a cap; the listener closes it.
var errTooManyConns = errors.New("too many connections")

// admit counts a new connection from addr, or refuses it when a cap is
// reached (Kafka closes such a connection at once).
func (l *Limits) admit(addr net.Addr) (release func(), err error) {
	if l == nil {
		return func() {}, nil
	}
	ip := remoteIP(addr)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.conns >= l.maxConns:
		return nil, fmt.Errorf("%w: %d open (max %d)", errTooManyConns, l.conns, l.maxConns)
	case l.perIP[ip] >= l.maxPerIP:
		return nil, fmt.Errorf("%w from %s: %d open (max %d per address)", errTooManyConns, ip, l.perIP[ip], l.maxPerIP)
	}
	l.conns++
	l.perIP[ip]++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.conns--
			if l.perIP[ip]--; l.perIP[ip] <= 0 {
				delete(l.perIP, ip)
			}
		})
	}, nil
}

// acquire waits until n request bytes are granted; see budget.acquire.
func (l *Limits) acquire(ctx context.Context, n int64) error {
	if l == nil {
		return nil
	}
	if err := l.budget.acquire(ctx, n); err != nil {
		return err
	}
	if n >= largeFrame {
		l.collectIfDue()
	}
	return nil
}

// tryAcquire grants n bytes of a small frame if they are free now, as
// acquire would at once, and reports whether it did.
func (l *Limits) tryAcquire(n int64) bool {
	if l == nil {
		return true
	}
	b := &l.budget
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > smallFrame || b.avail < n {
		return false
	}
	b.avail -= n
	return true
}

// release gives n bytes back.
func (l *Limits) release(n int64) {
	if l == nil {
		return
	}
	l.budget.release(n)
	if n >= largeFrame {
		l.garbage.Add(n)
	}
}

// releaseUnread gives back the n bytes of a frame none of whose body was
// read, and so never allocated: they are no garbage to collect.
func (l *Limits) releaseUnread(n int64) {
	if l != nil {
		l.budget.release(n)
	}
}

// collectIfDue runs a collection before a large frame is allocated once a
// quarter of the budget was released by large frames since the last one.
// An answered frame is garbage, and the collector would let up to the
// whole live heap of such garbage accumulate (GOGC=100) before reclaiming
// it: the process would hold twice the budget, not the budget and a
// quarter. The collection runs in the goroutine about to allocate (and
// only there: one at a time), when the frames released are no longer
// referenced by the goroutines that served them.
func (l *Limits) collectIfDue() {
	due := l.budget.size / 4
	if l.garbage.Load() >= due && l.garbage.Swap(0) >= due {
		runtime.GC()
	}
}

// largeFrame is the size from which a released frame counts toward a
// forced collection: larger than ordinary requests (a producer's
// max.request.size is 1 MiB by default).
const largeFrame = 1 << 20

// budget is a weighted semaphore of bytes granted first come, first
// served, so a large frame waiting is not starved by a stream of others
// — except small frames (heartbeats, commits), which take bytes that are
// free even while a large frame waits: a flood of large frames holding
// the budget does not stall the small requests of every other client.
type budget struct {
	mu      sync.Mutex
	size    int64
	avail   int64
	waiters []*budgetWaiter
}

type budgetWaiter struct {
	n     int64
	ready chan struct{}
}

// acquire blocks until n bytes are granted or ctx ends. A request for more
// than the whole budget fails at once (it could never be granted).
func (b *budget) acquire(ctx context.Context, n int64) error {
	b.mu.Lock()
	if n > b.size {
		b.mu.Unlock()
		return fmt.Errorf("%w: %d bytes exceed the request budget of %d", ErrFrameSize, n, b.size)
	}
	if b.avail >= n && (len(b.waiters) == 0 || n <= smallFrame) {
		b.avail -= n
		b.mu.Unlock()
		return nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiters = append(b.waiters, w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	select {
	case <-w.ready: // granted meanwhile: hand it back
		b.avail += n
	default:
		for i, o := range b.waiters {
			if o == w {
				b.waiters = append(b.waiters[:i], b.waiters[i+1:]...)
				break
			}
		}
	}
	b.grant()
	return ctx.Err()
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.avail += n
	if b.avail > b.size {
		panic(fmt.Sprintf("wire: request budget released more than granted (%d > %d)", b.avail, b.size))
	}
	b.grant()
}

// smallFrame is the largest frame that may overtake waiting ones.
const smallFrame = 64 << 10

// grant wakes the waiters at the head of the queue that now fit, then the
// small ones further back that fit.
func (b *budget) grant() {
	for len(b.waiters) > 0 && b.waiters[0].n <= b.avail {
		w := b.waiters[0]
		b.waiters = b.waiters[1:]
		b.avail -= w.n
		close(w.ready)
	}
	kept := b.waiters[:0]
	for _, w := range b.waiters {
		if w.n <= smallFrame && w.n <= b.avail {
			b.avail -= w.n
			close(w.ready)
			continue
		}
		kept = append(kept, w)
	}
	clear(b.waiters[len(kept):])
	b.waiters = kept
}

// remoteIP is the address's IP without port (IPv4-mapped addresses
// unmapped); the zero Addr when it has none.
func remoteIP(a net.Addr) netip.Addr {
	if t, ok := a.(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(t.IP)
		return ip.Unmap().WithZone(t.Zone)
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// javaHost is addr as Kafka records a client's host: Java's
// InetAddress.toString() of the socket's peer, "/" and the IP without
// port ("/127.0.0.1", IPv6 as eight uncompressed groups
// "/0:0:0:0:0:0:0:1"). An address without an IP (a pipe in tests) is
// returned as it is.
func javaHost(addr net.Addr) string {
	ip := remoteIP(addr)
	if !ip.IsValid() {
		return addr.String()
	}
	if ip.Is4() {
		return "/" + ip.String()
	}
	b := ip.As16()
	s := "/"
	for i := 0; i < 16; i += 2 {
		if i > 0 {
			s += ":"
		}
		s += fmt.Sprintf("%x", uint16(b[i])<<8|uint16(b[i+1]))
	}
	if z := ip.Zone(); z != "" {
		s += "%" + z
	}
	return s
}

// warnings rate-limits a warning a client can cause at will (a
// connection refused over a cap, an invalid request): a flood logs one
// line a second, with the count of those left out.
type warnings struct {
	mu     sync.Mutex
	last   time.Time
	missed int
}

func (w *warnings) warn(log *slog.Logger, msg string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if now := time.Now(); now.Sub(w.last) >= time.Second {
		log.Warn(msg, "err", err.Error(), "not_logged_since_last", w.missed)
		w.last, w.missed = now, 0
		return
	}
	w.missed++
}
