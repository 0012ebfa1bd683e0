package wire

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// pipeLink is a saslLink that pipelines: a Fetch's answer (and, with
// holdProduce, a Produce's) is held until release is closed (then it
// fails if fail is set); every other request is answered as saslLink
// answers it. sent lists what was sent upstream through the pipelining
// halves, in order.
type pipeLink struct {
	*saslLink
	release     chan struct{}
	once        sync.Once
	fail        bool
	holdProduce bool
	// midStream, when set, makes the link stream a Fetch's answer
	// (Streamer): it writes the answer's first half, then waits for
	// midStream to close before it writes the rest (or fails, with fail).
	midStream chan struct{}
	mu        sync.Mutex
	sent      []string
	dials     atomic.Int32
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

// settled polls get until it returns want (5 s at most), waits a moment
// more for anything beyond it to show, and returns what get returns then.
func settled(get func() string, want string) string {
	for deadline := time.Now().Add(5 * time.Second); get() != want && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(settleDelay)
	return get()
}

// waitSent waits until what was sent upstream is want, then a moment
// more for anything beyond it to show.
func (l *pipeLink) waitSent(t *testing.T, want string) {
	t.Helper()
	if got := settled(l.sentKeys, want); got != want {
		t.Fatalf("sent upstream while the Fetch is held: %q, want %q", got, want)
	}
}

func (l *pipeLink) ForwardFrame(ctx context.Context, req *Request, frame []byte, bodyAt int) ([]byte, func(), error) {
	return forwardFrameBy(ctx, l, req, frame, bodyAt)
}

// forwardFrameBy is ForwardFrame over p's two halves.
func forwardFrameBy(ctx context.Context, p Pipeliner, req *Request, frame []byte, bodyAt int) ([]byte, func(), error) {
	recv, err := p.SendFrame(ctx, req, frame, bodyAt)
	if err != nil {
		return nil, nil, err
	}
	return recv()
}

func (l *pipeLink) SendFrame(ctx context.Context, req *Request, _ []byte, _ int) (func() ([]byte, func(), error), error) {
	l.record(req.Key)
	return func() ([]byte, func(), error) {
		if req.Key == int16(kmsg.Fetch) || req.Key == int16(kmsg.Produce) && l.holdProduce {
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

func (l *pipeLink) StreamFrame(ctx context.Context, req *Request, _ []byte, _ int) (func(int32, func() io.Writer) error, error) {
	if l.midStream == nil || req.Key != int16(kmsg.Fetch) {
		return nil, ErrNotPassable
	}
	l.record(req.Key)
	return func(corr int32, begin func() io.Writer) error {
		select {
		case <-l.release:
		case <-ctx.Done():
			return ctx.Err()
		}
		resp := kmsg.ResponseForKey(req.Key)
		resp.SetVersion(req.Version)
		frame := AppendResponse(nil, corr, resp)
		w := begin()
		if _, err := w.Write(frame[:len(frame)/2]); err != nil {
			return err
		}
		<-l.midStream
		if l.fail {
			return errors.New("link broken mid-answer")
		}
		_, err := w.Write(frame[len(frame)/2:])
		return err
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
		int16(kmsg.Fetch): {4, 17}, int16(kmsg.Produce): {3, 12}, int16(kmsg.Metadata): {0, 13}, int16(kmsg.OffsetForLeaderEpoch): {0, 4}}
	cfg.Table, cfg.SASLRequired = NewTable(ranges), true
	link.saslLink = &saslLink{c: cl}
	cfg.Dial = func(context.Context) (Upstream, error) { link.dials.Add(1); return link, nil }
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

// TestProducePipelined: Produce requests forwarded as frames go to the
// link one after another without waiting for the answers before them, as
// a producer with several requests in flight sends them to a broker; a
// group request behind them waits for their answers, and every answer
// comes in request order.
func TestProducePipelined(t *testing.T) {
	link := newPipeLink()
	link.holdProduce = true
	c, groups := loggedIn(t, link)
	var reqs []kmsg.Request
	for i := range 3 {
		p := kmsg.NewPtrProduceRequest()
		p.Acks, p.TimeoutMillis = -1, 1000
		c.send(p, 9, int16(20+i))
		reqs = append(reqs, p)
	}
	hb := kmsg.NewPtrHeartbeatRequest()
	c.send(hb, 4, 23)
	link.waitSent(t, "Produce Produce Produce")
	if n := groups.Load(); n != 0 {
		t.Fatalf("a group request behind unanswered Produce requests was served (%d)", n)
	}
	link.open()
	c.expectAnswers(20, append(reqs, hb)...)
	if n := groups.Load(); n != 1 {
		t.Fatalf("group requests served: %d, want 1", n)
	}
}

// TestFetchAnswerStreamed: a link that streams a Fetch's answer
// (Streamer) writes it to the client as it comes, with the client's
// correlation id, before the answer is whole, and the answers read ahead
// behind it follow in order; an answer broken midway closes the
// connection.
func TestFetchAnswerStreamed(t *testing.T) {
	for _, broken := range []bool{false, true} {
		t.Run(fmt.Sprintf("broken=%v", broken), func(t *testing.T) {
			link := newPipeLink()
			link.midStream, link.fail = make(chan struct{}), broken
			c, fetch, _ := heldFetch(t, link)
			md := kmsg.NewPtrMetadataRequest()
			c.send(md, 12, 11)
			link.waitSent(t, "Fetch Metadata")
			link.open()
			resp := kmsg.ResponseForKey(fetch.Key())
			resp.SetVersion(fetch.GetVersion())
			whole := AppendResponse(nil, 10, resp)
			first := make([]byte, len(whole)/2)
			c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.ReadFull(c.br, first); err != nil {
				t.Fatalf("reading the first half of the Fetch answer while the link holds the rest: %v", err)
			}
			if string(first) != string(whole[:len(first)]) {
				t.Fatalf("first half %x, want %x (size, the client's correlation id, body)", first, whole[:len(first)])
			}
			c.c.SetReadDeadline(time.Now().Add(settleDelay))
			if n, err := c.br.Peek(1); len(n) > 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("more of the answer than the link wrote: %d bytes, %v", len(n), err)
			}
			c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
			close(link.midStream)
			if broken {
				rest := make([]byte, len(whole)-len(first))
				if n, err := io.ReadFull(c.br, rest); err == nil {
					t.Fatalf("the rest of a broken answer arrived (%d bytes)", n)
				}
				return
			}
			rest := make([]byte, len(whole)-len(first))
			if _, err := io.ReadFull(c.br, rest); err != nil || string(rest) != string(whole[len(first):]) {
				t.Fatalf("rest of the Fetch answer: %x, %v; want %x", rest, err, whole[len(first):])
			}
			c.expectAnswers(11, md)
		})
	}
}

// loggedIn serves link (aheadServer) and logs a client in.
func loggedIn(t *testing.T, link *pipeLink) (*client, *atomic.Int32) {
	t.Helper()
	addr, groups := aheadServer(t, link, Config{})
	c := dial(t, addr)
	c.login("PLAIN", "alice", "alice-pw")
	return c, groups
}

// heldFetch serves link (aheadServer), logs a client in and sends a
// Fetch (correlation id 10) that the link holds.
func heldFetch(t *testing.T, link *pipeLink) (c *client, fetch *kmsg.FetchRequest, groups *atomic.Int32) {
	t.Helper()
	c, groups = loggedIn(t, link)
	fetch = kmsg.NewPtrFetchRequest()
	c.send(fetch, 12, 10)
	return c, fetch, groups
}

// TestReadAheadGroupRequestWaits: a group request behind a held Fetch is
// served only once the Fetch is answered.
func TestReadAheadGroupRequestWaits(t *testing.T) {
	link := newPipeLink()
	c, fetch, groups := heldFetch(t, link)
	hb := kmsg.NewPtrHeartbeatRequest()
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
	c, _ := loggedIn(t, link)
	c.send(kmsg.NewPtrFetchRequest(), 12, 10)
	c.send(kmsg.NewPtrMetadataRequest(), 12, 11)
	link.waitSent(t, "Fetch Metadata")
	link.open()
	c.expectClosed()
	if _, closed, _ := link.state(); !closed {
		t.Fatal("the link is still open")
	}
}

// orderedPlane is a fake data plane whose links answer their requests in
// the order they came, as a Kafka broker answers a connection's: a Fetch
// is held until release is closed, and nothing behind it on its link is
// answered before it. answered lists what the data plane answered, in
// order, as "link:API".
type orderedPlane struct {
	release  chan struct{}
	failDial func(n int32) bool // the nth dial (from 1) fails
	dials    atomic.Int32
	closed   atomic.Int32
	mu       sync.Mutex
	answered []string
}

func (d *orderedPlane) dial(context.Context) (Upstream, error) {
	n := d.dials.Add(1)
	if d.failDial != nil && d.failDial(n) {
		return nil, errors.New("data plane unreachable")
	}
	done := make(chan struct{})
	close(done)
	return &orderedLink{d: d, id: n, last: done}, nil
}

func (d *orderedPlane) answeredList() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return strings.Join(d.answered, " ")
}

type orderedLink struct {
	d    *orderedPlane
	id   int32
	mu   sync.Mutex
	last chan struct{} // closed once the last request sent is answered
}

// submit has the data plane answer key after everything sent on the link
// before it; the returned channel is closed once it did.
func (l *orderedLink) submit(key int16) chan struct{} {
	l.mu.Lock()
	prev, done := l.last, make(chan struct{})
	l.last = done
	l.mu.Unlock()
	go func() {
		<-prev
		if key == int16(kmsg.Fetch) {
			<-l.d.release
		}
		l.d.mu.Lock()
		l.d.answered = append(l.d.answered, fmt.Sprintf("%d:%s", l.id, kmsg.NameForKey(key)))
		l.d.mu.Unlock()
		close(done)
	}()
	return done
}

func (l *orderedLink) Forward(ctx context.Context, clientID *string, req kmsg.Request) (kmsg.Response, error) {
	recv, err := l.Send(ctx, clientID, req)
	if err != nil {
		return nil, err
	}
	return recv()
}

func (l *orderedLink) Send(_ context.Context, _ *string, req kmsg.Request) (func() (kmsg.Response, error), error) {
	done := l.submit(req.Key())
	return func() (kmsg.Response, error) {
		<-done
		resp := req.ResponseKind()
		resp.SetVersion(req.GetVersion())
		return resp, nil
	}, nil
}

func (l *orderedLink) ForwardFrame(ctx context.Context, req *Request, frame []byte, bodyAt int) ([]byte, func(), error) {
	return forwardFrameBy(ctx, l, req, frame, bodyAt)
}

func (l *orderedLink) SendFrame(_ context.Context, req *Request, _ []byte, _ int) (func() ([]byte, func(), error), error) {
	done := l.submit(req.Key)
	return func() ([]byte, func(), error) {
		<-done
		resp := kmsg.ResponseForKey(req.Key)
		resp.SetVersion(req.Version)
		return AppendResponse(nil, -1, resp)[4:], func() {}, nil
	}, nil
}

func (l *orderedLink) Close() error { l.d.closed.Add(1); return nil }

// orderedServer serves Fetch and OffsetForLeaderEpoch over d's links on a
// listener without SASL.
func orderedServer(t *testing.T, d *orderedPlane) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ranges := map[int16]VersionRange{int16(kmsg.Fetch): {4, 17}, int16(kmsg.OffsetForLeaderEpoch): {0, 4}}
	s := NewServer(ln, Config{Table: NewTable(ranges), Dial: d.dial})
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	t.Cleanup(func() { // before Shutdown, which waits for the held Fetch
		select {
		case <-d.release:
		default:
			close(d.release)
		}
	})
	return ln.Addr().String()
}

// epochsBehindFetch serves d (orderedServer) to a client that sends a
// Fetch (correlation id 10), which d holds, and an OffsetForLeaderEpoch
// (11).
func epochsBehindFetch(t *testing.T, d *orderedPlane) (c *client, fetch *kmsg.FetchRequest, ole *kmsg.OffsetForLeaderEpochRequest) {
	t.Helper()
	c = dial(t, orderedServer(t, d))
	fetch, ole = kmsg.NewPtrFetchRequest(), kmsg.NewPtrOffsetForLeaderEpochRequest()
	c.send(fetch, 12, 10)
	c.send(ole, 4, 11)
	return c, fetch, ole
}

// releaseExpecting waits until the data plane answered held while it
// holds the Fetch (then a moment more for anything beyond it to show),
// releases the Fetch, reads both answers in request order, and checks
// that the data plane answered all in all.
func (d *orderedPlane) releaseExpecting(t *testing.T, c *client, fetch, ole kmsg.Request, held, all string) {
	t.Helper()
	if got := settled(d.answeredList, held); got != held {
		t.Fatalf("answered by the data plane while the Fetch is held: %q, want %q", got, held)
	}
	close(d.release)
	c.expectAnswers(10, fetch, ole)
	if got := d.answeredList(); got != all {
		t.Fatalf("answered by the data plane: %q, want %q", got, all)
	}
}

// TestReadAheadOffsetForLeaderEpochAside: an OffsetForLeaderEpoch read
// behind a held Fetch is answered by the data plane on a link of its own
// while the Fetch is still held, and written right after the Fetch's
// answer, in request order; its link is closed once it is answered.
func TestReadAheadOffsetForLeaderEpochAside(t *testing.T) {
	d := &orderedPlane{release: make(chan struct{})}
	c, fetch, ole := epochsBehindFetch(t, d)
	d.releaseExpecting(t, c, fetch, ole, "2:OffsetForLeaderEpoch", "2:OffsetForLeaderEpoch 1:Fetch")
	if n := d.closed.Load(); n != 1 {
		t.Fatalf("links closed: %d, want the OffsetForLeaderEpoch's", n)
	}
	// The connection goes on as before on its own link.
	time.Sleep(settleDelay) // the answers are written: nothing is ahead
	c.send(ole, 4, 12)
	c.expectAnswers(12, ole)
	if got, n := d.answeredList(), d.dials.Load(); got != "2:OffsetForLeaderEpoch 1:Fetch 1:OffsetForLeaderEpoch" || n != 2 {
		t.Fatalf("answered by the data plane: %q over %d links", got, n)
	}
}

// TestReadAheadAsideFallsBack: when no link of its own can be dialed, the
// OffsetForLeaderEpoch goes behind the Fetch on the connection's link and
// is answered after it.
func TestReadAheadAsideFallsBack(t *testing.T) {
	d := &orderedPlane{release: make(chan struct{}), failDial: func(n int32) bool { return n == 2 }}
	c, fetch, ole := epochsBehindFetch(t, d)
	d.releaseExpecting(t, c, fetch, ole, "", "1:Fetch 1:OffsetForLeaderEpoch")
}

// TestReadAheadAsideNotWithSASL: on a SASL-authenticated connection, whose
// link carries the client's login, an OffsetForLeaderEpoch read behind a
// held Fetch goes on the connection's own link.
func TestReadAheadAsideNotWithSASL(t *testing.T) {
	link := newPipeLink()
	c, fetch, _ := heldFetch(t, link)
	ole := kmsg.NewPtrOffsetForLeaderEpochRequest()
	c.send(ole, 4, 11)
	link.waitSent(t, "Fetch OffsetForLeaderEpoch")
	link.open()
	c.expectAnswers(10, fetch, ole)
	if n := link.dials.Load(); n != 1 {
		t.Fatalf("links dialed: %d, want the connection's alone", n)
	}
}
