package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// DefaultMaxRequestBytes is Kafka's socket.request.max.bytes default (100 MiB).
const DefaultMaxRequestBytes = 100 * 1024 * 1024

// ErrFrameSize reports a frame whose length prefix is negative or larger than
// the configured maximum; Kafka closes the connection in that case.
var ErrFrameSize = errors.New("invalid frame size")

// ReadFrame reads one size-prefixed Kafka frame (int32 big-endian length,
// then that many bytes) from r. A length below zero or above max is refused
// before any allocation.
func ReadFrame(r io.Reader, max int32) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	n := int32(binary.BigEndian.Uint32(size[:]))
	if n < 0 || n > max {
		return nil, fmt.Errorf("%w: %d bytes (maximum %d)", ErrFrameSize, n, max)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("reading %d-byte frame: %w", n, err)
	}
	return buf, nil
}
