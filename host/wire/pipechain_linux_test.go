package wire

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"
)

// tcpConns is a connected pair of TCP connections on loopback.
func tcpConns(t *testing.T) (a, b *net.TCPConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(); s.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	s.SetDeadline(time.Now().Add(10 * time.Second))
	return c.(*net.TCPConn), s.(*net.TCPConn)
}

// TestPipeChain: 2.5 MiB written in pieces on one TCP connection are
// moved into the pipes of a chain (three of them), then spliced whole to
// another TCP connection, or read, byte for byte; a source that ends
// early fails the fill with an unexpected EOF.
func TestPipeChain(t *testing.T) {
	data := make([]byte, 5<<19)
	for i := range data {
		data[i] = byte(i*31 + i>>12)
	}
	fill := func(t *testing.T, send []byte) (*pipeChain, error) {
		src, in := tcpConns(t)
		go func() {
			for rest := send; len(rest) > 0; {
				n := min(len(rest), 300<<10)
				if _, err := src.Write(rest[:n]); err != nil {
					return
				}
				rest = rest[n:]
				time.Sleep(2 * time.Millisecond)
			}
			src.CloseWrite()
		}()
		p, err := newPipeChain(int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		if len(p.pipes) != 3 {
			t.Fatalf("%d pipes for 2.5 MiB", len(p.pipes))
		}
		return p, p.fillFrom(in, int64(len(data)))
	}
	t.Run("splice", func(t *testing.T) {
		p, err := fill(t, data)
		if err != nil {
			t.Fatal(err)
		}
		out, dst := tcpConns(t)
		got := make(chan []byte, 1)
		go func() {
			b, _ := io.ReadAll(io.LimitReader(dst, int64(len(data))))
			got <- b
		}()
		if n, err := p.SpliceTo(out); err != nil || n != int64(len(data)) {
			t.Fatalf("spliced %d of %d bytes: %v", n, len(data), err)
		}
		if !bytes.Equal(<-got, data) {
			t.Fatal("the bytes spliced differ from those sent")
		}
	})
	t.Run("read", func(t *testing.T) {
		p, err := fill(t, data)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(p)
		if err != nil || !bytes.Equal(b, data) {
			t.Fatalf("read %d bytes (%v), want the %d sent", len(b), err, len(data))
		}
	})
	t.Run("short", func(t *testing.T) {
		if _, err := fill(t, data[:2<<20]); err != io.ErrUnexpectedEOF {
			t.Fatalf("a source ending early: %v", err)
		}
	})
}
