package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DefaultLargeFrameBytesPerSecond is the default rate at which the
// listeners of a process read the bytes of frames over largeFrame
// (kafka.large.frame.bytes.per.second).
const DefaultLargeFrameBytesPerSecond = 64 << 20

// pace spreads the reading of large frames over time: every frame over
// largeFrame is read in chunks of largeFrame, each reserved in turn from
// one rate shared by all the listeners of the process, so connections
// reading large frames at once take turns chunk by chunk and together
// never read faster than the rate. Frames of up to largeFrame (a
// producer's default max.request.size) never wait.
type pace struct {
	mu   sync.Mutex
	rate float64   // bytes a second; 0: no pacing
	next time.Time // when the next reserved chunk may be read
}

// reserve books n bytes and returns when they may be read.
func (p *pace) reserve(n int) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if p.next.Before(now) {
		p.next = now
	}
	at := p.next
	p.next = p.next.Add(time.Duration(float64(n) / p.rate * float64(time.Second)))
	return at
}

// forwardedAsCame reports whether the frame whose start br holds is a
// Produce that goes to the data plane as it came (passThrough): on a
// listener whose links forward frames, a Produce of a version the table
// forwards. Such a frame is not paced: a producer whose batches make
// requests over 1 MiB (franz-go's default sends up to a batch of 1 MB per
// partition in one request) would otherwise be held to the large-frame
// rate, shared by the whole process.
func (c *conn) forwardedAsCame(br *bufio.Reader) bool {
	if !c.s.cfg.ForwardsFrames {
		return false
	}
	b, _ := br.Peek(4)
	if len(b) < 4 || int16(binary.BigEndian.Uint16(b)) != int16(kmsg.Produce) {
		return false
	}
	return c.s.cfg.Table.Routes(int16(kmsg.Produce), int16(binary.BigEndian.Uint16(b[2:])), RouteForward)
}

// WithLargeFrameRate sets the rate, in bytes a second, at which the bytes
// of frames over 1 MiB are read, over all listeners sharing l (0: as fast
// as they arrive), and returns l. It is set once, before l is used.
func (l *Limits) WithLargeFrameRate(bytesPerSecond int64) *Limits {
	if l != nil {
		l.pace.rate = float64(max(bytesPerSecond, 0))
	}
	return l
}

// readBody reads the n bytes of a frame whose size was read and whose
// bytes the budget granted: at l's large-frame rate when paced and n is
// over largeFrame, until ctx ends.
func (l *Limits) readBody(ctx context.Context, r io.Reader, n int32, paced bool) ([]byte, error) {
	if l == nil || !paced || l.pace.rate <= 0 || n <= largeFrame {
		return readFrameBody(r, n, l)
	}
	buf, err := l.allocOnArrival(r, n)
	if err != nil {
		return nil, err
	}
	for off := 0; off < len(buf); off += largeFrame {
		chunk := buf[off:min(off+largeFrame, len(buf))]
		if off == 0 {
			chunk = chunk[1:] // its first byte came with the buffer
		}
		if wait := time.Until(l.pace.reserve(len(chunk))); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			}
		}
		if err := readPart(r, chunk, n); err != nil {
			return nil, err
		}
	}
	return buf, nil
}
