package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// awaitingLink is an orderedLink whose next answer can be waited for
// (Awaiter). It counts the waits and the wake-ups, and notes any read of
// the link (an answer's recv, a synchronous Forward) while an Await is in
// progress: the link is one reader's at a time. A Produce frame with
// acks=0 gets no answer (a nil recv).
type awaitingLink struct {
	*orderedLink
	mu      sync.Mutex
	arrived *sync.Cond
	ready   int  // answers the data plane sent that no recv took yet
	woken   bool // Wake since the last Await returned
	waiting bool // an Await is in progress
	// brokenWake makes an Await that a Wake ends fail, as one does
	// whose link failed at the same time.
	brokenWake bool
	awaits     int
	wakes      int
	overlap    []string
}

func newAwaitingLink(l *orderedLink) *awaitingLink {
	a := &awaitingLink{orderedLink: l}
	a.arrived = sync.NewCond(&a.mu)
	return a
}

// submit is orderedLink.submit; the answer, once sent, is there to read.
func (a *awaitingLink) submit(key int16) chan struct{} {
	done := a.orderedLink.submit(key)
	go func() {
		<-done
		a.mu.Lock()
		a.ready++
		a.arrived.Broadcast()
		a.mu.Unlock()
	}()
	return done
}

// read notes a read of the link by what.
func (a *awaitingLink) read(what string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.waiting {
		a.overlap = append(a.overlap, what)
	}
}

// take is a recv's read of the next answer, once the data plane sent it.
func (a *awaitingLink) take(what string) {
	a.read(what)
	a.mu.Lock()
	defer a.mu.Unlock()
	for a.ready == 0 {
		a.arrived.Wait()
	}
	a.ready--
}

func (a *awaitingLink) Await() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.awaits++
	a.waiting = true
	for a.ready == 0 && !a.woken {
		a.arrived.Wait()
	}
	woken := a.woken
	a.waiting, a.woken = false, false
	if woken && a.brokenWake {
		return errors.New("link broken")
	}
	return nil
}

func (a *awaitingLink) Wake() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.wakes++
	a.woken = true
	a.arrived.Broadcast()
}

// awaitingNow waits up to 5 s for an Await in progress.
func (a *awaitingLink) awaitingNow() bool {
	waiting := func() string {
		a.mu.Lock()
		defer a.mu.Unlock()
		return fmt.Sprint(a.waiting)
	}
	return settled(waiting, "true") == "true"
}

func (a *awaitingLink) counts() (awaits, wakes int, overlap []string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.awaits, a.wakes, append([]string(nil), a.overlap...)
}

func (a *awaitingLink) Forward(ctx context.Context, clientID *string, req kmsg.Request) (kmsg.Response, error) {
	a.read("Forward " + kmsg.NameForKey(req.Key()))
	recv, err := a.Send(ctx, clientID, req)
	if err != nil {
		return nil, err
	}
	return recv()
}

func (a *awaitingLink) Send(_ context.Context, _ *string, req kmsg.Request) (func() (kmsg.Response, error), error) {
	a.submit(req.Key())
	return func() (kmsg.Response, error) {
		a.take("recv " + kmsg.NameForKey(req.Key()))
		resp := req.ResponseKind()
		resp.SetVersion(req.GetVersion())
		return resp, nil
	}, nil
}

func (a *awaitingLink) ForwardFrame(ctx context.Context, req *Request, frame []byte, bodyAt int) ([]byte, func(), error) {
	a.read("ForwardFrame " + kmsg.NameForKey(req.Key))
	return forwardFrameBy(ctx, a, req, frame, bodyAt)
}

func (a *awaitingLink) SendFrame(_ context.Context, req *Request, frame []byte, bodyAt int) (func() ([]byte, func(), error), error) {
	if req.Key == int16(kmsg.Produce) {
		p := kmsg.NewPtrProduceRequest()
		p.SetVersion(req.Version)
		if err := p.ReadFrom(frame[bodyAt:]); err != nil {
			return nil, err
		}
		if p.Acks == 0 {
			a.orderedLink.submit(req.Key)
			return nil, nil
		}
	}
	a.submit(req.Key)
	return func() ([]byte, func(), error) {
		a.take("recv " + kmsg.NameForKey(req.Key))
		resp := kmsg.ResponseForKey(req.Key)
		resp.SetVersion(req.Version)
		return AppendResponse(nil, -1, resp)[4:], func() {}, nil
	}, nil
}

