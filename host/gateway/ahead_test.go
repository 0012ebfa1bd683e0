package gateway

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/wire"
)

// holdingBroker is a fake data-plane node that holds a Fetch's answer
// until the next request arrives on the same connection (as a Kafka
// broker's long poll ends when records come), or until hold passed. It
// answers every request in order and logs what it received and answered.
type holdingBroker struct {
	addr string
	hold time.Duration
	mu   sync.Mutex
	log  []string
}

func (b *holdingBroker) note(s string) {
	b.mu.Lock()
	b.log = append(b.log, s)
	b.mu.Unlock()
}

func (b *holdingBroker) events() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.log...)
}

func startHoldingBroker(t *testing.T, hold time.Duration) *holdingBroker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	b := &holdingBroker{addr: ln.Addr().String(), hold: hold}
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go b.serve(nc)
		}
	}()
	return b
}

func (b *holdingBroker) serve(nc net.Conn) {
	defer nc.Close()
	frames := make(chan []byte)
	go func() {
		defer close(frames)
		br := bufio.NewReader(nc)
		for {
			f, err := wire.ReadFrame(br, 1<<20)
			if err != nil {
				return
			}
			frames <- f
		}
	}()
	var held *wire.Request
	var timeout <-chan time.Time
	answer := func(h *wire.Request, why string) {
		resp := kmsg.ResponseForKey(h.Key)
		resp.SetVersion(h.Version)
		// Noted before it is written: a test that has read every answer
		// then finds every answer noted.
		b.note(fmt.Sprintf("answered %s%s", kmsg.NameForKey(h.Key), why))
		nc.Write(wire.AppendResponse(nil, h.CorrelationID, resp))
	}
	for {
		select {
		case f, ok := <-frames:
			if !ok {
				return
			}
			h, _, err := wire.ParseHeader(f)
			if err != nil {
				return
			}
			b.note("received " + kmsg.NameForKey(h.Key))
			if held != nil {
				answer(held, "")
				held, timeout = nil, nil
			}
			if h.Key == int16(kmsg.Fetch) {
				held, timeout = h, time.After(b.hold)
				continue
			}
			answer(h, "")
		case <-timeout:
			answer(held, " (hold passed)")
			held, timeout = nil, nil
		}
	}
}

// aheadServer serves a listener whose connections' links go to b.
func aheadServer(t *testing.T, b *holdingBroker) string {
	t.Helper()
	_, d := openExternal(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ranges := map[int16]wire.VersionRange{int16(kmsg.Fetch): {Min: 4, Max: 17}, int16(kmsg.OffsetForLeaderEpoch): {Min: 2, Max: 4}, int16(kmsg.ListOffsets): {Min: 1, Max: 10}}
	s := wire.NewServer(ln, wire.Config{Table: wire.NewTable(ranges),
		Dial: func(ctx context.Context) (wire.Upstream, error) {
			nc, err := net.Dial("tcp", b.addr)
			if err != nil {
				return nil, err
			}
			return newLink(d, 0, nc), nil
		},
		Group: func(context.Context, *wire.Request) (kmsg.Response, error) { panic("no group requests") }})
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return ln.Addr().String()
}

// TestForwardedFetchPipelinesNextRequests: while the data plane holds a
// Fetch forwarded as a frame, the requests the client sends next on the
// connection reach the data plane at once, and the answers come back in
// request order with the client's correlation ids. The OffsetForLeaderEpoch
// goes on a connection of its own and is answered while the Fetch is held;
// the ListOffsets goes over the Fetch's link, behind it (the holding broker
// answers the Fetch when it arrives).
func TestForwardedFetchPipelinesNextRequests(t *testing.T) {
	b := startHoldingBroker(t, 3*time.Second)
	nc, err := net.Dial("tcp", aheadServer(t, b))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	send := func(req kmsg.Request, version int16, corr int32) {
		req.SetVersion(version)
		if _, err := nc.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("c")).AppendRequest(nil, req, corr)); err != nil {
			t.Fatal(err)
		}
	}
	fetch := kmsg.NewPtrFetchRequest()
	fetch.MaxWaitMillis = 500
	send(fetch, 13, 100)
	time.Sleep(50 * time.Millisecond) // the Fetch is held upstream
	epochs := kmsg.NewPtrOffsetForLeaderEpochRequest()
	send(epochs, 4, 101)
	time.Sleep(50 * time.Millisecond) // answered on a connection of its own
	list := kmsg.NewPtrListOffsetsRequest()
	send(list, 7, 102)
	br := bufio.NewReader(nc)
	for i, want := range []struct {
		req  kmsg.Request
		corr int32
	}{{fetch, 100}, {epochs, 101}, {list, 102}} {
		f, err := wire.ReadFrame(br, 1<<20)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		corr, _, err := wire.ParseResponse(f, want.req)
		if err != nil || corr != want.corr {
			t.Fatalf("answer %d: correlation id %d (%v), want %d: the %s answer, in request order", i, corr, err, want.corr, kmsg.NameForKey(want.req.Key()))
		}
	}
	got := b.events()
	want := []string{"received Fetch", "received OffsetForLeaderEpoch", "answered OffsetForLeaderEpoch", "received ListOffsets", "answered Fetch", "answered ListOffsets"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("data plane saw %q, want %q: the next request sent while the Fetch was held", got, want)
	}
}
