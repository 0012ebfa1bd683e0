package wire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestStreamer is a Pipeliner that can send a request frame whose body
// it is given as a reader instead of in memory: a Produce of several MiB
// held in kernel pipes (KernelReader) then goes on without passing
// through the host's memory.
type RequestStreamer interface {
	// StreamRequest is SendFrame for a frame given as head (the frame
	// without its size prefix, from its start: its header, and the start
	// of its body at bodyAt) and a reader of the rest, in two steps: it
	// decides from head alone, sending nothing, and returns
	// ErrNotPassable for a request it must have whole; send then writes
	// head, with a correlation id of its own set in place, and the
	// frame's other restN bytes, read from rest. An error once send began
	// writing leaves the data plane with part of a frame: the caller
	// closes the connection, and with it the link.
	StreamRequest(req *Request, head []byte, bodyAt int) (send func(ctx context.Context, rest io.Reader, restN int64) (recv func() (resp []byte, done func(), err error), err error), err error)
}

// KernelReader is a rest given to StreamRequest's send whose bytes are held in the
// kernel: SpliceTo moves them to a TCP socket without copying them through
// the process (splice(2)); Read reads them for any other writer.
type KernelReader interface {
	io.Reader
	SpliceTo(tc *net.TCPConn) (int64, error)
}

// pipeInFrame is the size over which a Produce to a cluster whose links
// forward frames (Config.ForwardsFrames) is read into kernel pipes rather
// than memory (pipeIn): the frames the large-frame pace would otherwise
// read.
const pipeInFrame = largeFrame

// pipeIn serves a Produce frame over pipeInFrame from a plain TCP client
// to a link that takes a frame's body as a reader (RequestStreamer): the
// frame's header and the start of its body are read as usual, and, once
// the gates passed and the request budget granted the frame's size, the
// rest is moved from the client's socket into kernel pipes, whole, and
// from there to the link's socket, both with splice(2). The cluster then
// gets the frame written whole, as from the memory buffer it replaces
// (a Produce that trickled in as it arrived cost the broker more than
// the copies it saved, docs/BENCHMARKS.md). handled is false when the
// frame is to be read as any other (not such a Produce, a header that does
// not fit the connection's buffer, pipes the system would not make);
// nothing of it was taken from the buffer then.
func (c *conn) pipeIn(ctx context.Context, br *bufio.Reader) (handled bool, err error) {
	s := c.s
	tc, plain := c.nc.(*net.TCPConn)
	if !s.cfg.ForwardsFrames || s.cfg.Dial == nil || !plain {
		return false, nil
	}
	// The wait for the size is readFrame's own; an error there is left
	// to it (its read returns it again).
	b, err := br.Peek(4)
	if err != nil {
		return false, nil
	}
	n := int32(binary.BigEndian.Uint32(b))
	if n <= pipeInFrame || n > s.cfg.MaxRequestBytes {
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
	req, bodyAt, up, forwarded, err := c.forwardGates(ctx, prefix[4:])
	if !forwarded || err != nil {
		return forwarded, err
	}
	rs, ok := up.(RequestStreamer)
	if !ok {
		return false, nil
	}
	head := bytes.Clone(prefix[4:])
	send, err := rs.StreamRequest(req, head, bodyAt)
	if errors.Is(err, ErrNotPassable) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	restN := int64(n) - int64(len(head))
	makePipes := newPipeChain
	if s.cfg.makePipes != nil {
		makePipes = s.cfg.makePipes
	}
	chain, err := makePipes(restN)
	if err != nil {
		c.log.Debug("large Produce read into memory: no pipes for it", "err", err.Error())
		return false, nil
	}
	defer chain.Close()
	br.Discard(len(prefix))
	if err := c.grantFrame(n); err != nil {
		return true, err
	}
	release := c.releaseFn // whatever grant the connection holds: none once detached
	defer release()
	start := time.Now()
	if err := chain.fillFrom(tc, restN); err != nil {
		return true, err
	}
	recv, err := send(ctx, chain, restN)
	if err != nil || recv == nil {
		c.unanswered(req, start, err)
		return true, err
	}
	c.queueFrameAnswer(req, recv, start, c.detachGrant())
	return true, nil
}

// grantFrame waits for the request budget to grant a frame of n bytes,
// as readFrame does (acquireFrame), and gives the rest of the frame an
// idle timeout to arrive from then.
func (c *conn) grantFrame(n int32) error {
	if _, err := c.acquireFrame(n); err != nil {
		return err
	}
	c.extendRead(time.Now()) // the wait for budget is not idleness
	if c.s.isDraining() {
		c.releaseFn()
		return errDraining
	}
	return nil
}
