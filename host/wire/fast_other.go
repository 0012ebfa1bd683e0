//go:build !linux

package wire

import (
	"bufio"
	"context"
	"net"
	"time"
)

// Elsewhere than on Linux a listener has no poller of its own: every
// connection is served by its goroutine.

func (c *conn) parkable(*bufio.Reader) bool { return false }

func (c *conn) parkAndServe(context.Context) (bool, error) {
	panic("wire: no poller on this system")
}

func (s *Server) adoptConn(nc net.Conn) (net.Conn, *pollConn) { return nc, nil }

func (c *conn) repoll(*bufio.Reader) error { return nil }

func (c *conn) noteBeat(int16, time.Time) {}
