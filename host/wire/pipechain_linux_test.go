package wire

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
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
// another TCP connection, or read, byte for byte, also when they come in
// pieces too small for the pipes to hold them all; a source that ends
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
		spliceOut(t, p, data)
	})
	t.Run("read", func(t *testing.T) {
		p, err := fill(t, data)
		if err != nil {
			t.Fatal(err)
		}
		readOut(t, p, data)
	})
	// Bytes that come in many small pieces, each from a page of its own
	// (a network card's packets, here sendfile(2) of 512 bytes a page),
	// take a pipe's slot each: a pipe holds 256 of them, a fraction of its
	// 1 MiB. The chain reads what its pipes cannot hold into memory.
	fillPieces := func(t *testing.T) *pipeChain {
		const piece = 512
		f, err := os.CreateTemp(t.TempDir(), "pieces")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		spread := make([]byte, len(data)/piece*4096)
		for i := 0; i*piece < len(data); i++ {
			copy(spread[i*4096:], data[i*piece:(i+1)*piece])
		}
		if _, err := f.Write(spread); err != nil {
			t.Fatal(err)
		}
		src, in := tcpConns(t)
		src.SetNoDelay(true)
		sent := make(chan error, 1)
		go func() {
			rc, err := src.SyscallConn()
			if err != nil {
				sent <- err
				return
			}
			for i := 0; i*piece < len(data) && err == nil; i++ {
				off, left := int64(i*4096), piece
				werr := rc.Write(func(fd uintptr) bool {
					for left > 0 {
						k, err := syscall.Sendfile(int(fd), int(f.Fd()), &off, left)
						if err == syscall.EAGAIN {
							return false
						}
						if err != nil {
							return true
						}
						left -= k
					}
					return true
				})
				if werr != nil || left > 0 {
					err = fmt.Errorf("sendfile of piece %d: %v", i, werr)
				}
			}
			sent <- err
		}()
		p, err := newPipeChain(int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Close)
		if err := p.fillFrom(in, int64(len(data))); err != nil {
			t.Fatalf("fill from small pieces: %v", err)
		}
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
		if len(p.tail) == 0 {
			t.Fatal("every byte went into the pipes: the pieces were not small")
		}
		return p
	}
	// Bytes that come in many small pieces, each from a page of its own
	// (a network card's packets, here sendfile(2) of 512 bytes a page),
	// take a pipe's slot each: a pipe holds 256 of them, a fraction of its
	// 1 MiB. The chain reads what its pipes cannot hold into memory.
	t.Run("small pieces spliced", func(t *testing.T) {
		p := fillPieces(t)
		spliceOut(t, p, data)
	})
	t.Run("small pieces read", func(t *testing.T) {
		p := fillPieces(t)
		readOut(t, p, data)
	})
	t.Run("short", func(t *testing.T) {
		if _, err := fill(t, data[:2<<20]); err != io.ErrUnexpectedEOF {
			t.Fatalf("a source ending early: %v", err)
		}
	})
}

// spliceOut splices what p holds to a TCP connection and checks that its
// peer reads want.
func spliceOut(t *testing.T, p *pipeChain, want []byte) {
	t.Helper()
	out, dst := tcpConns(t)
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(dst, int64(len(want))))
		got <- b
	}()
	if n, err := p.SpliceTo(out); err != nil || n != int64(len(want)) {
		t.Fatalf("spliced %d of %d bytes: %v", n, len(want), err)
	}
	if !bytes.Equal(<-got, want) {
		t.Fatal("the bytes spliced differ from those sent")
	}
}

// readOut reads what p holds and checks that it is want.
func readOut(t *testing.T, p *pipeChain, want []byte) {
	t.Helper()
	b, err := io.ReadAll(p)
	if err != nil || !bytes.Equal(b, want) {
		t.Fatalf("read %d bytes (%v), want the %d sent", len(b), err, len(want))
	}
}
