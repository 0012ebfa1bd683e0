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

// streamLink is a frameLink that pipelines and takes a frame's body as a
// reader (RequestStreamer): it reads what its send is given, and
// records each frame it got whole or as a head and a reader, as the data
// plane would have read it, and how much of the request budget was in
// flight as it did.
type streamLink struct {
	*frameLink
	mu       sync.Mutex
	whole    [][]byte // frames sent by SendFrame
	streamed [][]byte // frames sent as a head and a reader of the rest
	sources  []string // the type rest had
	inFlight []int64  // the budget's bytes in flight during a send
	lim      *Limits
	refuse   bool // StreamRequest answers ErrNotPassable
}

func (l *streamLink) SendFrame(_ context.Context, req *Request, frame []byte, _ int) (func() ([]byte, func(), error), error) {
	l.mu.Lock()
	l.whole = append(l.whole, bytes.Clone(frame))
	l.mu.Unlock()
	return l.answer(req), nil
}

func (l *streamLink) StreamRequest(req *Request, head []byte, _ int) (func(context.Context, io.Reader, int64) (func() ([]byte, func(), error), error), error) {
	l.mu.Lock()
	refuse := l.refuse
	l.mu.Unlock()
	if refuse {
		return nil, ErrNotPassable
	}
	return func(_ context.Context, rest io.Reader, restN int64) (func() ([]byte, func(), error), error) {
		return l.send(req, head, rest, restN)
	}, nil
}

