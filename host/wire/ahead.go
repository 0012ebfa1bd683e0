package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Reading ahead behind a forwarded Fetch.
//
// A connection serves its requests one at a time, except behind a Fetch
// forwarded as a frame to a link that can pipeline (Pipeliner): while the
// data plane holds the Fetch (a long poll), the connection reads its next
// request and, when that one is forwarded to the data plane too (any
// RouteForward key but the SASL ones), sends it on the same link at once
// instead of after the Fetch's answer. A Kafka broker has such a request
// read and queued behind the Fetch and answers it as soon as the Fetch's
// answer is sent; without reading ahead it would reach the broker only
// then, one hop late. The data plane answers a link's requests in order;
// the answers are written to the client in request order by one goroutine
// at a time (each waits for the one before it).
//
// A request read ahead passes the same gates as any other (screen, the
// request budget, admit) and holds its bytes of the budget until its
// answer came. At most maxAhead requests are outstanding; any other
// request (group coordination, SASL, ApiVersions, a refused or unparsable
// one) waits until every answer before it is written, and is then served
// as usual. A failure of any of them closes the connection, after the
// answers before it were written.

// Pipeliner is an Upstream that sends a request before the answers of the
// requests sent before it are read: the data plane answers them in order.
// The recv each send returns reads that request's answer; recvs are called
// in the order of the sends, from one goroutine at a time, possibly while
// the next request is being sent.
type Pipeliner interface {
	// SendFrame is ForwardFrame's first half.
	SendFrame(ctx context.Context, req *Request, frame []byte, bodyAt int) (recv func() (resp []byte, done func(), err error), err error)
	// Send is Forward's first half; it returns ErrNotPassable, having sent
	// nothing, for a request Forward answers otherwise than by one round
	// trip.
	Send(ctx context.Context, clientID *string, req kmsg.Request) (recv func() (kmsg.Response, error), err error)
}

// maxAhead bounds a connection's requests sent upstream whose answers are
// not yet written: the Fetch and up to three requests read behind it.
const maxAhead = 4

// outstanding is one request sent ahead whose answer is to be written.
type outstanding struct {
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
// goes ahead: a Fetch, or anything behind one still outstanding.
func (c *conn) startsAhead(key int16) bool {
	return len(c.ahead) > 0 || key == int16(kmsg.Fetch)
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
	e, ok := c.s.cfg.Table.Lookup(req.Key)
	if !ok || e.Route != RouteForward || req.Version < e.Min || req.Version > e.Max {
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
	recv, err := p.SendFrame(ctx, req, frame, bodyAt)
	if errors.Is(err, ErrNotPassable) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	release := c.detachGrant()
	c.queue(release, func() error {
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

// sendAhead sends a decoded request (already admitted) over the link and
// queues the writing of its answer; handled is false, nothing sent, when
// the link must answer it otherwise.
func (c *conn) sendAhead(ctx context.Context, req *Request, start time.Time) (handled bool, err error) {
	p, ok := c.pipeliner()
	if !ok {
		return false, nil
	}
	recv, err := p.Send(ctx, req.ClientID, req.Body)
	if errors.Is(err, ErrNotPassable) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	release := c.detachGrant()
	c.wrote = 0 // the last response written is no group's
	c.queue(release, func() error {
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

// queue runs answer once the answers queued before it are written; if one
// of them failed, this one fails too. A failure closes the client connection and the link, so the
// connection's reader and the answers queued after it stop.
func (c *conn) queue(release func(), answer func() error) {
	var prev *outstanding
	if n := len(c.ahead); n > 0 {
		prev = c.ahead[n-1]
	}
	o := &outstanding{written: make(chan struct{})}
	c.ahead = append(c.ahead, o)
	up := c.up
	go func() {
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
		if prev != nil {
			<-prev.written
		}
		// After a failure before it the link is closed: answer's read
		// fails at once, and the request's budget and link state are given
		// back on the way.
		err := answer()
		if prev != nil && prev.err != nil {
			err = prev.err
		}
		o.err = err
	}()
}

// writeFrame writes a response frame (without its size) as the answer of
// correlationID.
func (c *conn) writeFrame(correlationID int32, resp []byte) error {
	binary.BigEndian.PutUint32(resp, uint32(correlationID))
	var size [4]byte
	binary.BigEndian.PutUint32(size[:], uint32(len(resp)))
	c.nc.SetWriteDeadline(time.Now().Add(c.s.cfg.WriteTimeout))
	bufs := net.Buffers{size[:], resp}
	_, err := bufs.WriteTo(c.nc)
	return err
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

// settle waits until every outstanding answer is written; it returns the
// error of one that failed.
func (c *conn) settle() error {
	for len(c.ahead) > 0 {
		<-c.ahead[len(c.ahead)-1].written
		if err := c.pruneAhead(); err != nil {
			return err
		}
	}
	return nil
}
