package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Reading ahead behind a forwarded Fetch or Produce.
//
// A connection serves its requests one at a time, except behind a Fetch
// or a Produce forwarded as a frame to a link that can pipeline
// (Pipeliner): while the data plane holds it (a Fetch's long poll, a
// Produce's wait for its acks), the connection reads its next request
// and, when that one is forwarded to the data plane too (any
// RouteForward key but the SASL ones), sends it on the same link at once
// instead of after the answer. A Kafka broker has such a request read and
// queued behind the one it holds and answers it as soon as that answer is
// sent; without reading ahead it would reach the broker only then, one hop
// late, and a producer with several requests in flight (franz-go's
// idempotent producer sends up to five) would have one. The data plane
// answers a link's requests in order; the answers are written to the
// client in request order by the connection's answerer, a goroutine that
// lives while answers are due and, between them, waits in the link's
// reader for the next one (Awaiter). A request sent then needs no
// goroutine started or woken for its answer: the answer's arrival wakes
// the one that writes it.
//
// A request read ahead passes the same gates as any other (screen, the
// request budget, admit) and holds its bytes of the budget until its
// answer came. At most maxAhead requests are outstanding; any other
// request (group coordination, SASL, ApiVersions, a refused or unparsable
// one) waits until every answer before it is written, and is then served
// as usual. A failure of any of them closes the connection, after the
// answers before it were written.
//
// An OffsetForLeaderEpoch read ahead goes to the data plane on a link of
// its own (sendAside), dialed for it and closed once it is answered, when
// the connection's link carries no identity of the client (no SASL or
// certificate login): the data plane answers it while it still holds the
// Fetch, and its answer is written right after the Fetch's. A consumer
// validating a newly assigned partition's position sends it to the
// partition's leader, where its own fetch of its other partitions often
// waits; a Kafka broker answers it only once the Fetch's answer is sent,
// and the position is fetchable only from the consumer's fetch after the
// one the answer arrived behind, which goes out as soon as the Fetch's
// answer is read (a Java 4.4 consumer, group.protocol=consumer, sends it
// without the partition when the validation's answer comes a millisecond
// or more after the Fetch's). The request only reads the partition leader's
// epoch and end offset, which the data plane may have answered on any
// connection of the client; it is a deliberate difference from a Kafka
// broker's one-request-at-a-time order on a connection (docs/CONSUMER.md).

// Pipeliner is an Upstream that sends a request before the answers of the
// requests sent before it are read: the data plane answers them in order.
// The recv each send returns reads that request's answer; recvs are called
// in the order of the sends, from one goroutine at a time, possibly while
// the next request is being sent. A nil recv means the request gets no
// answer (a Produce with acks=0).
type Pipeliner interface {
	// SendFrame is ForwardFrame's first half; it must not keep frame
	// once it returned, nor read it in recv.
	SendFrame(ctx context.Context, req *Request, frame []byte, bodyAt int) (recv func() (resp []byte, done func(), err error), err error)
	// Send is Forward's first half; it returns ErrNotPassable, having sent
	// nothing, for a request Forward answers otherwise than by one round
	// trip.
	Send(ctx context.Context, clientID *string, req kmsg.Request) (recv func() (kmsg.Response, error), err error)
}

// Awaiter is a Pipeliner whose next answer can be waited for before the
// request it answers is sent. Await is called only while no recv runs;
// sends may run during it.
type Awaiter interface {
	// Await returns once the link holds the start of an answer to read,
	// or Wake was called (during it or since the last Await returned),
	// or the first answer due of a request sent during it is late, or
	// the link failed; it returns an error for the last two. The recv
	// after it reads as it would have without it.
	Await() error
	// Wake makes an Await in progress, or the next one, return.
	Wake()
}

// Streamer is a Pipeliner that can copy an answer to the client as it
// arrives from the data plane instead of reading it whole first: a Fetch
// answer of several MiB then reaches the client while the rest of it is
// still on the way, and is never held in the host's memory.
type Streamer interface {
	// StreamFrame is SendFrame whose recv writes the answer itself: once
	// its size and correlation id came, recv calls begin for the writer
	// (the client connection, its write deadline set) and writes the
	// whole answer to it, size prefix and correlationID first, the rest
	// as the data plane sent it. An error after begin leaves the client
	// with part of a frame: the connection is closed. It returns
	// ErrNotPassable, having sent nothing, for a request whose answer it
	// must read whole (SendFrame then serves it).
	StreamFrame(ctx context.Context, req *Request, frame []byte, bodyAt int) (recv func(correlationID int32, begin func() io.Writer) error, err error)
}

