package wire

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// pipeLink is a saslLink that pipelines: a Fetch's answer is held until
// release is closed (then it fails if fail is set); every other request is
// answered as saslLink answers it. sent lists what was sent upstream
// through the pipelining halves, in order.
type pipeLink struct {
	*saslLink
	release chan struct{}
	once    sync.Once
	fail    bool
	mu      sync.Mutex
	sent    []string
}

// open answers the held Fetch (once).
func (l *pipeLink) open() { l.once.Do(func() { close(l.release) }) }

func (l *pipeLink) record(key int16) {
	l.mu.Lock()
	l.sent = append(l.sent, kmsg.NameForKey(key))
	l.mu.Unlock()
}

func (l *pipeLink) sentKeys() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.sent, " ")
}

// waitSent waits until what was sent upstream is want, then a moment
// more for anything beyond it to show.
func (l *pipeLink) waitSent(t *testing.T, want string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); l.sentKeys() != want && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(settleDelay)
	if got := l.sentKeys(); got != want {
		t.Fatalf("sent upstream while the Fetch is held: %q, want %q", got, want)
	}
}

func (l *pipeLink) ForwardFrame(ctx context.Context, req *Request, frame []byte, bodyAt int) ([]byte, func(), error) {
	recv, err := l.SendFrame(ctx, req, frame, bodyAt)
	if err != nil {
		return nil, nil, err
	}
	return recv()
}

