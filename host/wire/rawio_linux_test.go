package wire

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"
)

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t testing.TB) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// A TCP connection is read and written with raw system calls, and behaves
// as the net.Conn it wraps: a write larger than the socket buffers waits
// for room and arrives whole and in order, reads see the bytes then EOF.
func TestRawIOMovesBytesLikeTheConn(t *testing.T) {
	client, server := tcpPair(t)
	rw := connIO(server)
	if _, ok := rw.(*rawIO); !ok {
		t.Fatalf("connIO of a TCP connection is %T, want *rawIO", rw)
	}
	payload := bytes.Repeat([]byte("0123456789abcdef"), 1<<19) // 8 MiB: more than the socket buffers
	done := make(chan error, 1)
	go func() {
		n, err := rw.Write(payload)
		if err == nil && n != len(payload) {
			err = io.ErrShortWrite
		}
		done <- err
	}()
	got := make([]byte, len(payload))
	if _, err := io.ReadFull(client, got); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("write: %v", err)
	}
	if !bytes.Equal(got, payload) {
		t.Fatal("the bytes written arrived changed")
	}

	if _, err := client.Write([]byte("request")); err != nil {
		t.Fatal(err)
	}
	client.Close()
	b, err := io.ReadAll(rw)
	if err != nil || string(b) != "request" {
		t.Fatalf("read %q, %v; want %q, nil (io.EOF ends ReadAll)", b, err, "request")
	}
}

// The connection's deadlines and Close hold for raw reads and writes: a
// read past the read deadline fails with a timeout, a read on a closed
// connection with net.ErrClosed, and a write to a reset peer with an error.
func TestRawIOKeepsDeadlinesAndClose(t *testing.T) {
	_, server := tcpPair(t)
	rw := connIO(server)
	server.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err := rw.Read(make([]byte, 8))
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read past the deadline: %v, want a timeout", err)
	}

	server.SetReadDeadline(time.Time{})
	go func() { time.Sleep(50 * time.Millisecond); server.Close() }()
	if _, err := rw.Read(make([]byte, 8)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("read on a connection closed meanwhile: %v, want net.ErrClosed", err)
	}

	client2, server2 := tcpPair(t)
	client2.(*net.TCPConn).SetLinger(0)
	client2.Close() // a reset
	rw2 := connIO(server2)
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := rw2.Write([]byte("response")); err != nil {
			var op *net.OpError
			if !errors.As(err, &op) || op.Op != "write" {
				t.Fatalf("write to a reset peer: %v, want a net.OpError of write", err)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("writes to a reset peer kept succeeding")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Whatever is not a TCP connection (TLS, pipes) is read and written as is.
func TestRawIOOnlyForTCP(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if rw := connIO(a); rw != io.ReadWriter(a) {
		t.Fatalf("connIO of a pipe is %T, want the pipe itself", rw)
	}
}

// WriteTwo writes both buffers whole and in order through a socket whose
// buffers fill up midway (the first buffer larger than they are, and the
// second), and ReadFrom moves a stream from another socket as the
// connection's own ReadFrom does.
func TestRawIOWriteTwoAndReadFrom(t *testing.T) {
	for _, sizes := range [][2]int{{8 << 20, 3}, {4, 8 << 20}, {3 << 20, 5 << 20}, {0, 1 << 10}} {
		client, server := tcpPair(t)
		w := SocketIO(server)
		if _, ok := w.(twoWriter); !ok {
			t.Fatalf("SocketIO of a TCP connection is %T, which cannot write two buffers at once", w)
		}
		a := bytes.Repeat([]byte("a0123456789"), sizes[0]/11+1)[:sizes[0]]
		b := bytes.Repeat([]byte("b9876543210"), sizes[1]/11+1)[:sizes[1]]
		done := make(chan error, 1)
		go func() {
			n, err := WriteTwo(w, a, b)
			if err == nil && n != int64(len(a)+len(b)) {
				err = io.ErrShortWrite
			}
			done <- err
		}()
		got := make([]byte, len(a)+len(b))
		if _, err := io.ReadFull(client, got); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatalf("%v: WriteTwo: %v", sizes, err)
		}
		if !bytes.Equal(got[:len(a)], a) || !bytes.Equal(got[len(a):], b) {
			t.Fatalf("%v: the bytes written arrived changed", sizes)
		}
	}

	src, srcPeer := tcpPair(t)
	client, server := tcpPair(t)
	payload := bytes.Repeat([]byte("stream"), 1<<20)
	go func() { srcPeer.Write(payload); srcPeer.Close() }()
	done := make(chan error, 1)
	go func() {
		n, err := io.CopyN(SocketIO(server), src, int64(len(payload)))
		if err == nil && n != int64(len(payload)) {
			err = io.ErrShortWrite
		}
		done <- err
	}()
	got := make([]byte, len(payload))
	if _, err := io.ReadFull(client, got); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("ReadFrom: %v, bytes intact: %v", err, bytes.Equal(got, payload))
	}
}

