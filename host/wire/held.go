package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Answers held for one write.
//
// A connection's answers go out in request order, each once its request
// is served. When the connection's read buffer already holds the next
// request's whole frame, and that request is a group-coordination request
// of one group (GroupOf's keys, routed to the group coordinator) — which
// a coordinator usually answers in place — an answer may wait in the
// connection's write buffer to go out in one write with the next answers:
// each write on loopback costs about as much as serving a steady
// heartbeat, and a client pipelining its heartbeats on a connection sends
// several at once.
//
// An answer is held only while the connection serves the next request
// without waiting for anything; before any wait the held answers are
// written (flushed):
//   - the read buffer has no whole next frame (the connection would wait
//     for the socket), or the next frame is not one of those keys, or is
//     over smallFrame (a decoding slot), or the server is draining;
//   - the request budget has no room for the next frame (Limits), or its
//     group is over its quota (screen's wait);
//   - the answer carries a throttle the connection is muted for, or the
//     connection closes after it (a failed authentication);
//   - the group coordinator is about to wait: Config.Group calls Flush
//     with the request's context before it waits for its partition (an
//     append in flight, a worker, a rebalance), for the cluster's
//     authorizer or for anything else;
//   - the connection closes, on any error, on drain and on Shutdown: the
//     held answers are written before it closes (a Shutdown that gave up
//     waiting closes the connections at once, as it always did).
//
// At most maxHeldAnswers answers go in one write and at most maxHeldBytes
// are held (a larger answer is written with those before it at once), so
// an answer waits at most for the in-place service of the few requests
// pipelined behind it. Requests sent ahead (ahead.go) are never served
// while answers are held: the answers before a forwarded request are
// written first.

// maxHeldAnswers bounds the answers that go in one write.
const maxHeldAnswers = 8

// maxHeldBytes bounds the bytes of the answers held.
const maxHeldBytes = keptWriteBuffer

// flushKey is the context key of the function Flush calls.
type flushKey struct{}

// Flush writes the answers held by the connection that is serving ctx's
// request (see "Answers held for one write"). A Config.Group handler calls
// it before it waits for anything; it does nothing for a context of no
// connection or with nothing held, and may be called from any goroutine.
// A failed write closes the connection once the request is answered.
func Flush(ctx context.Context) {
	if f, ok := ctx.Value(flushKey{}).(func()); ok {
		f()
	}
}

// WithFlush returns ctx with f as what Flush calls: a Server gives its
// requests their connection's flush; a caller of a Config.Group handler
// other than a Server (a test) may give its own.
func WithFlush(ctx context.Context, f func()) context.Context {
	return context.WithValue(ctx, flushKey{}, f)
}

// flushHeld is the connection's flush for Flush and for the waits of
// the request budget.
func (c *conn) flushHeld() {
	if c.holding.Load() {
		c.flush() // a failed write is kept: the next write returns it
	}
}

// hold appends resp to the connection's write buffer, as the answer of
// correlationID, and writes the buffer unless keep and the bounds allow
// holding it.
func (c *conn) hold(correlationID int32, resp kmsg.Response, keep bool) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	c.wbuf = AppendResponse(c.wbuf, correlationID, resp)
	if c.nheld++; keep && c.nheld < maxHeldAnswers && len(c.wbuf) <= maxHeldBytes {
		c.holding.Store(true)
		return nil
	}
	return c.flushLocked()
}

// flush writes the answers held.
func (c *conn) flush() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.flushLocked()
}

// flushLocked writes the write buffer, c.wmu held; a failure is kept and
// returned by every later write.
func (c *conn) flushLocked() error {
	c.holding.Store(false)
	c.nheld = 0
	if len(c.wbuf) == 0 || c.werr != nil {
		c.wbuf = c.wbuf[:0]
		return c.werr
	}
	c.extendWrite(time.Now())
	w := c.rw
	if w == nil { // a conn built without serve (tests)
		w = c.nc
	}
	_, err := w.Write(c.wbuf)
	if cap(c.wbuf) <= keptWriteBuffer {
		c.wbuf = c.wbuf[:0]
	} else {
		c.wbuf = nil
	}
	c.werr = err
	return err
}

// nextHeldFor reports whether br holds the whole frame of a next request
// an answer may be held for: one group-coordination request of one group
// (GroupOf's keys) the table routes to the group coordinator, of at most
// smallFrame bytes, with no answer sent ahead outstanding and the server
// not draining.
func (c *conn) nextHeldFor(br *bufio.Reader) bool {
	if br.Buffered() < 8 || len(c.ahead) > 0 || c.s.isDraining() {
		return false
	}
	p, err := br.Peek(8)
	if err != nil {
		return false
	}
	n := int32(binary.BigEndian.Uint32(p))
	if n < 4 || n > smallFrame || int(n) > br.Buffered()-4 {
		return false
	}
	switch kmsg.Key(binary.BigEndian.Uint16(p[4:])) {
	case kmsg.StreamsGroupHeartbeat, kmsg.ConsumerGroupHeartbeat, kmsg.Heartbeat,
		kmsg.JoinGroup, kmsg.SyncGroup, kmsg.LeaveGroup:
	default:
		return false
	}
	e, ok := c.s.cfg.Table.Lookup(int16(binary.BigEndian.Uint16(p[4:])))
	return ok && e.Route == RouteGroup
}
