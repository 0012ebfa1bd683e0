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
