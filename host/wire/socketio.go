package wire

import (
	"io"
	"net"
)

// SocketIO is what a connection of the host is read and written through:
// on Linux, a plain TCP connection's socket with raw system calls (see
// rawIO: no system-call state of Go's scheduler, so its monitor thread
// sleeps on between requests); nc itself otherwise. Deadlines and Close
// stay nc's.
func SocketIO(nc net.Conn) io.ReadWriter { return connIO(nc) }

// twoWriter writes two buffers in one call (rawIO).
type twoWriter interface {
	WriteTwo(a, b []byte) (int, error)
}

// WriteTwo writes a then b to w, in one writev(2) where w is a socket.
func WriteTwo(w io.Writer, a, b []byte) (int64, error) {
	if tw, ok := w.(twoWriter); ok {
		n, err := tw.WriteTwo(a, b)
		return int64(n), err
	}
	bufs := net.Buffers{a, b}
	return bufs.WriteTo(w)
}

// bulkLowWater is how many bytes of a long transfer a socket queues
// before it wakes its reader (SO_RCVLOWAT), and bulkMin the shortest
// transfer read so.
const (
	bulkLowWater = 256 << 10
	bulkMin      = 4 * bulkLowWater
)

// CopyBulk copies n bytes from src to dst as io.CopyN does (spliced in
// the kernel when both are plain TCP connections). When n is at least
// bulkMin and src is a plain TCP socket, src's reader is woken only once
// bulkLowWater bytes are queued, until the last bulkLowWater bytes, which
// are copied as they come: a data plane sends a large answer faster than
// one hop takes it on, and each wake-up costs the gateway a thread switch
// and the client one more (docs/RATIONALE.md). The transfer's end is not
// delayed: only the bytes before its last bulkLowWater wait for company.
func CopyBulk(dst io.Writer, src net.Conn, n int64) (int64, error) {
	if n < bulkMin {
		return io.CopyN(dst, src, n)
	}
	var done int64
	if prev, ok := swapRecvLowWater(src, bulkLowWater); ok {
		var err error
		done, err = io.CopyN(dst, src, n-bulkLowWater)
		swapRecvLowWater(src, prev)
		if err != nil {
			return done, err
		}
	}
	m, err := io.CopyN(dst, src, n-done)
	return done + m, err
}