// awaitingServer serves Produce, Fetch and Metadata over one awaitingLink,
// and group requests, on a listener without SASL; d's Fetch is not held.
func awaitingServer(t *testing.T) (addr string, link *awaitingLink, d *orderedPlane) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d = &orderedPlane{release: make(chan struct{})}
	close(d.release)
	up, _ := d.dial(context.Background())
	link = newAwaitingLink(up.(*orderedLink))
	ranges := map[int16]VersionRange{int16(kmsg.Fetch): {4, 17}, int16(kmsg.Produce): {3, 12}, int16(kmsg.Metadata): {0, 13}}
	dial := func(context.Context) (Upstream, error) { return link, nil }
	group := func(_ context.Context, req *Request) (kmsg.Response, error) { return ErrorResponse(req.Body, 0), nil }
	s := NewServer(ln, Config{Table: NewTable(ranges), Dial: dial, Group: group})
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return ln.Addr().String(), link, d
}

func produceAcks(acks int16) *kmsg.ProduceRequest {
	p := kmsg.NewPtrProduceRequest()
	p.Acks, p.TimeoutMillis = acks, 1000
	return p
}

// TestAnswererWaitsInLink: between the answers of requests sent ahead,
// the connection's answerer waits in the link for the next one (Awaiter),
// so that a request sent then is answered without a wake-up of its own;
// it is woken only to leave the link to a request forwarded in turn, and
// nothing reads the link while it waits there.
func TestAnswererWaitsInLink(t *testing.T) {
	addr, link, d := awaitingServer(t)
	c := dial(t, addr)
	const rounds = 5
	for i := range rounds {
		if i > 0 && !link.awaitingNow() {
			t.Fatalf("round %d: the answerer does not wait in the link after the answer before", i)
		}
		p := produceAcks(-1)
		c.send(p, 9, int16(20+i))
		c.expectAnswers(int32(20+i), p)
	}
	if !link.awaitingNow() {
		t.Fatal("the answerer does not wait in the link after the last answer")
	}
	awaits, wakes, overlap := link.counts()
	if awaits != rounds || wakes != 0 || len(overlap) > 0 {
		t.Fatalf("after %d round trips: %d waits in the link, %d wake-ups, link read during a wait: %q; want one wait after each answer and no wake-up", rounds, awaits, wakes, overlap)
	}
	// A group request is served once every answer before it is written,
	// and the answerer has left the link: the Metadata after it is
	// forwarded by the connection's own goroutine.
	hb := kmsg.NewPtrHeartbeatRequest()
	c.send(hb, 4, 30)
	c.expectAnswers(30, hb)
	md := kmsg.NewPtrMetadataRequest()
	c.send(md, 12, 31)
	c.expectAnswers(31, md)
	p := produceAcks(-1)
	c.send(p, 9, 32)
	c.expectAnswers(32, p)
	if _, wakes, overlap = link.counts(); wakes != 1 || len(overlap) > 0 {
		t.Fatalf("%d wake-ups (want 1: the group request's), link read during a wait: %q", wakes, overlap)
	}
	want := "1:Produce 1:Produce 1:Produce 1:Produce 1:Produce 1:Metadata 1:Produce"
	if got := d.answeredList(); got != want {
		t.Fatalf("answered %q, want %q", got, want)
	}
}

// TestAheadWithoutAnswer: a request sent ahead that gets no answer (a
// Produce with acks=0: a nil recv) is not waited for; the requests after
// it are answered in order.
func TestAheadWithoutAnswer(t *testing.T) {
	addr, link, _ := awaitingServer(t)
	c := dial(t, addr)
	none, acked := produceAcks(0), produceAcks(-1)
	c.send(none, 9, 40)
	c.send(acked, 9, 41)
	fetch := kmsg.NewPtrFetchRequest()
	c.send(fetch, 12, 42)
	c.expectAnswers(41, acked, fetch)
	md := kmsg.NewPtrMetadataRequest()
	c.send(md, 12, 43)
	c.expectAnswers(43, md)
	if _, _, overlap := link.counts(); len(overlap) > 0 {
		t.Fatalf("link read during a wait: %q", overlap)
	}
}

// TestAnswererStoppedAsItsWaitFails: an answerer stopped while its wait in
// the link fails ends all the same, and the next request sent ahead gets
// an answerer that waits in the link again after its answer.
func TestAnswererStoppedAsItsWaitFails(t *testing.T) {
	addr, link, _ := awaitingServer(t)
	c := dial(t, addr)
	p := produceAcks(-1)
	c.send(p, 9, 50)
	c.expectAnswers(50, p)
	if !link.awaitingNow() {
		t.Fatal("the answerer does not wait in the link after the answer")
	}
	link.mu.Lock()
	link.brokenWake = true
	link.mu.Unlock()
	hb := kmsg.NewPtrHeartbeatRequest() // stops the answerer: its wait fails
	c.send(hb, 4, 51)
	c.expectAnswers(51, hb)
	link.mu.Lock()
	link.brokenWake = false
	link.mu.Unlock()
	p = produceAcks(-1)
	c.send(p, 9, 52)
	c.expectAnswers(52, p)
	if !link.awaitingNow() {
		t.Fatal("after a stop that met a failed wait, the next answerer does not wait in the link")
	}
}
