package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamLink is a frameLink that pipelines and streams requests in
// (RequestStreamer): it reads what SendStream is given, and records each
// frame it got whole or streamed, as the data plane would have read it.
type streamLink struct {
	*frameLink
	mu       sync.Mutex
	whole    [][]byte // frames sent by SendFrame
	streamed [][]byte // frames sent by SendStream: head and rest
	sources  []string // the type rest had
	restErr  error
}

func (l *streamLink) SendFrame(_ context.Context, req *Request, frame []byte, _ int) (func() ([]byte, func(), error), error) {
	l.mu.Lock()
	l.whole = append(l.whole, bytes.Clone(frame))
	l.mu.Unlock()
	return l.answer(req), nil
}

func (l *streamLink) SendStream(_ context.Context, req *Request, head []byte, _ int, rest io.Reader, restN int64, _ time.Time) (func() ([]byte, func(), error), error) {
	frame := bytes.Clone(head)
	binary.BigEndian.PutUint32(frame[4:], 0xC0DE) // the link's own correlation id, in place
	copy(head[4:8], frame[4:8])
	buf := make([]byte, restN)
	_, err := io.ReadFull(rest, buf)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sources = append(l.sources, fmt.Sprintf("%T", rest))
	if err != nil {
		l.restErr = err
		return nil, fmt.Errorf("streaming the rest: %w", err)
	}
	l.streamed = append(l.streamed, append(frame, buf...))
	return l.answer(req), nil
}

func (l *streamLink) answer(req *Request) func() ([]byte, func(), error) {
	return func() ([]byte, func(), error) {
		resp := kmsg.NewPtrProduceResponse()
		resp.SetVersion(req.Version)
		return AppendResponse(nil, -1, resp)[4:], func() {}, nil
	}
}

func (l *streamLink) Send(context.Context, *string, kmsg.Request) (func() (kmsg.Response, error), error) {
	return nil, ErrNotPassable
}

func (l *streamLink) got() (whole, streamed [][]byte, sources []string, restErr error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.whole, l.streamed, l.sources, l.restErr
}

// produceOf is a Produce of one partition whose records are size bytes.
func produceOf(size int) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = make([]byte, size)
	for i := range rp.Records {
		rp.Records[i] = byte(i * 7)
	}
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

// TestProduceStreamedIn: on a listener whose links forward frames, a
// Produce over 1 MiB goes to the link as it arrives: the link gets the
// frame's header and start, then the rest from the client's TCP socket
// itself (so a TCP link can splice it), all of the frame's bytes in
// order, and it is answered even though the request budget (2 MiB) is
// smaller than the frame (3 MiB), which the frame read whole would be
// refused for. A Produce under 1 MiB, the frames after the streamed one
// on the same connection, and a large Produce on a listener whose links
// decode are read whole as before. A client that stops in the middle of
// a streamed frame loses its connection, and the listener serves on.
func TestProduceStreamedIn(t *testing.T) {
	serve := func(forwards bool) (string, *streamLink) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		link := &streamLink{frameLink: &frameLink{saslLink: &saslLink{c: &saslCluster{}}}}
		s := NewServer(ln, Config{Table: NewTable(kafka44), MaxRequestBytes: 8 << 20, Limits: NewLimits(2<<20, 10, 10), ForwardsFrames: forwards,
			Dial: func(context.Context) (Upstream, error) { return link, nil }})
		t.Cleanup(func() { s.Shutdown(context.Background()) })
		return ln.Addr().String(), link
	}
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test"))
	frameFor := func(req kmsg.Request, corr int32) []byte {
		req.SetVersion(9)
		return formatter.AppendRequest(nil, req, corr)
	}
	big, small := produceOf(3<<20), produceOf(100<<10)
	addr, link := serve(true)
	c := dial(t, addr)
	bigFrame, smallFrame := frameFor(big, 1), frameFor(small, 2)
	// The big frame in pieces, the small one right behind it.
	for _, part := range [][]byte{bigFrame[:100], bigFrame[100 : 1<<20], bigFrame[1<<20:], smallFrame} {
		if _, err := c.c.Write(part); err != nil {
			t.Fatal(err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for want := int32(1); want <= 2; want++ {
		if corr, _ := c.recv(big); corr != want {
			t.Fatalf("answer with correlation id %d, want %d", corr, want)
		}
	}
	whole, streamed, sources, _ := link.got()
	if len(streamed) != 1 || len(whole) != 1 {
		t.Fatalf("%d frames streamed, %d sent whole; want the 3 MiB Produce streamed and the 100 KiB one whole", len(streamed), len(whole))
	}
	wantBig := bytes.Clone(bigFrame[4:])
	binary.BigEndian.PutUint32(wantBig[4:], 0xC0DE)
	if !bytes.Equal(streamed[0], wantBig) {
		t.Fatalf("the streamed frame differs from the one sent (%d bytes, want %d)", len(streamed[0]), len(wantBig))
	}
	if sources[0] != "*net.TCPConn" {
		t.Fatalf("the rest was read from a %s, not the client's TCP socket", sources[0])
	}
	if !bytes.Equal(whole[0][8:], smallFrame[12:]) { // past the correlation id the server rewrites
		t.Fatal("the frame after the streamed one differs from the one sent")
	}

	// A client that stops in the middle: its connection is closed, the
	// listener serves on.
	cut := dial(t, addr)
	if _, err := cut.c.Write(bigFrame[:2<<20]); err != nil {
		t.Fatal(err)
	}
	cut.c.(*net.TCPConn).CloseWrite()
	if _, err := cut.br.ReadByte(); err == nil {
		t.Fatal("a connection that stopped mid-frame was answered")
	}
	if _, _, _, err := link.got(); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("the link's read of the rest ended with %v, want an unexpected EOF", err)
	}
	again := dial(t, addr)
	again.send(small, 9, 3)
	if corr, _ := again.recv(small); corr != 3 {
		t.Fatalf("after a cut connection: correlation id %d", corr)
	}

	// Links that decode: the frame is read whole, and this one exceeds
	// the budget.
	addr, link = serve(false)
	d := dial(t, addr)
	d.c.Write(bigFrame) // it may be refused, and the connection reset, before it is all written
	if _, err := d.br.ReadByte(); err == nil {
		t.Fatal("a 3 MiB frame read whole was answered with a 2 MiB request budget")
	}
	if _, streamed, _, _ := link.got(); len(streamed) != 0 {
		t.Fatal("a Produce to links that decode was streamed")
	}
}
