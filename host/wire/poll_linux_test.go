package wire

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// pollPair is a loopback TCP connection whose server side a poller
// adopted, and its client side.
func pollPair(t *testing.T, p *poller) (*pollConn, *net.TCPConn) {
	t.Helper()
	client, sc := tcpPair(t)
	c, err := p.adopt(sc.(*net.TCPConn))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, client.(*net.TCPConn)
}

func testPoller(t *testing.T) *poller {
	t.Helper()
	p, err := newPoller()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	return p
}

// Bytes go both ways, and a read waits for the poller's edge: the client
// writes only after the read began.
func TestPollConnEcho(t *testing.T) {
	p := testPoller(t)
	c, client := pollPair(t, p)
	go func() {
		time.Sleep(50 * time.Millisecond)
		client.Write([]byte("ping"))
	}()
	buf := make([]byte, 16)
	n, err := c.Read(buf)
	if err != nil || string(buf[:n]) != "ping" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	if _, err := c.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	client.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(client, buf[:4]); err != nil || string(buf[:4]) != "pong" {
		t.Fatalf("client read %q, %v", buf[:4], err)
	}
	if c.RemoteAddr().String() != client.LocalAddr().String() || c.LocalAddr().String() != client.RemoteAddr().String() {
		t.Fatalf("addresses %v %v, client's %v %v", c.LocalAddr(), c.RemoteAddr(), client.LocalAddr(), client.RemoteAddr())
	}
}

// A write larger than the socket buffers waits for room (EAGAIN, then the
// poller's EPOLLOUT edge) while the client reads slowly; every byte
// arrives in order, both ways at once.
func TestPollConnFullSocket(t *testing.T) {
	p := testPoller(t)
	c, client := pollPair(t, p)
	if err := unix.SetsockoptInt(c.fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
		t.Fatal(err)
	}
	out := make([]byte, 4<<20)
	for i := range out {
		out[i] = byte(i * 7)
	}
	in := bytes.Repeat([]byte("abcdefg"), 300_000)
	var wg sync.WaitGroup
	wg.Add(3)
	errs := make(chan error, 4)
	go func() { // the server writes out
		defer wg.Done()
		if n, err := c.Write(out); err != nil || n != len(out) {
			errs <- err
		}
	}()
	go func() { // the client writes in
		defer wg.Done()
		if _, err := client.Write(in); err != nil {
			errs <- err
		}
	}()
	got := make([]byte, len(out))
	go func() { // the client reads slowly at first
		defer wg.Done()
		time.Sleep(100 * time.Millisecond)
		if _, err := io.ReadFull(client, got); err != nil {
			errs <- err
		}
	}()
	back := make([]byte, len(in))
	if _, err := io.ReadFull(c, back); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if !bytes.Equal(got, out) || !bytes.Equal(back, in) {
		t.Fatal("bytes differ")
	}
}

func TestPollConnEOF(t *testing.T) {
	p := testPoller(t)
	c, client := pollPair(t, p)
	client.Write([]byte("last"))
	client.Close()
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "last" {
		t.Fatalf("read %q, %v", b, err)
	}
}

// A read deadline ends a waiting read with a timeout, as net.Conn's does,
// and a later deadline lets reads wait again.
func TestPollConnReadDeadline(t *testing.T) {
	p := testPoller(t)
	c, client := pollPair(t, p)
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	start := time.Now()
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("err %v, want a timeout", err)
	}
	if waited := time.Since(start); waited < 40*time.Millisecond {
		t.Fatalf("returned after %v, before the deadline", waited)
	}
	c.SetReadDeadline(time.Time{})
	go func() {
		time.Sleep(20 * time.Millisecond)
		client.Write([]byte("x"))
	}()
	if _, err := c.Read(make([]byte, 1)); err != nil {
		t.Fatalf("after clearing the deadline: %v", err)
	}
}

// Setting a deadline in the past from another goroutine ends a read
// waiting without one (Server.Shutdown does so to idle connections).
func TestPollConnDeadlineWakesRead(t *testing.T) {
	p := testPoller(t)
	c, _ := pollPair(t, p)
	done := readLater(c)
	c.SetReadDeadline(time.Now())
	if err := readEnd(t, done); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("err %v, want a timeout", err)
	}
}

// readLater starts a read of c and returns its outcome's channel once the
// read has had time to wait.
func readLater(c *pollConn) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	return done
}

// readEnd is the outcome of readLater's read, which must end within 5 s.
func readEnd(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		t.Fatal("the read still waits")
		return nil
	}
}

// Close ends a waiting read and write with net.ErrClosed and closes the
// socket: the client sees the end of the stream.
func TestPollConnClose(t *testing.T) {
	p := testPoller(t)
	c, client := pollPair(t, p)
	done := readLater(c)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := readEnd(t, done); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("err %v, want net.ErrClosed", err)
	}
	if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}
	if err := c.Close(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("second close: %v", err)
	}
	client.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := client.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("client read %d, %v; want EOF", n, err)
	}
}

// The adopted socket left Go's poller: the TCPConn it came from is closed,
// and the poller alone delivers its bytes.
func TestPollerAdoptClosesTCPConn(t *testing.T) {
	p := testPoller(t)
	client, sc := tcpPair(t)
	c, err := p.adopt(sc.(*net.TCPConn))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := sc.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("the old TCPConn reads: %v", err)
	}
	client.Write([]byte("y"))
	b := make([]byte, 1)
	if _, err := c.Read(b); err != nil || b[0] != 'y' {
		t.Fatalf("read %q, %v", b, err)
	}
}
