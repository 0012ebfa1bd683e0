//go:build !unix

package wire

import "net"

// rawOf returns nil: reads and writes are not metered here.
func rawOf(net.Conn) rawIO { return nil }