// maxAhead bounds a connection's requests sent upstream whose answers are
// not yet written: the Fetch and up to three requests read behind it.
const maxAhead = 4

// outstanding is one request sent ahead whose answer is to be written.
type outstanding struct {
	fetch   bool          // a Fetch, which the data plane may hold
	written chan struct{} // closed once answered (or failed)
	err     error         // set before written is closed
}

// pipeliner is the connection's link if it can pipeline.
func (c *conn) pipeliner() (Pipeliner, bool) {
	if c.up == nil {
		return nil, false
	}
	p, ok := c.up.(Pipeliner)
	return p, ok
}

// startsAhead reports whether a request frame of key forwarded as a frame
// goes ahead: a Fetch or a Produce, or anything behind one still
// outstanding.
func (c *conn) startsAhead(key int16) bool {
	return len(c.ahead) > 0 || key == int16(kmsg.Fetch) || key == int16(kmsg.Produce)
}

// aheadable reports whether a decoded request may be sent while answers
// before it are outstanding: a forwarded key of a supported version,
// other than the SASL ones (connection state, reauth.go).
func (c *conn) aheadable(req *Request, perr error) bool {
	if perr != nil || req == nil {
		return false
	}
	if _, ok := c.pipeliner(); !ok {
		return false
	}
	if !c.s.cfg.Table.Routes(req.Key, req.Version, RouteForward) {
		return false
	}
	return req.Key != int16(kmsg.SASLHandshake) && req.Key != int16(kmsg.SASLAuthenticate)
}

// detachGrant moves the budget of the frame being served out of the
// connection, for the frame's answer to give back once it came, while the
// connection reads the next frame.
func (c *conn) detachGrant() (release func()) {
	g := new(grant)
	*g = c.grant
	c.grant = grant{}
	return g.release
}

// sendFrameAhead sends a frame (already admitted) over p and queues the
// writing of its answer.
func (c *conn) sendFrameAhead(ctx context.Context, p Pipeliner, req *Request, frame []byte, bodyAt int, start time.Time) (handled bool, err error) {
	if st, ok := p.(Streamer); ok {
		recv, err := st.StreamFrame(ctx, req, frame, bodyAt)
		switch {
		case errors.Is(err, ErrNotPassable): // read whole: SendFrame's
		case err != nil:
			return true, err
		default:
			c.streamAhead(req, recv, start)
			return true, nil
		}
	}
	recv, err := p.SendFrame(ctx, req, frame, bodyAt)
	if errors.Is(err, ErrNotPassable) {
		return false, nil
	}
	if err != nil || recv == nil {
		c.unanswered(req, start, err)
		return true, err
	}
	release := c.detachGrant()
	c.queue(req.Key, true, release, func() error {
		resp, done, err := recv()
		if o := c.s.cfg.Observer; o != nil {
			o.Served(req.Key, time.Since(start), err)
		}
		release() // the request is answered: its bytes are no longer in flight
		if err != nil || resp == nil {
			return err
		}
		defer done()
		return c.writeFrame(req.CorrelationID, resp)
	})
	return true, nil
}

// streamAhead queues the writing of a streamed answer (Streamer) of a
// frame sent ahead.
func (c *conn) streamAhead(req *Request, recv func(int32, func() io.Writer) error, start time.Time) {
	release := c.detachGrant()
	c.queue(req.Key, true, release, func() error {
		err := recv(req.CorrelationID, func() io.Writer {
			c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.WriteTimeout))
			return c.writer()
		})
		if o := c.s.cfg.Observer; o != nil {
			o.Served(req.Key, time.Since(start), err)
		}
		release()
		return err
	})
}

// asideable reports whether req, read ahead, may go on a link of its own
// (sendAside): an OffsetForLeaderEpoch, behind a Fetch the data plane
// still holds, on a connection whose link carries no identity of the
// client (a fresh link from Dial is as good as it).
func (c *conn) asideable(req *Request) bool {
	return req.Key == int16(kmsg.OffsetForLeaderEpoch) && c.s.cfg.Dial != nil && !c.sasl.authenticated() && !c.sasl.cert && c.sasl.mech == "" && c.fetchHeld()
}

// fetchHeld reports whether a Fetch sent ahead is not answered yet.
func (c *conn) fetchHeld() bool {
	for _, o := range c.ahead {
		if !o.fetch {
			continue
		}
		select {
		case <-o.written:
		default:
			return true
		}
	}
	return false
}

