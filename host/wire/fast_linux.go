package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"net"
	"os"
	"slices"
	"syscall"
	"time"
)

// parkable reports whether c's goroutine may park now.
func (c *conn) parkable(br *bufio.Reader) bool {
	return c.pc != nil && c.pc.p.serves() && br.Buffered() == 0 && len(c.ahead) == 0 && c.closeAfter == nil && !c.s.isDraining() && !c.pc.hasPending()
}

// parkAndServe parks c's goroutine (pollConn.park) and finishes what the
// poller's goroutine handed back. finished reports whether there was a
// handoff (the goroutine then looks again whether to park); otherwise
// bytes or the socket's end are left to read.
func (c *conn) parkAndServe(ctx context.Context) (finished bool, err error) {
	if c.serveFast == nil {
		c.serveFast = c.fastServe // made once: a method value allocates
	}
	if err := c.pc.park(c.serveFast); err != nil {
		return false, c.pc.opError("read", err)
	}
	if !c.hand.set() {
		return false, nil
	}
	defer func() {
		if p := recover(); p != nil {
			err = c.panicked(p)
		}
	}()
	return true, c.finishHandoff(ctx)
}

// fastServe is a parked connection's serve (pollConn.park), run on the
// poller's goroutine: it reads what the socket holds and serves the
// whole frames it can, keeping a partial one for the next edge. It
// returns false to hand the connection back to its goroutine.
func (c *conn) fastServe() (stay bool) {
	defer func() {
		if p := recover(); p != nil {
			c.hand = handoff{err: c.panicked(p)}
			c.grant.release() // if the request held its budget still
			c.fbuf = c.fbuf[:0]
			pollStats.handedBack.Add(1)
			stay = false
		}
	}()
	if c.fbuf == nil {
		c.fbuf = make([]byte, 0, fastBuffer)
	}
	for {
		free := c.fbuf[len(c.fbuf):cap(c.fbuf)]
		if len(free) == 0 { // a frame larger than the buffer
			return c.handBack()
		}
		n, errno := c.pc.readRaw(free)
		switch {
		case errno == syscall.EAGAIN:
			return true
		case errno != 0 || n == 0: // the goroutine's read meets the end or the error
			return c.handBack()
		}
		c.fbuf = c.fbuf[:len(c.fbuf)+n]
		for len(c.fbuf) >= 4 {
			size := int32(binary.BigEndian.Uint32(c.fbuf))
			if size < 0 || size > c.s.cfg.MaxRequestBytes {
				return c.handBack() // ReadFrameSize refuses it
			}
			if len(c.fbuf)-4 < int(size) {
				break
			}
			if !c.serveFrame(c.fbuf[4 : 4+size]) {
				return c.handBack()
			}
			c.fbuf = c.fbuf[:copy(c.fbuf, c.fbuf[4+size:])]
			if c.hand.set() {
				return c.handBack()
			}
		}
		if n < len(free) { // the socket is empty: its next bytes bring an edge
			return true
		}
	}
}

// handBack gives the bytes read and not served to the connection's
// goroutine and hands the connection back.
func (c *conn) handBack() bool {
	pollStats.handedBack.Add(1)
	if len(c.fbuf) > 0 {
		c.pc.handBack(c.fbuf)
		c.fbuf = c.fbuf[:0]
	}
	return false
}

