//go:build !linux

package wire

import (
	"io"
	"net"
)

// connIO is what a connection reads and writes: nc itself (raw socket I/O,
// rawio_linux.go, is Linux's).
func connIO(nc net.Conn) io.ReadWriter { return nc }

// swapRecvLowWater is Linux's (rawio_linux.go); elsewhere a socket's
// reader is woken as bytes come.
func swapRecvLowWater(net.Conn, int) (prev int, ok bool) { return 0, false }