// recvLowWater is nc's SO_RCVLOWAT.
func recvLowWater(t *testing.T, nc net.Conn) int {
	t.Helper()
	rc, err := nc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	if err := rc.Control(func(fd uintptr) { v, gerr = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVLOWAT) }); err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	return v
}

// CopyBulk moves exactly n bytes, long or short, between two TCP
// connections (the gateway's streamed answer: the data plane's link to
// the client's connection), and leaves the source's low-water mark as it
// was, so the bytes after the transfer are read as they come. A long
// transfer whose bytes trickle in, the last ones after a pause, still
// ends as soon as its last byte came: the low-water mark never asks for
// more bytes than the transfer has left.
func TestCopyBulkMovesExactlyAndRestoresTheSocket(t *testing.T) {
	for _, n := range []int{1000, bulkMin - 1, bulkMin, bulkMin + bulkLowWater + 12345} {
		for _, trickle := range []bool{false, true} {
			upPeer, up := tcpPair(t)     // the data plane writes to upPeer, the gateway reads up
			down, downPeer := tcpPair(t) // the gateway writes to down, the client reads downPeer
			payload := make([]byte, n)
			for i := range payload {
				payload[i] = byte(i * 7)
			}
			trailer := []byte("next answer")
			go func() {
				if !trickle {
					upPeer.Write(payload)
				} else {
					for i := 0; i < n; i += 64 << 10 {
						upPeer.Write(payload[i:min(i+64<<10, n)])
						time.Sleep(time.Millisecond)
					}
				}
				time.Sleep(20 * time.Millisecond)
				upPeer.Write(trailer)
			}()
			got := make(chan []byte, 1)
			go func() {
				b := make([]byte, n)
				io.ReadFull(downPeer, b)
				got <- b
			}()
			was := recvLowWater(t, up)
			up.SetReadDeadline(time.Now().Add(10 * time.Second))
			m, err := CopyBulk(connIO(down), up, int64(n))
			if err != nil || m != int64(n) {
				t.Fatalf("n=%d trickle=%v: copied %d, %v", n, trickle, m, err)
			}
			if b := <-got; !bytes.Equal(b, payload) {
				t.Fatalf("n=%d trickle=%v: the client got other bytes", n, trickle)
			}
			// 0 and 1 mean the same to the kernel (one byte), which
			// stores a 0 as 1.
			if lw := recvLowWater(t, up); max(lw, 1) != max(was, 1) {
				t.Fatalf("n=%d trickle=%v: SO_RCVLOWAT left at %d, want %d as before", n, trickle, lw, was)
			}
			tb := make([]byte, len(trailer))
			up.SetReadDeadline(time.Now().Add(2 * time.Second))
			if _, err := io.ReadFull(up, tb); err != nil || !bytes.Equal(tb, trailer) {
				t.Fatalf("n=%d trickle=%v: the bytes after the transfer: %q, %v", n, trickle, tb, err)
			}
		}
	}
}
