package wire

import (
	"net"
	"time"
)

// meter is an accepted connection whose reads and writes count the time
// they spend in the kernel's read and write calls — copying the bytes,
// not waiting for the peer to send them or to make room for them: what
// Kafka's selector counts as a channel's network thread time, which its
// request quota charges to the client (docs/HOST.md, "Group quotas").
// Only the connection's goroutine reads, writes and takes the time. A
// connection the operating system gives no raw access to (a pipe in
// tests) is read and written as it is, and counts nothing.
type meter struct {
	net.Conn
	raw   rawIO // nil: not metered
	spent time.Duration
}

// rawIO reads and writes a connection's socket directly, adding the time
// of each read and write call to *spent.
type rawIO interface {
	read(p []byte, spent *time.Duration) (int, error)
	write(p []byte, spent *time.Duration) (int, error)
}

func newMeter(nc net.Conn) *meter {
	return &meter{Conn: nc, raw: rawOf(nc)}
}

func (m *meter) Read(p []byte) (int, error) {
	if m.raw == nil {
		return m.Conn.Read(p)
	}
	return m.raw.read(p, &m.spent)
}

func (m *meter) Write(p []byte) (int, error) {
	if m.raw == nil {
		return m.Conn.Write(p)
	}
	return m.raw.write(p, &m.spent)
}

// add counts d of the connection's own work (encoding an answer) with
// its reads and writes.
func (m *meter) add(d time.Duration) { m.spent += d }

// take returns the time counted since the last take.
func (m *meter) take() time.Duration {
	d := m.spent
	m.spent = 0
	return d
}