func (l *pipeLink) SendFrame(ctx context.Context, req *Request, _ []byte, _ int) (func() ([]byte, func(), error), error) {
	l.record(req.Key)
	return func() ([]byte, func(), error) {
		if req.Key == int16(kmsg.Fetch) {
			select {
			case <-l.release:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			if l.fail {
				return nil, nil, errors.New("link broken")
			}
		}
		resp := kmsg.ResponseForKey(req.Key)
		resp.SetVersion(req.Version)
		return AppendResponse(nil, -1, resp)[4:], func() {}, nil
	}, nil
}

func (l *pipeLink) Send(ctx context.Context, clientID *string, req kmsg.Request) (func() (kmsg.Response, error), error) {
	l.record(req.Key())
	return func() (kmsg.Response, error) { return l.saslLink.Forward(ctx, clientID, req) }, nil
}

// aheadServer serves Fetch (forwarded as frames), Metadata (forwarded
// decoded) and Heartbeat (group) on a listener requiring SASL, over one
// pipeLink; group requests are counted.
func aheadServer(t *testing.T, link *pipeLink, cfg Config) (addr string, groups *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &saslCluster{}
	groups = new(atomic.Int32)
	ranges := map[int16]VersionRange{int16(kmsg.SASLHandshake): {0, 1}, int16(kmsg.SASLAuthenticate): {0, 2},
		int16(kmsg.Fetch): {4, 17}, int16(kmsg.Metadata): {0, 13}}
	cfg.Table, cfg.SASLRequired = NewTable(ranges), true
	link.saslLink = &saslLink{c: cl}
	cfg.Dial = func(context.Context) (Upstream, error) { return link, nil }
	cfg.Group = func(_ context.Context, req *Request) (kmsg.Response, error) {
		groups.Add(1)
		return ErrorResponse(req.Body, 0), nil
	}
	s := NewServer(ln, cfg)
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	t.Cleanup(link.open) // before Shutdown, which waits for the held Fetch
	return ln.Addr().String(), groups
}

func newPipeLink() *pipeLink { return &pipeLink{release: make(chan struct{})} }

// settleDelay lets the server read, and (if it would) forward, what was
// sent before an assertion that it did not.
const settleDelay = 100 * time.Millisecond

// expectAnswers reads answers to reqs in order with correlation ids
// first, first+1, ...
func (c *client) expectAnswers(first int32, reqs ...kmsg.Request) {
	c.t.Helper()
	for i, req := range reqs {
		if corr, _ := c.recv(req); corr != first+int32(i) {
			c.t.Fatalf("answer %d: correlation id %d, want %d (answers in request order)", i, corr, first+int32(i))
		}
	}
}

// TestReadAheadBounded: behind a held Fetch, up to three forwarded
// requests are sent upstream at once; the next waits for room; every
// answer comes in request order.
func TestReadAheadBounded(t *testing.T) {
	link := newPipeLink()
	addr, _ := aheadServer(t, link, Config{})
	c := dial(t, addr)
	c.login("PLAIN", "alice", "alice-pw")
	fetch := kmsg.NewPtrFetchRequest()
	c.send(fetch, 12, 10)
	reqs := []kmsg.Request{fetch}
	for i := range 4 {
		m := kmsg.NewPtrMetadataRequest()
		c.send(m, 12, int16(11+i))
		reqs = append(reqs, m)
	}
	link.waitSent(t, "Fetch Metadata Metadata Metadata")
	link.open()
	c.expectAnswers(10, reqs...)
	_, _, keys := link.state() // what the link answered, ahead or not
	n := 0
	for _, k := range keys {
		if k == int16(kmsg.Metadata) {
			n++
		}
	}
	if n != 4 {
		t.Fatalf("Metadata answered upstream %d times, want 4 (keys %v)", n, keys)
	}
}

// TestReadAheadGroupRequestWaits: a group request behind a held Fetch is
// served only once the Fetch is answered.
func TestReadAheadGroupRequestWaits(t *testing.T) {
	link := newPipeLink()
	addr, groups := aheadServer(t, link, Config{})
	c := dial(t, addr)
	c.login("PLAIN", "alice", "alice-pw")
	fetch, hb := kmsg.NewPtrFetchRequest(), kmsg.NewPtrHeartbeatRequest()
	c.send(fetch, 12, 10)
	c.send(hb, 4, 11)
	time.Sleep(settleDelay)
	if n := groups.Load(); n != 0 {
		t.Fatalf("a group request behind a held Fetch was served (%d)", n)
	}
	link.open()
	c.expectAnswers(10, fetch, hb)
	if n := groups.Load(); n != 1 {
		t.Fatalf("group requests served: %d, want 1", n)
	}
}

// TestReadAheadKeepsTheGates: a request read ahead passes the same gates:
// one past the SASL session's end closes the connection (after the Fetch's
// answer) without reaching the link, as it does when read after it; one
// that does not fit the request budget beside the held Fetch is read only
// once the Fetch's answer came.
func TestReadAheadKeepsTheGates(t *testing.T) {
	t.Run("expired session", func(t *testing.T) {
		closedBehindFetch(t, Config{MaxReauth: 300 * time.Millisecond}, func(c *client) {
			time.Sleep(400 * time.Millisecond) // the session ends while the Fetch is held
			c.send(kmsg.NewPtrMetadataRequest(), 12, 11)
		})
	})
	t.Run("request budget", func(t *testing.T) {
		link := newPipeLink()
		const budget = 1024
		addr, _ := aheadServer(t, link, Config{Limits: NewLimits(budget, 10, 10), MaxRequestBytes: budget})
		c := dial(t, addr)
		c.login("PLAIN", "alice", "alice-pw")
		fetch := kmsg.NewPtrFetchRequest()
		c.send(fetch, 12, 10)
		m := metadataOf(budget - 60) // fits the budget, not beside the Fetch
		c.send(m, 12, 11)
		time.Sleep(settleDelay)
		if got := link.sentKeys(); got != "Fetch" {
			t.Fatalf("sent upstream while the Fetch holds part of the budget: %q, want the Fetch alone", got)
		}
		link.open()
		c.expectAnswers(10, fetch, m)
	})
	t.Run("frame over the limit", func(t *testing.T) {
		closedBehindFetch(t, Config{MaxRequestBytes: 512}, func(c *client) {
			c.send(metadataOf(600), 12, 11)
		})
	})
}

// metadataOf is a Metadata request naming one topic of n characters.
func metadataOf(n int) *kmsg.MetadataRequest {
	m := kmsg.NewPtrMetadataRequest()
	topic := kmsg.NewMetadataRequestTopic()
	topic.Topic = kmsg.StringPtr(strings.Repeat("t", n))
	m.Topics = append(m.Topics, topic)
	return m
}

// closedBehindFetch: what behind sends while a Fetch is held closes the
// connection once the Fetch is answered, and never reaches the link.
func closedBehindFetch(t *testing.T, cfg Config, behind func(c *client)) {
	t.Helper()
	link := newPipeLink()
	addr, _ := aheadServer(t, link, cfg)
	c := dial(t, addr)
	c.login("PLAIN", "alice", "alice-pw")
	fetch := kmsg.NewPtrFetchRequest()
	c.send(fetch, 12, 10)
	behind(c)
	time.Sleep(settleDelay)
	link.open()
	c.expectAnswers(10, fetch)
	c.expectClosed()
	if got := link.sentKeys(); got != "Fetch" {
		t.Fatalf("sent upstream: %q, want the Fetch alone", got)
	}
}

// TestReadAheadFailureCloses: when the held Fetch fails, the connection
// and its link close and no answer of a request read behind it is
// written.
func TestReadAheadFailureCloses(t *testing.T) {
	link := newPipeLink()
	link.fail = true
	addr, _ := aheadServer(t, link, Config{})
	c := dial(t, addr)
	c.login("PLAIN", "alice", "alice-pw")
	c.send(kmsg.NewPtrFetchRequest(), 12, 10)
	c.send(kmsg.NewPtrMetadataRequest(), 12, 11)
	link.waitSent(t, "Fetch Metadata")
	link.open()
	c.expectClosed()
	if _, closed, _ := link.state(); !closed {
		t.Fatal("the link is still open")
	}
}
