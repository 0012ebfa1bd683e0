package shadowproc

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
	"time"
)

// messages is one of each message, as the fuzz seeds and the round trip
// use them.
func messages() [][]byte {
	return [][]byte{
		appendLimits(nil, limits{MemoryLimitPages: 256, Deadline: 150 * time.Millisecond, Interpreter: true, MaxModuleBytes: 1 << 20, MaxOutputBytes: 1 << 16, RecycleAboveBytes: 1 << 23, CacheDir: "/var/cache/x"}),
		appendLoad(nil, load{ID: 1, Name: "candidate", Path: "/p/a.wasm", Version: "wasm sha256:0123456789abcdef"}),
		appendAssign(nil, assign{ID: 2, Timeout: time.Second, Name: "candidate", Input: []byte{1, 2, 3}}),
		appendResult(nil, result{ID: 2, Compute: time.Millisecond, Err: "plugin \"candidate\": assign: trap", Output: []byte{9}}),
		appendResult(nil, result{ID: 3}),
	}
}

// TestFrameRoundTrip: every message decodes to what was encoded, and
// encodes again to the same bytes.
func TestFrameRoundTrip(t *testing.T) {
	want := []any{
		limits{MemoryLimitPages: 256, Deadline: 150 * time.Millisecond, Interpreter: true, MaxModuleBytes: 1 << 20, MaxOutputBytes: 1 << 16, RecycleAboveBytes: 1 << 23, CacheDir: "/var/cache/x"},
		load{ID: 1, Name: "candidate", Path: "/p/a.wasm", Version: "wasm sha256:0123456789abcdef"},
		assign{ID: 2, Timeout: time.Second, Name: "candidate", Input: []byte{1, 2, 3}},
		result{ID: 2, Compute: time.Millisecond, Err: "plugin \"candidate\": assign: trap", Output: []byte{9}},
		result{ID: 3, Output: []byte{}},
	}
	var stream bytes.Buffer
	for _, m := range messages() {
		if err := writeFrame(&stream, m, maxFrame); err != nil {
			t.Fatal(err)
		}
	}
	in := bytes.NewReader(stream.Bytes())
	for i, w := range want {
		p, err := readFrame(in, maxFrame, nil)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		got, err := decodeFrame(p)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if g, w := reencode(got), reencode(w); !bytes.Equal(g, w) {
			t.Errorf("frame %d: %+v, want %+v", i, got, w)
		}
	}
	if _, err := readFrame(in, maxFrame, nil); err != io.EOF {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}
}

// reencode is the payload of a decoded message.
func reencode(m any) []byte {
	var f []byte
	switch m := m.(type) {
	case limits:
		f = appendLimits(nil, m)
	case load:
		f = appendLoad(nil, m)
	case assign:
		f = appendAssign(nil, m)
	case result:
		f = appendResult(nil, m)
	}
	return f[4:]
}

// countingReader counts the bytes read from it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += n
	return n, err
}

// TestReadFrameRefusesLongFrames: a declared length above the limit is an
// error after the 4 length bytes, before anything is allocated or read
// for it; an empty frame and a frame cut short are errors too; so are
// writes above the limit.
func TestReadFrameRefusesLongFrames(t *testing.T) {
	for _, n := range []uint32{maxFrame + 1, 1 << 31, 0xffffffff} {
		h := binary.BigEndian.AppendUint32(nil, n)
		r := &countingReader{r: io.MultiReader(bytes.NewReader(h), zeros{})}
		// The memory statistics are process-wide, so a goroutine another
		// test left behind may allocate meanwhile: the bound is on bytes,
		// averaged over many refusals, and sits far below the frame's own
		// size (at least 64 MiB) yet far above the error's few hundred.
		const runs = 64
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range runs {
			r.n = 0
			r.r = io.MultiReader(bytes.NewReader(h), zeros{})
			if _, err := readFrame(r, maxFrame, nil); !errors.Is(err, ErrFrameTooLarge) {
				t.Fatalf("length %d: %v, want ErrFrameTooLarge", n, err)
			}
			if r.n != 4 {
				t.Fatalf("length %d: read %d bytes for the refused frame, want the 4 length bytes", n, r.n)
			}
		}
		runtime.ReadMemStats(&after)
		if perRun := (after.TotalAlloc - before.TotalAlloc) / runs; perRun > 64<<10 {
			t.Errorf("length %d: allocated %d bytes per refused frame", n, perRun)
		}
	}
	if _, err := readFrame(bytes.NewReader([]byte{0, 0, 0, 0}), maxFrame, nil); err == nil {
		t.Error("an empty frame was accepted")
	}
	if _, err := readFrame(bytes.NewReader([]byte{0, 0, 0, 9, 'r', 1}), maxFrame, nil); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a frame cut short: %v, want ErrUnexpectedEOF", err)
	}
	big := appendAssign(nil, assign{ID: 1, Timeout: time.Second, Name: "x", Input: make([]byte, 100)})
	if err := writeFrame(io.Discard, big, 64); !errors.Is(err, ErrFrameTooLarge) {
		t.Errorf("writing a frame above the limit: %v", err)
	}
}

// zeros is an endless reader of zero bytes.
type zeros struct{}

func (zeros) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

// TestDecodeRejects: truncated fields, bytes after the last field, an
// unknown type, invalid limits and a non-positive timeout are errors.
func TestDecodeRejects(t *testing.T) {
	for _, m := range messages() {
		p := m[4:]
		for n := 1; n < len(p); n++ {
			if p[0] == msgAssign || p[0] == msgResult {
				if n >= len(p)-3 { // the last 3 bytes may be ABI bytes, which run to the end: cut there, it is a shorter valid message
					continue
				}
			}
			if _, err := decodeFrame(p[:n]); err == nil {
				t.Errorf("%q cut to %d of %d bytes decoded", p[0], n, len(p))
			}
		}
	}
	for _, p := range [][]byte{
		{'x'},
		append(bytes.Clone(messages()[1][4:]), 0),
		appendLimits(nil, limits{Deadline: -1})[4:],
		appendLimits(nil, limits{MaxOutputBytes: maxData + 1})[4:],
		appendAssign(nil, assign{ID: 1, Name: "x"})[4:],
		appendResult(nil, result{ID: 1, Compute: -1})[4:],
	} {
		if m, err := decodeFrame(p); err == nil {
			t.Errorf("%x decoded: %+v", p, m)
		}
	}
}

// FuzzFrame: any bytes read as a frame and decoded never panic, and a
// message that decodes encodes again to the same payload.
func FuzzFrame(f *testing.F) {
	for _, m := range messages() {
		f.Add(m)
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0, 0, 0, 1, 'c'})
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := readFrame(bytes.NewReader(b), 1<<16, nil)
		if err != nil {
			return
		}
		m, err := decodeFrame(p)
		if err != nil {
			return
		}
		if again := reencode(m); !bytes.Equal(again, p) {
			t.Fatalf("%x decoded to %+v, which encodes to %x", p, m, again)
		}
	})
}