// serveFrame serves frame, a whole request, as serveOne would, if it is a
// heartbeat served without waiting; taken is false, with nothing done,
// when it is for the connection's goroutine. A taken request may leave a
// handoff (c.hand).
func (c *conn) serveFrame(frame []byte) (taken bool) {
	s := c.s
	if len(frame) < 4 || s.isDraining() {
		return false
	}
	key, ver := int16(binary.BigEndian.Uint16(frame)), int16(binary.BigEndian.Uint16(frame[2:]))
	if !fastKey(key) {
		return false
	}
	if !s.cfg.Table.Routes(key, ver, RouteGroup) {
		return false
	}
	var h head
	var peeked string
	if q := s.cfg.Quota; q != nil { // as screen: a group over its quota waits on the goroutine
		var ok bool
		if h, peeked, _, ok = groupAhead(frame, c.keepClientID); !ok || q.GroupThrottle(peeked) > 0 {
			return false
		}
	}
	c.groups.next()
	if peeked != "" {
		c.groups.note(peeked)
	}
	c.wroteAt = time.Time{} // the next request's read deadline is extended from its start
	if !s.cfg.Limits.tryAcquire(int64(len(frame))) {
		return false
	}
	c.grant = grant{l: s.cfg.Limits, n: int64(len(frame)), held: true}
	if c.releaseFn == nil {
		c.releaseFn = c.grant.release
	}
	release := c.releaseFn
	start := time.Now()
	s.poll.note(start)
	c.extendRead(start)
	req, perr := h.parse(frame)
	group := ""
	if req != nil {
		req.Decode = time.Since(start)
		group = GroupOf(req.Body)
		req.Wire = c.wireOf(group)
	}
	if perr == nil {
		perr = c.admit(req)
	}
	if perr != nil {
		release()
		c.hand.err = perr
		return true
	}
	resp, wait, err := s.cfg.Begin(s.ctx(), req)
	if wait != nil {
		c.hand = handoff{req: req, wait: wait, start: start, group: group, release: release}
		return true
	}
	if s.cfg.Observer != nil {
		s.cfg.Observer.Served(req.Key, time.Since(start), err)
	}
	release()
	if err != nil || resp == nil {
		c.hand.err = err
		return true
	}
	mute := c.throttleFor(req, resp) // throttle.go; before resp is written
	b := AppendResponse(c.wbuf[:0], req.CorrelationID, resp)
	t0 := time.Now()
	n, errno := c.pc.writeRaw(b)
	c.wrote = 0
	c.hand.mute = mute
	switch {
	case errno != 0 && errno != syscall.EAGAIN:
		c.hand = handoff{err: c.pc.opError("write", os.NewSyscallError("write", errno))}
	case n < len(b):
		c.hand.unwritten = slices.Clone(b[n:])
	default:
		c.noteWritten(group, t0, mute)
	}
	if c.hand.err == nil { // answered, or its rest handed on
		pollStats.served.Add(1)
		c.pc.p.answered.Add(1)
	}
	c.keepWriteBuffer(b)
	return true
}

// repoll moves c's socket, between requests, into the poller while it is
// engaged and back into Go's poller once it is not.
func (c *conn) repoll(br *bufio.Reader) error {
	p := c.s.poll
	if p == nil || br.Buffered() > 0 || len(c.ahead) > 0 {
		return nil
	}
	switch engaged := p.engaged.Load(); {
	case engaged && c.pc == nil:
		if nc, pc := c.s.adoptConn(c.nc); pc != nil {
			c.swapConn(nc, pc, br)
		}
	case !engaged && c.pc != nil && !c.pc.hasPending():
		nc, err := c.pc.detach()
		if err != nil {
			return err
		}
		c.swapConn(nc, nil, br)
	}
	return nil
}

// swapConn makes nc the connection c reads and writes (pc when it is in
// the poller); the deadlines are set again on it as they come due.
func (c *conn) swapConn(nc net.Conn, pc *pollConn, br *bufio.Reader) {
	c.s.mu.Lock() // Shutdown reaches c.nc under it
	c.nc, c.pc = nc, pc
	c.s.mu.Unlock()
	c.rw = connIO(nc)
	br.Reset(c.rw)
	c.readBy, c.writeBy = time.Time{}, time.Time{}
}

// noteBeat counts a heartbeat served by c's goroutine at now towards the
// poller's engagement.
func (c *conn) noteBeat(key int16, now time.Time) {
	if c.s.poll != nil && fastKey(key) {
		c.s.poll.note(now)
	}
}

// adoptConn moves nc into s's poller when it has one, it is engaged and
// nc is a plain TCP connection; it returns the connection to serve.
func (s *Server) adoptConn(nc net.Conn) (net.Conn, *pollConn) {
	tc, ok := nc.(*net.TCPConn)
	if s.poll == nil || !ok || !s.poll.engaged.Load() {
		return nc, nil
	}
	pc, err := s.poll.adopt(tc)
	if err != nil {
		s.cfg.Log.Warn("kafka connection served without the listener's poller", "remote", tc.RemoteAddr().String(), "err", err.Error())
		return nc, nil
	}
	return pc, pc
}
