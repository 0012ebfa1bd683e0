package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestStreamer is a Pipeliner that can send a large request on to the
// data plane as it arrives from the client instead of reading it whole
// first: a Produce of several MiB then reaches the data plane while the
// rest of it is still on the way, and is never held in the host's memory.
type RequestStreamer interface {
	// SendStream is SendFrame for a frame of which only head was read:
	// the frame without its size prefix, from its start to where head
	// ends (its header, and the start of its body at bodyAt). It writes
	// head, with a correlation id of its own set in place, and then the
	// frame's other restN bytes, read from rest as they arrive. An error
	// once it began writing leaves the data plane with part of a frame:
	// the caller closes the connection, and with it the link. It returns
	// ErrNotPassable, having written nothing and read nothing from rest,
	// for a request it must have whole. rest's reads end by restBy (no
	// deadline if zero), the time the client has to send the frame.
	SendStream(ctx context.Context, req *Request, head []byte, bodyAt int, rest io.Reader, restN int64, restBy time.Time) (recv func() (resp []byte, done func(), err error), err error)
}

// streamInFrame is the size over which a Produce to a cluster whose links
// forward frames (Config.ForwardsFrames) is sent on as it arrives
// (streamIn): the frames the large-frame pace would otherwise read.
const streamInFrame = largeFrame

// streamIn serves a Produce frame over streamInFrame by sending it on as it
// arrives (RequestStreamer), after the gates a Produce forwarded as a
// frame passes (passThrough): its bytes go from the client's socket to
// the link's, spliced in the kernel when both are plain TCP, and take
// nothing from the request budget, since nothing of them is held.
// handled is false when the frame is to be read whole as any other (not
// such a Produce, a header that does not fit the buffer, a link that
// cannot stream it); nothing of it was taken from the buffer then.
func (c *conn) streamIn(ctx context.Context, br *bufio.Reader) (handled bool, err error) {
	s := c.s
	if !s.cfg.ForwardsFrames || s.cfg.Dial == nil {
		return false, nil
	}
	// The wait for the size is readFrame's own; an error there is left
	// to it (its read returns it again).
	b, err := br.Peek(4)
	if err != nil {
		return false, nil
	}
	n := int32(binary.BigEndian.Uint32(b))
	if n <= streamInFrame || n > s.cfg.MaxRequestBytes {
		return false, nil // readFrame reads it, or refuses its size
	}
	if s.cfg.SASLRequired && !c.sasl.authenticated() {
		return false, nil // readFrame refuses its size before authentication
	}
	// More than a buffer of the frame is on its way: filling the buffer
	// waits for no more than the frame.
	prefix, err := br.Peek(min(int(n)+4, br.Size()))
	if err != nil || int16(binary.BigEndian.Uint16(prefix[4:])) != int16(kmsg.Produce) {
		return false, nil
	}
	head := prefix[4:]
	req, bodyAt, up, forwarded, err := c.forwardGates(ctx, head)
	if !forwarded || err != nil {
		return forwarded, err
	}
	rs, ok := up.(RequestStreamer)
	if !ok {
		return false, nil
	}
	c.extendRead(time.Now()) // the rest of the frame gets an idle timeout to arrive, as readFrame gives it
	start := time.Now()
	recv, err := rs.SendStream(ctx, req, head, bodyAt, c.streamSource(), int64(n)-int64(len(head)), c.readBy)
	if errors.Is(err, ErrNotPassable) {
		return false, nil
	}
	br.Discard(len(prefix)) // what was buffered went with head, the rest came from the socket
	if err != nil || recv == nil {
		c.unanswered(req, start, err)
		return true, err
	}
	c.queueFrameAnswer(req, recv, start, func() {})
	return true, nil
}

// streamSource is what the rest of a streamed request is read from once
// the connection's buffer is empty: the socket itself when it is a plain
// TCP connection of the net package's, which a link's TCP connection
// splices from (net.TCPConn's ReadFrom), or what the connection reads.
func (c *conn) streamSource() io.Reader {
	if tc, ok := c.nc.(*net.TCPConn); ok {
		return tc
	}
	return c.rw
}
