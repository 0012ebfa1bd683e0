package wire

import (
	"bufio"
	"bytes"
	"io"
	"testing"
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