func (l *streamLink) send(req *Request, head []byte, rest io.Reader, restN int64) (func() ([]byte, func(), error), error) {
	frame := bytes.Clone(head)
	binary.BigEndian.PutUint32(frame[4:], 0xC0DE) // the link's own correlation id, in place
	copy(head[4:8], frame[4:8])
	buf := make([]byte, restN)
	_, err := io.ReadFull(rest, buf)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sources = append(l.sources, fmt.Sprintf("%T", rest))
	l.inFlight = append(l.inFlight, l.lim.inFlightBytes())
	if err != nil {
		return nil, fmt.Errorf("reading the rest: %w", err)
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

func (l *streamLink) got() (whole, streamed [][]byte, sources []string, inFlight []int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.whole, l.streamed, l.sources, l.inFlight
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

// TestProduceReadIntoPipes: on a listener whose links forward frames, a
// Produce over 1 MiB from a plain TCP client reaches the link as its head
// and a reader of the rest held in the kernel (KernelReader): all of the
// frame's bytes in order, the rest read only once the whole frame came,
// with the frame's size granted by the request budget while it is held
// and given back once answered. A Produce under 1 MiB, the frames after
// the large one on the same connection, and a large Produce on a listener
// whose links decode are read whole as before. A client that stops in
// the middle of a large frame loses its connection, its bytes go back to
// the budget, and the listener serves on.
func TestProduceReadIntoPipes(t *testing.T) {
	lim := NewLimits(16<<20, 10, 10)
	serve := func(forwards bool, pipes func(int64) (*pipeChain, error)) (string, *streamLink) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		link := &streamLink{frameLink: &frameLink{saslLink: &saslLink{c: &saslCluster{}}}, lim: lim}
		s := NewServer(ln, Config{Table: NewTable(kafka44), MaxRequestBytes: 8 << 20, Limits: lim, ForwardsFrames: forwards,
			Dial: func(context.Context) (Upstream, error) { return link, nil }, makePipes: pipes})
		t.Cleanup(func() { s.Shutdown(context.Background()) })
		return ln.Addr().String(), link
	}
	formatter := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test"))
	frameFor := func(req kmsg.Request, corr int32) []byte {
		req.SetVersion(9)
		return formatter.AppendRequest(nil, req, corr)
	}
	big, small := produceOf(3<<20), produceOf(100<<10)
	addr, link := serve(true, nil)
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
	whole, streamed, sources, inFlight := link.got()
	if len(streamed) != 1 || len(whole) != 1 {
		t.Fatalf("%d frames given as a reader, %d sent whole; want the 3 MiB Produce as a reader and the 100 KiB one whole", len(streamed), len(whole))
	}
	wantBig := bytes.Clone(bigFrame[4:])
	binary.BigEndian.PutUint32(wantBig[4:], 0xC0DE)
	if !bytes.Equal(streamed[0], wantBig) {
		t.Fatalf("the frame differs from the one sent (%d bytes, want %d)", len(streamed[0]), len(wantBig))
	}
	if sources[0] != "*wire.pipeChain" {
		t.Fatalf("the rest was read from a %s, not pipes", sources[0])
	}
	if inFlight[0] < int64(len(bigFrame)-4) {
		t.Fatalf("%d bytes of the budget in flight while the 3 MiB frame was held", inFlight[0])
	}
	if !bytes.Equal(whole[0][8:], smallFrame[12:]) { // past the correlation id the server rewrites
		t.Fatal("the frame after the large one differs from the one sent")
	}
	if n := settledBytes(lim); n != 0 {
		t.Fatalf("%d bytes of the budget still in flight once both were answered", n)
	}

	// A client that stops in the middle: its connection is closed, its
	// grant given back, the listener serves on.
	cut := dial(t, addr)
	if _, err := cut.c.Write(bigFrame[:2<<20]); err != nil {
		t.Fatal(err)
	}
	cut.c.(*net.TCPConn).CloseWrite()
	if _, err := cut.br.ReadByte(); err == nil {
		t.Fatal("a connection that stopped mid-frame was answered")
	}
	if n := settledBytes(lim); n != 0 {
		t.Fatalf("%d bytes of the budget still in flight after a cut frame", n)
	}
	if _, streamed, _, _ := link.got(); len(streamed) != 1 {
		t.Fatal("a cut frame reached the link")
	}
	again := dial(t, addr)
	again.send(small, 9, 3)
	if corr, _ := again.recv(small); corr != 3 {
		t.Fatalf("after a cut connection: correlation id %d", corr)
	}

	// No pipes to be had: the frame is read whole.
	addr, link = serve(true, func(int64) (*pipeChain, error) { return nil, errors.New("no pipes") })
	np := dial(t, addr)
	np.send(big, 9, 5)
	if corr, _ := np.recv(big); corr != 5 {
		t.Fatalf("a large Produce without pipes: correlation id %d", corr)
	}
	if whole, streamed, _, _ := link.got(); len(streamed) != 0 || len(whole) != 1 || !bytes.Equal(whole[0][8:], bigFrame[12:]) {
		t.Fatalf("a large Produce without pipes: %d given as a reader, %d whole", len(streamed), len(whole))
	}

	// A link that refuses the frame from its head: read whole, nothing of
	// it taken from the connection before.
	addr, link = serve(true, nil)
	link.mu.Lock()
	link.refuse = true
	link.mu.Unlock()
	rf := dial(t, addr)
	rf.send(big, 9, 6)
	if corr, _ := rf.recv(big); corr != 6 {
		t.Fatalf("a large Produce the link refuses to stream: correlation id %d", corr)
	}
	if whole, streamed, _, _ := link.got(); len(streamed) != 0 || len(whole) != 1 || !bytes.Equal(whole[0][8:], bigFrame[12:]) {
		t.Fatalf("a large Produce the link refuses to stream: %d given as a reader, %d whole", len(streamed), len(whole))
	}

	// Links that decode: the frame is read whole.
	addr, link = serve(false, nil)
	d := dial(t, addr)
	d.send(big, 9, 4)
	if corr, _ := d.recv(big); corr != 4 {
		t.Fatalf("a large Produce to links that decode: correlation id %d", corr)
	}
	if whole, streamed, _, _ := link.got(); len(streamed) != 0 || len(whole) != 1 {
		t.Fatalf("a Produce to links that decode: %d given as a reader, %d whole", len(streamed), len(whole))
	}
}

// settledBytes waits up to 5 s for lim's bytes in flight to reach 0 and
// returns them.
func settledBytes(lim *Limits) int64 {
	for deadline := time.Now().Add(5 * time.Second); lim.inFlightBytes() != 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	return lim.inFlightBytes()
}