// sendAside sends a decoded request (already admitted) on a link dialed
// for it, and queues the writing of its answer in turn; the link is closed
// once the answer came. handled is false when no such link took the
// request (it could not be dialed, cannot pipeline, or refused it): it goes
// on the connection's own link then. An OffsetForLeaderEpoch is a read, so
// one that reached the data plane before its link failed does no harm
// sent again.
func (c *conn) sendAside(ctx context.Context, req *Request, start time.Time) (handled bool) {
	up, err := c.s.cfg.Dial(ctx)
	if err != nil {
		c.log.Debug("reading ahead: no link of its own for the request, it goes on the connection's", "api", kmsg.NameForKey(req.Key), "err", err.Error())
		return false
	}
	p, ok := up.(Pipeliner)
	if !ok {
		up.Close()
		return false
	}
	recv, err := p.Send(ctx, req.ClientID, req.Body)
	if err != nil {
		up.Close()
		return false
	}
	type answer struct {
		resp kmsg.Response
		err  error
	}
	got := make(chan answer, 1)
	go func() { // the answer is read as soon as it comes, whatever is before it
		resp, err := recv()
		up.Close()
		got <- answer{resp, err}
	}()
	release := c.detachGrant()
	c.wrote = 0 // the last response written is no group's
	c.queue(req.Key, false, release, func() error {
		a := <-got
		if o := c.s.cfg.Observer; o != nil {
			o.Served(req.Key, time.Since(start), a.err)
		}
		release()
		if a.err != nil || a.resp == nil {
			return a.err
		}
		return c.writeResponse(req.CorrelationID, a.resp)
	})
	return true
}

// sendAhead sends a decoded request (already admitted) over the link and
// queues the writing of its answer; handled is false, nothing sent, when
// the link must answer it otherwise.
func (c *conn) sendAhead(ctx context.Context, req *Request, start time.Time) (handled bool, err error) {
	if c.asideable(req) && c.sendAside(ctx, req, start) {
		return true, nil
	}
	p, ok := c.pipeliner()
	if !ok {
		return false, nil
	}
	recv, err := p.Send(ctx, req.ClientID, req.Body)
	if errors.Is(err, ErrNotPassable) {
		return false, nil
	}
	if err != nil || recv == nil {
		c.unanswered(req, start, err)
		return true, err
	}
	release := c.detachGrant()
	c.wrote = 0 // the last response written is no group's
	c.queue(req.Key, true, release, func() error {
		resp, err := recv()
		if o := c.s.cfg.Observer; o != nil {
			o.Served(req.Key, time.Since(start), err)
		}
		release()
		if err != nil || resp == nil {
			return err
		}
		return c.writeResponse(req.CorrelationID, resp)
	})
	return true, nil
}

// unanswered notes a request sent ahead that gets no answer (a Produce
// with acks=0), or whose send failed with err: nothing is queued, and the
// request's budget is given back with its frame.
func (c *conn) unanswered(req *Request, start time.Time, err error) {
	if o := c.s.cfg.Observer; o != nil {
		o.Served(req.Key, time.Since(start), err)
	}
}

// queue has the connection's answerer run answer once the answers queued
// before it are written; if one of them failed, this one fails too. A
// failure closes the client connection and the link, so the connection's
// reader and the answers queued after it stop. fromLink tells that the
// answer's first bytes come on the connection's link: the answerer waiting
// there for the next answer (Awaiter) is then left waiting.
func (c *conn) queue(key int16, fromLink bool, release func(), answer func() error) {
	var prev *outstanding
	if n := len(c.ahead); n > 0 {
		prev = c.ahead[n-1]
	}
	o := &outstanding{fetch: key == int16(kmsg.Fetch), written: make(chan struct{})}
	c.ahead = append(c.ahead, o)
	up := c.up
	c.answers.push(up, fromLink, func() {
		defer close(o.written)
		defer func() {
			if p := recover(); p != nil {
				c.log.Error("BUG: panic while answering a request", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				o.err = fmt.Errorf("panic: %v", p)
			}
			if o.err != nil {
				release()
				up.Close()
				c.nc.Close()
			}
		}()
		// The answers before it are written (the answerer runs them in
		// order). After a failure before it the link is closed: answer's
		// read fails at once, and the request's budget and link state are
		// given back on the way.
		err := answer()
		if prev != nil && prev.err != nil {
			err = prev.err
		}
		o.err = err
	})
}

// answerer runs a connection's queued answers in order on a goroutine of
// its own, started by the first answer queued and ended by stop, or once
// its link failed with nothing queued. Between answers it waits in the
// link's reader (Awaiter), so that an answer queued while it waits there
// needs no wake-up of its own; an answer that is not the link's (sendAside)
// wakes it. Without an Awaiter it waits for the next answer queued.
type answerer struct {
	mu       sync.Mutex
	queued   sync.Cond // signalled when an answer is queued or stop set
	answers  []func()
	link     Awaiter // the link it waits in; nil if it cannot
	running  bool    // its goroutine is alive
	idle     bool    // it waits on queued
	awaiting bool    // it waits in link.Await
	stopping bool
	done     chan struct{} // closed when its goroutine ends
}

// push queues answer, an answer of up's (or of another link, fromLink
// false), and has the answerer run it in turn.
func (a *answerer) push(up Upstream, fromLink bool, answer func()) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.answers = append(a.answers, answer)
	switch {
	case !a.running:
		a.link, _ = up.(Awaiter)
		a.running, a.done = true, make(chan struct{})
		if a.queued.L == nil {
			a.queued.L = &a.mu
		}
		go a.run(a.done)
	case a.idle:
		a.queued.Signal()
	case a.awaiting && !fromLink:
		a.link.Wake()
	}
}

