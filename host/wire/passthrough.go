package wire

import (
	"context"
	"encoding/binary"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// FrameForwarder is an Upstream that can forward a request's frame as it
// came, without decoding or re-encoding its body.
type FrameForwarder interface {
	// ForwardFrame sends frame (a whole request of req's key and
	// version, without its size prefix, its body at bodyAt as
	// ParseHeader found it; it may change the correlation id in place,
	// and must not keep frame once it returned: its buffer is read into
	// again)
	// and returns the response frame without its size
	// prefix, starting with a correlation id the caller overwrites, or
	// nil for a request that gets no response (Produce acks=0). done
	// gives the response's buffer back once it is written. It returns
	// ErrNotPassable, having sent nothing, when the request must be
	// decoded instead.
	ForwardFrame(ctx context.Context, req *Request, frame []byte, bodyAt int) (resp []byte, done func(), err error)
}

// ErrNotPassable is ForwardFrame's answer for a request it cannot forward
// as a frame.
var ErrNotPassable = errors.New("request cannot be forwarded as a frame")

// passThroughKeys are the keys forwarded as frames when their route is
// RouteForward: the data path, whose bodies carry records and need no
// rewriting on the way in.
var passThroughKeys = map[int16]bool{int16(kmsg.Produce): true, int16(kmsg.Fetch): true}

// ParseHeader parses a request frame's header only (api key, version,
// correlation id, client id, and the tagged fields of flexible versions)
// and returns it with the offset of the body. Errors are ParseRequest's.
func ParseHeader(frame []byte) (req *Request, bodyAt int, err error) {
	req, _, rest, err := parseHeader(frame)
	if err != nil {
		return req, 0, err
	}
	return req, len(frame) - len(rest), nil
}

// passThrough serves a Produce or Fetch frame without decoding its body:
// the request passes the same gates as a decoded one (admit), then its
// frame goes to the data-plane link. handled is false when the frame must
// be served decoded (another key or route, a header the full parse will
// refuse, or a link that cannot forward frames); nothing was sent then.
func (c *conn) passThrough(ctx context.Context, frame []byte, start time.Time, release func()) (handled bool, err error) {
	s := c.s
	if s.cfg.Dial == nil || len(frame) < 2 || !passThroughKeys[int16(binary.BigEndian.Uint16(frame))] {
		return false, nil
	}
	req, bodyAt, perr := ParseHeader(frame)
	if perr != nil {
		return false, nil
	}
	if !s.cfg.Table.Routes(req.Key, req.Version, RouteForward) {
		return false, nil
	}
	if err := c.admit(req); err != nil {
		return true, err
	}
	up, err := c.upstream(ctx)
	if err != nil {
		return true, err
	}
	if p, ok := up.(Pipeliner); ok && c.startsAhead(req.Key) {
		handled, err := c.sendFrameAhead(ctx, p, req, frame, bodyAt, start) // ahead.go
		// Written to the link, or never to be: its buffer is read into again.
		if handled {
			s.cfg.Limits.recycle(frame)
		}
		return handled, err
	}
	if err := c.settle(); err != nil {
		return true, err
	}
	ff, ok := up.(FrameForwarder)
	if !ok {
		return false, nil
	}
	resp, done, err := ff.ForwardFrame(ctx, req, frame, bodyAt)
	if errors.Is(err, ErrNotPassable) {
		return false, nil
	}
	s.cfg.Limits.recycle(frame)
	if s.cfg.Observer != nil {
		s.cfg.Observer.Served(req.Key, time.Since(start), err)
	}
	release() // the request is answered: its bytes are no longer in flight
	if err != nil || resp == nil {
		return true, err
	}
	defer done()
	if err := c.writeFrame(req.CorrelationID, resp); err != nil {
		return true, err
	}
	return true, c.closeAfter
}
