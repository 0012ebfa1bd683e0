package wire

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// frameLink is a saslLink that also forwards frames, recording them.
type frameLink struct {
	*saslLink
	mu     sync.Mutex
	frames []*Request
}

func (l *frameLink) ForwardFrame(_ context.Context, req *Request, _ []byte, _ int) ([]byte, func(), error) {
	l.mu.Lock()
	l.frames = append(l.frames, req)
	l.mu.Unlock()
	resp := kmsg.NewPtrProduceResponse()
	resp.SetVersion(req.Version)
	resp.ThrottleMillis = 7
	return AppendResponse(nil, -1, resp)[4:], func() {}, nil
}

func (l *frameLink) forwarded() []*Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*Request(nil), l.frames...)
}

// frameServer serves Produce (forwarded) on a listener requiring SASL
// authentication, over links that forward frames.
func frameServer(t *testing.T) (string, func() []*frameLink) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &saslCluster{}
	var mu sync.Mutex
	var links []*frameLink
	dial := func(ctx context.Context) (Upstream, error) {
		up, _ := cl.dial(ctx)
		l := &frameLink{saslLink: up.(*saslLink)}
		mu.Lock()
		links = append(links, l)
		mu.Unlock()
		return l, nil
	}
	ranges := map[int16]VersionRange{int16(kmsg.SASLHandshake): {0, 1}, int16(kmsg.SASLAuthenticate): {0, 2}, int16(kmsg.Produce): {3, 12}}
	s := NewServer(ln, Config{Table: NewTable(ranges), SASLRequired: true, Dial: dial,
		Group: func(context.Context, *Request) (kmsg.Response, error) { panic("no group requests") }})
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return ln.Addr().String(), func() []*frameLink { mu.Lock(); defer mu.Unlock(); return append([]*frameLink(nil), links...) }
}

// TestPassThroughKeepsTheGates: a Produce forwarded as a frame passes the
// same gates as a decoded one — before authentication it closes the
// connection and reaches no link; after, it is forwarded once, with the
// client's id, and its answer carries the client's correlation id.
func TestPassThroughKeepsTheGates(t *testing.T) {
	addr, links := frameServer(t)
	c := dial(t, addr)
	c.send(kmsg.NewPtrProduceRequest(), 9, 1)
	c.expectClosed()
	for _, l := range links() {
		if f := l.forwarded(); len(f) != 0 {
			t.Fatalf("a Produce before authentication was forwarded: %+v", f)
		}
	}
	c = dial(t, addr)
	if _, a := c.login("PLAIN", "alice", "alice-pw"); a == nil || a.ErrorCode != 0 {
		t.Fatalf("login: %+v", a)
	}
	p := kmsg.NewPtrProduceRequest()
	p.Acks = -1
	c.send(p, 9, 42)
	c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	corr, resp := c.recv(p)
	if corr != 42 || resp.(*kmsg.ProduceResponse).ThrottleMillis != 7 {
		t.Fatalf("answer corr %d %+v, want the link's answer with corr 42", corr, resp)
	}
	ls := links()
	f := ls[len(ls)-1].forwarded()
	if len(f) != 1 || f[0].Key != int16(kmsg.Produce) || f[0].Version != 9 || f[0].ClientIDString() != "test" || !f[0].Authenticated {
		t.Fatalf("forwarded frames %+v", f)
	}
}