// run is the answerer's goroutine.
func (a *answerer) run(done chan struct{}) {
	defer close(done)
	a.mu.Lock()
	defer a.mu.Unlock()
	await := a.link != nil // the next wait is in the link's reader
	for {
		if n := len(a.answers); n > 0 {
			answer := a.answers[0]
			copy(a.answers, a.answers[1:]) // a few at most (maxAhead)
			a.answers[n-1] = nil
			a.answers = a.answers[:n-1]
			a.mu.Unlock()
			answer()
			a.mu.Lock()
			await = a.link != nil
			continue
		}
		if a.stopping {
			a.running, a.stopping = false, false
			return
		}
		if !await {
			a.idle = true
			a.queued.Wait()
			a.idle = false
			continue
		}
		a.awaiting = true
		a.mu.Unlock()
		err := a.link.Await()
		a.mu.Lock()
		a.awaiting = false
		// The start of an answer, a wake, or the link's end: what is
		// queued, if anything, is run next. An answer that comes before
		// its request is queued (it was sent first) is waited for on
		// queued, not by reading again.
		await = false
		if err != nil && len(a.answers) == 0 {
			a.running, a.stopping = false, false // what is queued next fails on its own read
			return
		}
	}
}

// stop ends the answerer's goroutine once it ran what is queued and, with
// wait, waits for it: the link is then the connection's own to use.
func (a *answerer) stop(wait bool) {
	a.mu.Lock()
	if !a.running {
		a.mu.Unlock()
		return
	}
	a.stopping = true
	switch {
	case a.idle:
		a.queued.Signal()
	case a.awaiting:
		a.link.Wake()
	}
	done := a.done
	a.mu.Unlock()
	if wait {
		<-done
	}
}

// writeFrame writes a response frame (without its size) as the answer of
// correlationID.
func (c *conn) writeFrame(correlationID int32, resp []byte) error {
	binary.BigEndian.PutUint32(resp, uint32(correlationID))
	var size [4]byte
	binary.BigEndian.PutUint32(size[:], uint32(len(resp)))
	c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.WriteTimeout))
	_, err := WriteTwo(c.writer(), size[:], resp)
	return err
}

// writer is what the connection's answers are written to: its socket's
// raw I/O (connIO), or the connection itself in a conn built without
// serve (tests).
func (c *conn) writer() io.Writer {
	if c.rw != nil {
		return c.rw
	}
	return c.nc
}

// pruneAhead forgets the answers written; it returns the error of one
// that failed.
func (c *conn) pruneAhead() error {
	for len(c.ahead) > 0 {
		select {
		case <-c.ahead[0].written:
		default:
			return nil
		}
		if err := c.ahead[0].err; err != nil {
			return err
		}
		c.ahead[0] = nil
		c.ahead = c.ahead[1:]
	}
	c.ahead = nil
	return nil
}

// roomAhead waits until fewer than maxAhead answers are outstanding.
func (c *conn) roomAhead() error {
	for len(c.ahead) >= maxAhead {
		<-c.ahead[0].written
		if err := c.pruneAhead(); err != nil {
			return err
		}
	}
	return c.pruneAhead()
}

// settle waits until every outstanding answer is written and the
// answerer stopped; it returns the error of one that failed.
func (c *conn) settle() error {
	for len(c.ahead) > 0 {
		<-c.ahead[len(c.ahead)-1].written
		if err := c.pruneAhead(); err != nil {
			// The connection closes: the answers after the one that
			// failed fail at once (its link and the client's connection
			// are closed) on the answerer's goroutine, which then ends.
			c.answers.stop(false)
			return err
		}
	}
	c.answers.stop(true)
	return nil
}
