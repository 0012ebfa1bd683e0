package wire

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPaceReservesInTurn: chunks are booked one after another at the
// rate, whoever books them, so connections reading at once share it.
func TestPaceReservesInTurn(t *testing.T) {
	p := pace{rate: 1 << 20}
	a := p.reserve(1 << 20)
	b := p.reserve(1 << 20)
	c := p.reserve(1 << 19)
	d := p.reserve(1)
	if b.Sub(a) != time.Second || c.Sub(b) != time.Second || d.Sub(c) != time.Second/2 {
		t.Fatalf("reservations at %v, %v, %v after the first", b.Sub(a), c.Sub(a), d.Sub(a))
	}
}

// TestLargeFramesPaced: at a rate of one byte a second, a request of
// 512 KiB is answered (frames of up to 1 MiB are never paced) while one
// of 2 MiB is not read; Shutdown ends its wait and the budget it held is
// given back.
func TestLargeFramesPaced(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := NewLimits(4<<20, 10, 10).WithLargeFrameRate(1)
	s := NewServer(ln, Config{Table: NewTable(kafka44), MaxRequestBytes: 4 << 20, Limits: lim,
		Dial: func(context.Context) (Upstream, error) { return &recorder{}, nil }})
	meta := func(n int) *kmsg.MetadataRequest {
		req := kmsg.NewPtrMetadataRequest()
		for range n / 1000 {
			req.Topics = append(req.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(strings.Repeat("t", 990))})
		}
		return req
	}
	small := meta(512 << 10)
	c := dial(t, ln.Addr().String())
	c.send(small, 12, 1)
	if corr, _ := c.recv(small); corr != 1 {
		t.Fatalf("correlation id %d", corr)
	}
	big := dial(t, ln.Addr().String())
	big.send(meta(2<<20), 12, 2)
	waitUntil(t, func() bool { return lim.inFlightBytes() > 2<<20 })
	big.c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := big.br.ReadByte(); err == nil {
		t.Fatal("a frame over 1 MiB was answered at a rate of one byte a second")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if n := lim.inFlightBytes(); n != 0 {
		t.Fatalf("%d bytes of budget held after Shutdown", n)
	}
}

// TestLargeFrameOfGonePeerAllocatesNothing: a frame over 1 MiB whose
// peer sent nothing after its size (a connection closed while it waited
// for the budget) fails without allocating its declared size, paced or
// not; one whose bytes arrive is read whole.
func TestLargeFrameOfGonePeerAllocatesNothing(t *testing.T) {
	const n = 64 << 20
	for _, lim := range []*Limits{nil, NewLimits(n, 10, 10).WithLargeFrameRate(1 << 40)} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := lim.readBody(context.Background(), bytes.NewReader(nil), n, true)
		runtime.ReadMemStats(&after)
		if !errors.Is(err, io.ErrUnexpectedEOF) || !errors.Is(err, errFrameNotStarted) {
			t.Fatalf("paced=%v: error %v, want an unexpected EOF", lim != nil, err)
		}
		if d := after.TotalAlloc - before.TotalAlloc; d > 1<<20 {
			t.Fatalf("paced=%v: %d bytes allocated for a frame whose peer sent nothing", lim != nil, d)
		}
		body := bytes.Repeat([]byte{7}, 3<<20+5)
		body[0], body[len(body)-1] = 1, 9
		got, err := lim.readBody(context.Background(), bytes.NewReader(body), int32(len(body)), true)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("paced=%v: read %d bytes (equal %v), error %v", lim != nil, len(got), bytes.Equal(got, body), err)
		}
	}
}

// TestForwardedProduceNotPaced: at a large-frame rate of one byte a
// second, a 2 MiB Produce is answered at once on a listener whose links
// forward frames (an external cluster), while on the same listener a
// 2 MiB Metadata, and on one whose links decode (the embedded cluster)
// the same Produce, are not read.
func TestForwardedProduceNotPaced(t *testing.T) {
	produce := kmsg.NewPtrProduceRequest()
	produce.Acks, produce.TimeoutMillis = -1, 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = "t"
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Records = make([]byte, 2<<20)
	rt.Partitions = append(rt.Partitions, rp)
	produce.Topics = append(produce.Topics, rt)
	meta := kmsg.NewPtrMetadataRequest()
	for range 2200 {
		meta.Topics = append(meta.Topics, kmsg.MetadataRequestTopic{Topic: kmsg.StringPtr(strings.Repeat("t", 990))})
	}
	serve := func(forwards bool) string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lim := NewLimits(16<<20, 10, 10).WithLargeFrameRate(1)
		s := NewServer(ln, Config{Table: NewTable(kafka44), MaxRequestBytes: 8 << 20, Limits: lim, ForwardsFrames: forwards,
			Dial: func(context.Context) (Upstream, error) {
				return &frameLink{saslLink: &saslLink{c: &saslCluster{}}}, nil
			}})
		t.Cleanup(func() { s.Shutdown(context.Background()) })
		return ln.Addr().String()
	}
	unanswered := func(c *client, what string) {
		t.Helper()
		c.c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		if _, err := c.br.ReadByte(); err == nil {
			t.Fatalf("%s over 1 MiB was answered at a rate of one byte a second", what)
		}
	}
	forwarding := serve(true)
	c := dial(t, forwarding)
	c.send(produce, 9, 1)
	c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if corr, _ := c.recv(produce); corr != 1 {
		t.Fatalf("correlation id %d", corr)
	}
	m := dial(t, forwarding)
	m.send(meta, 12, 2)
	unanswered(m, "a Metadata")
	d := dial(t, serve(false))
	d.send(produce, 9, 3)
	unanswered(d, "a Produce to links that decode it")
}
