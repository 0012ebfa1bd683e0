//go:build unix

package wire

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"time"
)

// rawOf returns the raw reads and writes of nc's socket, or nil when nc
// has none.
func rawOf(nc net.Conn) rawIO {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return &socket{nc: nc, rc: rc}
}

// socket reads and writes a connection's file descriptor through the
// runtime's poller (deadlines and Close behave as on the net.Conn): a
// read or write call that would block returns to the poller, which waits
// for the socket to be ready without the wait being counted.
type socket struct {
	nc net.Conn
	rc syscall.RawConn
}

func (s *socket) read(p []byte, spent *time.Duration) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var errno error
	err := s.rc.Read(func(fd uintptr) bool {
		for {
			start := time.Now()
			n, errno = syscall.Read(int(fd), p)
			*spent += time.Since(start)
			if !errors.Is(errno, syscall.EINTR) {
				return !errors.Is(errno, syscall.EAGAIN)
			}
		}
	})
	if err == nil && errno != nil {
		err = os.NewSyscallError("read", errno)
	}
	switch {
	case err != nil:
		return 0, s.opError("read", err)
	case n <= 0:
		return 0, io.EOF
	}
	return n, nil
}

func (s *socket) write(p []byte, spent *time.Duration) (int, error) {
	done := 0
	var errno error
	err := s.rc.Write(func(fd uintptr) bool {
		for done < len(p) {
			start := time.Now()
			n, e := syscall.Write(int(fd), p[done:])
			*spent += time.Since(start)
			done += max(n, 0)
			switch {
			case errors.Is(e, syscall.EINTR):
			case errors.Is(e, syscall.EAGAIN):
				return false // wait until the socket takes more
			case e != nil:
				errno = os.NewSyscallError("write", e)
				return true
			case n == 0:
				errno = io.ErrUnexpectedEOF
				return true
			}
		}
		return true
	})
	if err == nil {
		err = errno
	}
	if err != nil {
		return done, s.opError("write", err)
	}
	return done, nil
}

// opError wraps err as the net package reports a failed read or write
// (the raw connection's own wrapping, which names the raw call, taken
// off).
func (s *socket) opError(op string, err error) error {
	if oe := (*net.OpError)(nil); errors.As(err, &oe) {
		err = oe.Err
	}
	return &net.OpError{Op: op, Net: s.nc.LocalAddr().Network(), Source: s.nc.LocalAddr(), Addr: s.nc.RemoteAddr(), Err: err}
}
