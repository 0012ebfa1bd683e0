package wire

import (
	"bytes"
	"testing"
)

// TestFramePoolKeepsWithinAQuarterOfTheBudget: buffers of frames over
// 1 MiB are kept while they fit in a quarter of the budget, handed out
// smallest first to a frame they hold, not counted as garbage for a
// forced collection while kept, and let go by drop.
func TestFramePoolKeepsWithinAQuarterOfTheBudget(t *testing.T) {
	const mib = 1 << 20
	l := NewLimits(32*mib, 10, 10) // keeps up to 8 MiB
	three, two, big := make([]byte, 3*mib), make([]byte, 2*mib), make([]byte, 4*mib)
	l.recycle(make([]byte, pooledFrame)) // not over pooledFrame: never kept
	l.recycle(three)
	l.recycle(two)
	l.recycle(big) // 3 + 2 + 4 > 8: not kept
	if got := l.frames.bytes; got != 5*mib {
		t.Fatalf("kept %d bytes, want the 3 and 2 MiB buffers", got)
	}
	if g := l.garbage.Load(); g != -5*mib {
		t.Fatalf("garbage %d after keeping 5 MiB, want -5 MiB", g)
	}
	b := l.frameBuffer(mib + mib/2)
	if len(b) != mib+mib/2 || &b[0] != &two[0] {
		t.Fatalf("a 1.5 MiB frame got a buffer of len %d, not the 2 MiB one", len(b))
	}
	if b := l.frameBuffer(3*mib + 1); &b[0] == &three[0] {
		t.Fatal("a frame larger than every kept buffer got one")
	}
	if b := l.frameBuffer(3 * mib); &b[0] != &three[0] {
		t.Fatal("a 3 MiB frame did not get the kept 3 MiB buffer")
	}
	if l.frames.bytes != 0 || len(l.frames.free) != 0 {
		t.Fatalf("%d bytes in %d buffers kept after both were handed out", l.frames.bytes, len(l.frames.free))
	}
	l.recycle(two)
	l.frames.drop()
	if b := l.frameBuffer(2 * mib); &b[0] == &two[0] || l.frames.bytes != 0 {
		t.Fatal("a buffer was kept after drop")
	}
	var none *Limits
	none.recycle(two)
	if len(none.frameBuffer(2*mib)) != 2*mib {
		t.Fatal("nil limits: no buffer of the frame's size")
	}
}

// TestFramePoolKeepsMidSizeFrames: a frame over pooledFrame but not over
// 1 MiB (a Java producer's request) is read into a kept buffer and kept
// again once forwarded; its bytes never counted as garbage for a forced
// collection, so keeping it leaves the count alone. A frame of
// pooledFrame bytes or fewer gets a fresh buffer and is never kept.
func TestFramePoolKeepsMidSizeFrames(t *testing.T) {
	l := NewLimits(32<<20, 10, 10)
	const n = 96 << 10
	mid := make([]byte, n)
	l.recycle(mid)
	if l.frames.bytes != n || l.garbage.Load() != 0 {
		t.Fatalf("after keeping a %d-byte frame: %d bytes kept, garbage %d; want %d and 0", n, l.frames.bytes, l.garbage.Load(), n)
	}
	body := bytes.Repeat([]byte{7}, n-100)
	got, err := readFrameBody(bytes.NewReader(body), int32(len(body)), l)
	if err != nil || !bytes.Equal(got, body) || &got[0] != &mid[0] {
		t.Fatalf("a %d-byte frame: read %d bytes (%v), into the kept buffer: %v", len(body), len(got), err, err == nil && &got[0] == &mid[0])
	}
	small := bytes.Repeat([]byte{8}, pooledFrame)
	l.recycle(mid)
	got, err = readFrameBody(bytes.NewReader(small), int32(len(small)), l)
	if err != nil || !bytes.Equal(got, small) || &got[0] == &mid[0] {
		t.Fatalf("a %d-byte frame: read %d bytes (%v), into the kept buffer: %v", len(small), len(got), err, &got[0] == &mid[0])
	}
	l.recycle(got)
	if l.frames.bytes != n || len(l.frames.free) != 1 {
		t.Fatalf("a frame of pooledFrame bytes was kept: %d bytes in %d buffers", l.frames.bytes, len(l.frames.free))
	}
}
