package wire

import (
	"io"
	"net"
	"os"
	"syscall"
	"unsafe"
)

// rawIO reads and writes a TCP connection's socket with raw system calls
// (syscall.RawSyscall), through the connection's poller (syscall.RawConn):
// deadlines, closing and the wait for readiness are the net package's.
//
// Why: net.Conn's Read and Write enter the Go scheduler's system-call state
// (entersyscall) around each call, and the scheduler's monitor thread
// (sysmon) hands the P of a thread it finds still in a system call to
// another thread, waking one. A write on loopback delivers the segment to
// the peer inside the call (tens of microseconds), so with one write per
// response the monitor found a write in flight on almost every tick, kept
// its 20 µs period and woke threads all the time: 8–14 % of the server's
// CPU in the heartbeat benchmark (docs/BENCHMARKS.md). The socket is
// non-blocking (the net package makes every socket so): a read or write
// never waits in the kernel, it returns EAGAIN and the wait happens in the
// poller, so the call never needs to give its P away.
type rawIO struct {
	nc net.Conn
	rc syscall.RawConn

	// The state of the read and of the write in progress (one of each
	// at a time, as on a net.Conn), shared with their callbacks, which
	// are made once so that a call allocates nothing. wr2 is the second
	// buffer of a WriteTwo.
	rd, wr       rawCall
	wr2          []byte
	readFn, wrFn func(fd uintptr) bool
}

// rawCall is one read or write in progress: its buffer, the bytes done,
// and the error number that ended it.
type rawCall struct {
	buf   []byte
	n     int
	errno syscall.Errno
}

// connIO is what a connection reads and writes: raw I/O over nc's socket,
// or nc itself when it is not a socket the net package polls (a TLS
// connection, a pipe in tests).
func connIO(nc net.Conn) io.ReadWriter {
	sc, ok := nc.(*net.TCPConn)
	if !ok {
		return nc
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nc
	}
	r := &rawIO{nc: nc, rc: rc}
	r.readFn = r.readOnce
	r.wrFn = r.writeTwo
	return r
}

// readOnce is one read(2) into r.rd.buf; false asks the poller to wait for
// the socket to become readable.
func (r *rawIO) readOnce(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(unsafe.SliceData(r.rd.buf))), uintptr(len(r.rd.buf)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		case 0:
			r.rd.n = int(n)
		default:
			r.rd.errno = e
		}
		return true
	}
}

// writeTwo writes all of r.wr.buf then all of r.wr2 (if any) with
// writev(2), r.wr.n counting what was written of both; false asks the
// poller to wait for room in the socket's buffer.
func (r *rawIO) writeTwo(fd uintptr) bool {
	w := &r.wr
	for total := len(w.buf) + len(r.wr2); w.n < total; {
		var iov [2]syscall.Iovec
		cnt := 0
		if w.n < len(w.buf) {
			rest := w.buf[w.n:]
			iov[0] = syscall.Iovec{Base: unsafe.SliceData(rest)}
			iov[0].SetLen(len(rest))
			cnt++
		}
		if rest := r.wr2[max(w.n-len(w.buf), 0):]; len(rest) > 0 {
			iov[cnt] = syscall.Iovec{Base: unsafe.SliceData(rest)}
			iov[cnt].SetLen(len(rest))
			cnt++
		}
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(cnt))
		switch e {
		case 0:
			w.n += int(n)
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			w.errno = e
			return true
		}
	}
	return true
}

// WriteTwo writes all of a then all of b, in one writev(2) when the
// socket takes them (net.Buffers' WriteTo on a net.Conn, without the
// scheduler's system-call state).
func (r *rawIO) WriteTwo(a, b []byte) (int, error) {
	r.wr, r.wr2 = rawCall{buf: a}, b
	err := r.rc.Write(r.wrFn)
	n, errno := r.wr.n, r.wr.errno
	r.wr.buf, r.wr2 = nil, nil
	switch {
	case err != nil:
		return n, err
	case errno != 0:
		return n, r.opError("write", errno)
	}
	return n, nil
}

// ReadFrom copies from src as the connection's own ReadFrom does
// (splice(2) from a TCP socket, io.Copy's buffer otherwise): a large
// answer streamed on keeps its path in the kernel.
func (r *rawIO) ReadFrom(src io.Reader) (int64, error) {
	if rf, ok := r.nc.(io.ReaderFrom); ok {
		return rf.ReadFrom(src)
	}
	return io.Copy(struct{ io.Writer }{r}, src)
}

// Read reads into p as net.Conn's Read does: io.EOF at the end of the
// stream, a net.OpError otherwise.
func (r *rawIO) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.rd = rawCall{buf: p}
	err := r.rc.Read(r.readFn)
	n, errno := r.rd.n, r.rd.errno
	r.rd.buf = nil
	switch {
	case err != nil:
		return 0, err
	case errno != 0:
		return 0, r.opError("read", errno)
	case n == 0:
		return 0, io.EOF
	}
	return n, nil
}

// Write writes all of p as net.Conn's Write does.
func (r *rawIO) Write(p []byte) (int, error) { return r.WriteTwo(p, nil) }

func (r *rawIO) opError(op string, errno syscall.Errno) error {
	return &net.OpError{Op: op, Net: r.nc.LocalAddr().Network(), Source: r.nc.LocalAddr(), Addr: r.nc.RemoteAddr(), Err: os.NewSyscallError(op, errno)}
}

// skip drops the next n bytes of the socket with recv(2) and MSG_TRUNC,
// which on a TCP socket discards the bytes it would have copied (tcp(7)):
// one call drops all the socket holds, up to n. ok is false, with nothing
// dropped, when the kernel refuses to (EFAULT: it tried to copy).
func (r *rawIO) skip(n int64) (ok bool, err error) {
	for first := true; n > 0; first = false {
		var got uintptr
		var errno syscall.Errno
		err := r.rc.Read(func(fd uintptr) bool {
			for {
				got, _, errno = syscall.RawSyscall6(syscall.SYS_RECVFROM, fd, 0, uintptr(min(n, 1<<30)), syscall.MSG_TRUNC, 0, 0)
				if errno != syscall.EINTR {
					return errno != syscall.EAGAIN
				}
			}
		})
		switch {
		case err != nil:
			return true, err
		case errno == syscall.EFAULT && first:
			return false, nil
		case errno != 0:
			return true, r.opError("read", errno)
		case got == 0:
			return true, io.ErrUnexpectedEOF
		}
		n -= int64(got)
	}
	return true, nil
}

// swapRecvLowWater sets nc's SO_RCVLOWAT to n bytes and returns the
// value it had: its reader is woken, and the socket polled readable, only
// once n bytes are queued (or the peer closed, or the receive window is
// nearly full). ok is false, nothing changed, when nc is not a plain TCP
// connection or the kernel refused.
func swapRecvLowWater(nc net.Conn, n int) (prev int, ok bool) {
	tc, isTCP := nc.(*net.TCPConn)
	if !isTCP {
		return 0, false
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return 0, false
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		if prev, serr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT); serr == nil {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT, n)
		}
	}); err != nil || serr != nil {
		return 0, false
	}
	return prev, true
}
