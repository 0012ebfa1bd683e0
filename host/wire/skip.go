package wire

import (
	"bufio"
	"io"
)

// skipper is a connection's I/O that can drop the next bytes of its
// stream without copying them (rawIO on Linux).
type skipper interface {
	// skip drops the next n bytes; false when the socket cannot drop
	// them uncopied (nothing was dropped then).
	skip(n int64) (ok bool, err error)
}

// skipFrame reads past the next n bytes of br, the rest of a frame
// refused without being read (screen): the bytes br holds, then the
// rest dropped by the kernel uncopied where the connection's I/O can
// (skipper), else read into a discarded buffer. A refused 3 MB frame
// then costs the listener a few system calls instead of hundreds of 8
// KiB reads and copies, which the goroutines of 32 such connections
// spent ahead of every other connection's goroutine.
func (c *conn) skipFrame(br *bufio.Reader, n int64) error {
	held := min(int64(br.Buffered()), n)
	if _, err := br.Discard(int(held)); err != nil {
		return err
	}
	n -= held
	if s, ok := c.rw.(skipper); ok && n > 0 {
		// br holds nothing now: the bytes after the frame go through
		// it as before.
		if done, err := s.skip(n); done || err != nil {
			return err
		}
	}
	_, err := io.CopyN(io.Discard, br, n)
	return err
}
