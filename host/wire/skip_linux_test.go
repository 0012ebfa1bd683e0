package wire

import (
	"bufio"
	"bytes"
	"io"
	"syscall"
	"testing"
	"time"
)

// A refused frame's rest is dropped by the kernel (rawIO.skip, MSG_TRUNC),
// not copied: exactly its bytes, the part already buffered included, so
// the next frame is read whole.
func TestSkipFrameDropsExactlyTheFrame(t *testing.T) {
	client, server := tcpPair(t)
	c := &conn{rw: connIO(server)}
	frame := bytes.Repeat([]byte{0xff}, 3<<20)
	go func() {
		client.Write(frame)
		client.Write([]byte("next"))
	}()
	br := bufio.NewReaderSize(c.rw, 8<<10)
	if _, err := br.Peek(100); err != nil { // the frame's start is buffered, as screen leaves it
		t.Fatal(err)
	}
	if err := c.skipFrame(br, int64(len(frame))); err != nil {
		t.Fatal(err)
	}
	next := make([]byte, 4)
	if _, err := io.ReadFull(br, next); err != nil || string(next) != "next" {
		t.Fatalf("after the frame: %q, %v", next, err)
	}
}

// rawIO.skip drops bytes without copying them on a TCP socket: it does
// not fall back to reading them.
func TestRawIOSkipsInTheKernel(t *testing.T) {
	client, server := tcpPair(t)
	rw := connIO(server).(*rawIO)
	go client.Write(append(bytes.Repeat([]byte{1}, 1<<20), "tail"...))
	if ok, err := rw.skip(1 << 20); !ok || err != nil {
		t.Fatalf("skip: ok %v, %v", ok, err)
	}
	tail := make([]byte, 4)
	if _, err := io.ReadFull(rw, tail); err != nil || string(tail) != "tail" {
		t.Fatalf("after the skip: %q, %v", tail, err)
	}
}

// BenchmarkSkipFrame prices reading past a refused 3 MB frame on a
// loopback TCP connection: dropped by the kernel (rawIO.skip) against
// read and copied in 8 KiB pieces (the I/O without skip, as before).
// cpu-ns/op is the process's CPU time (user and system) per frame, the
// writer's included, which is the same in both.
func BenchmarkSkipFrame(b *testing.B) {
	for _, bc := range []struct {
		name string
		hide bool
	}{{"kernel", false}, {"copy", true}} {
		b.Run(bc.name, func(b *testing.B) {
			client, server := tcpPair(b)
			c := &conn{rw: connIO(server)}
			if bc.hide {
				c.rw = struct{ io.ReadWriter }{c.rw} // no skip method
			}
			frame := bytes.Repeat([]byte{0xff}, 3<<20)
			go func() {
				for i := 0; i < b.N; i++ {
					if _, err := client.Write(frame); err != nil {
						return
					}
				}
			}()
			br := bufio.NewReaderSize(c.rw, 8<<10)
			b.SetBytes(int64(len(frame)))
			b.ResetTimer()
			cpu0 := processCPU()
			for i := 0; i < b.N; i++ {
				if err := c.skipFrame(br, int64(len(frame))); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
		})
	}
}

// processCPU is the user and system CPU time the process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
