package wire

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxRequestBytes is Kafka's socket.request.max.bytes default (100 MiB).
const DefaultMaxRequestBytes = 100 * 1024 * 1024

// DefaultPreAuthMaxRequestBytes is Kafka's sasl.server.max.receive.size
// default (512 KiB): the largest frame before SASL authentication.
const DefaultPreAuthMaxRequestBytes = 512 * 1024

// ErrFrameSize reports a frame whose length prefix is negative or larger than
// the configured maximum; Kafka closes the connection in that case.
var ErrFrameSize = errors.New("invalid frame size")

// ReadFrame reads one size-prefixed Kafka frame (int32 big-endian length,
// then that many bytes) from r. A length below zero or above max is refused
// before any allocation.
func ReadFrame(r io.Reader, max int32) ([]byte, error) {
	n, err := ReadFrameSize(r, max)
	if err != nil {
		return nil, err
	}
	return readFrameBody(r, n, nil)
}

// ReadFrameSize reads a frame's length prefix and checks it against max.
func ReadFrameSize(r io.Reader, max int32) (int32, error) {
	var n int32
	if br, ok := r.(*bufio.Reader); ok {
		// From the buffer: a [4]byte passed to io.ReadFull would be
		// allocated for every frame.
		size, err := br.Peek(4)
		if len(size) < 4 {
			if len(size) > 0 && err == io.EOF {
				err = io.ErrUnexpectedEOF // as io.ReadFull reports it
			}
			return 0, err
		}
		n = int32(binary.BigEndian.Uint32(size))
		br.Discard(4)
	} else {
		var size [4]byte
		if _, err := io.ReadFull(r, size[:]); err != nil {
			return 0, err
		}
		n = int32(binary.BigEndian.Uint32(size[:]))
	}
	if n < 0 || n > max {
		return 0, fmt.Errorf("%w: %d bytes (maximum %d)", ErrFrameSize, n, max)
	}
	return n, nil
}

// readFrameBody reads the n bytes of a frame whose size was read, into a
// buffer kept by l (framepool.go; l may be nil) when over pooledFrame.
func readFrameBody(r io.Reader, n int32, l *Limits) ([]byte, error) {
	if n > largeFrame {
		buf, err := l.allocOnArrival(r, n)
		if err != nil {
			return nil, err
		}
		if err := readPart(r, buf[1:], n); err != nil {
			return nil, err
		}
		return buf, nil
	}
	var buf []byte
	if n > pooledFrame {
		buf = l.frameBuffer(n)
	} else {
		buf = make([]byte, n)
	}
	if err := readPart(r, buf, n); err != nil {
		return nil, err
	}
	return buf, nil
}

// errFrameNotStarted: no byte of a large frame's body arrived, so no
// buffer was allocated for it.
var errFrameNotStarted = errors.New("no byte of the frame's body arrived")

// allocOnArrival returns the buffer for a frame of n bytes, over
// largeFrame, allocated only once the frame's first byte has arrived,
// which it holds: a peer that declared a large frame and went away (a
// connection closed while it waited for the request budget) costs no
// allocation of n bytes.
func (l *Limits) allocOnArrival(r io.Reader, n int32) ([]byte, error) {
	var first [1]byte
	if err := readPart(r, first[:], n); err != nil {
		return nil, fmt.Errorf("%w: %w", errFrameNotStarted, err)
	}
	buf := l.frameBuffer(n)
	buf[0] = first[0]
	return buf, nil
}

// readPart fills part, all or part of the body of a frame of n bytes.
func readPart(r io.Reader, part []byte, n int32) error {
	if _, err := io.ReadFull(r, part); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return fmt.Errorf("reading %d-byte frame: %w", n, err)
	}
	return nil
}
