package wire

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// startLimited serves kafka44 with cfg's limits on loopback; its group
// coordinator, unless cfg has one, answers COORDINATOR_NOT_AVAILABLE.
func startLimited(t testing.TB, cfg Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	cfg.Table = NewTable(kafka44)
	cfg.Dial = func(context.Context) (Upstream, error) { return rec, nil }
	if cfg.Group == nil {
		cfg.Group = func(_ context.Context, req *Request) (kmsg.Response, error) {
			return ErrorResponse(req.Body, kerr.CoordinatorNotAvailable.Code), nil
		}
	}
	s := NewServer(ln, cfg)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	return ln.Addr().String()
}

// expectGone asserts the server closed the connection without answering
// (a clean close, or a reset when it left bytes unread).
func (c *client) expectGone() {
	c.t.Helper()
	_, err := c.br.ReadByte()
	if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		c.t.Fatalf("want the connection closed, got %v", err)
	}
}

// frameStart is the start of a frame of n bytes that screen lets through:
// its size and the key and version of Produce v9.
func frameStart(n uint32) []byte {
	return append(binary.BigEndian.AppendUint32(nil, n), 0, 0, 0, 9)
}

func (c *client) apiVersions(corr int16) {
	c.t.Helper()
	req := kmsg.NewPtrApiVersionsRequest()
	c.send(req, 3, corr)
	if got, _ := c.recv(req); got != int32(corr) {
		c.t.Fatalf("ApiVersions answered with correlation id %d, want %d", got, corr)
	}
}

// TestBudgetHoldsReading: while one connection's declared frame holds the
// whole request budget, other connections' requests are not read; they
// are answered once the budget frees.
func TestBudgetHoldsReading(t *testing.T) {
	const budget = 1 << 20
	lim := NewLimits(budget, 100, 100)
	addr := startLimited(t, Config{MaxRequestBytes: budget, Limits: lim})
	hog := dial(t, addr)
	hog.c.Write(frameStart(budget))
	waitUntil(t, func() bool { return lim.inFlightBytes() == budget })

	other := dial(t, addr)
	req := kmsg.NewPtrApiVersionsRequest()
	other.send(req, 3, 5)
	other.c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if _, err := other.br.ReadByte(); err == nil {
		t.Fatal("a request was answered while the budget was exhausted")
	}
	other.c.SetReadDeadline(time.Now().Add(10 * time.Second))

	hog.c.Write(bytes.Repeat([]byte{0xff}, budget-4)) // the frame arrives: malformed, closed, released
	hog.expectGone()
	if corr, _ := other.recv(req); corr != 5 {
		t.Fatalf("correlation id %d", corr)
	}
	waitUntil(t, func() bool { return lim.inFlightBytes() == 0 })
}

// TestPreAuthentication: on a listener requiring SASL, a frame over the
// pre-authentication limit closes the connection without taking budget,
// and so does any request but ApiVersions and SASL; once authenticated,
// the same large request is served.
func TestPreAuthentication(t *testing.T) {
	lim := NewLimits(1<<20, 100, 100)
	addr := startLimited(t, Config{MaxRequestBytes: 1 << 20, Limits: lim, SASLRequired: true, PreAuthMaxRequestBytes: 1024})

	c := dial(t, addr)
	c.c.Write(binary.BigEndian.AppendUint32(nil, 100<<10))
	c.expectGone()
	if n := lim.inFlightBytes(); n != 0 {
		t.Fatalf("a refused pre-authentication frame holds %d bytes of budget", n)
	}

	c = dial(t, addr)
	c.send(kmsg.NewPtrMetadataRequest(), 12, 1)
	c.expectGone()

	big := kmsg.NewPtrMetadataRequest()
	big.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(strings.Repeat("t", 2000))}}
	c = dial(t, addr)
	c.apiVersions(1)
	sa := kmsg.NewPtrSASLAuthenticateRequest()
	c.send(sa, 2, 2) // the fake data plane accepts it
	c.recv(sa)
	c.send(big, 12, 3)
	if corr, _ := c.recv(big); corr != 3 {
		t.Fatalf("correlation id %d", corr)
	}
}

// TestStringLengthLimit: a compact string longer than Kafka's 32,767-byte
// limit closes the connection (Kafka fails parsing such a request and
// closes it); one of exactly the limit is served.
func TestStringLengthLimit(t *testing.T) {
	addr := startLimited(t, Config{Limits: NewLimits(DefaultMaxRequestBytes, 10, 10)})
	for _, tc := range []struct {
		n      int
		served bool
	}{{MaxStringLen, true}, {MaxStringLen + 1, false}, {64 << 10, false}} {
		c := dial(t, addr)
		hb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		hb.Group, hb.MemberID = "g", strings.Repeat("m", tc.n)
		c.send(hb, 0, 1)
		if !tc.served {
			c.expectGone()
			continue
		}
		if _, resp := c.recv(hb); resp.(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode != kerr.CoordinatorNotAvailable.Code {
			t.Fatalf("member id of %d bytes: %+v", tc.n, resp)
		}
	}
}

// TestConnectionCapsCloseNewConnections: connections over the per-address
// cap are closed at once; closing one frees its slot.
func TestConnectionCapsCloseNewConnections(t *testing.T) {
	addr := startLimited(t, Config{Limits: NewLimits(1<<20, 10, 2)})
	a, b := dial(t, addr), dial(t, addr)
	a.apiVersions(1)
	b.apiVersions(1)
	dial(t, addr).expectGone()
	a.c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := dial(t, addr)
		req := kmsg.NewPtrApiVersionsRequest()
		c.send(req, 3, 2)
		if _, err := ReadFrame(c.br, 1<<20); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the closed connection's slot was not freed")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestIdleConnectionClosed: a connection that sends nothing for the idle
// timeout is closed.
func TestIdleConnectionClosed(t *testing.T) {
	addr := startLimited(t, Config{IdleTimeout: 100 * time.Millisecond})
	c := dial(t, addr)
	c.apiVersions(1)
	c.expectGone()
}

// TestBusyConnectionKeptOpen: a connection sending requests more often
// than the idle timeout stays open over many timeouts, its read deadline
// moved only now and then (extendRead), and is closed once it goes quiet.
func TestBusyConnectionKeptOpen(t *testing.T) {
	const idle = 200 * time.Millisecond
	addr := startLimited(t, Config{IdleTimeout: idle})
	c := dial(t, addr)
	var answered time.Time
	for corr, start := int16(1), time.Now(); time.Since(start) < 5*idle; corr++ {
		time.Sleep(idle / 4)
		c.apiVersions(corr)
		answered = time.Now()
	}
	c.expectGone()
	// The deadline is at least 7/8 of the timeout after the last answer;
	// 3/4 leaves room for the answer's own way back.
	if waited := time.Since(answered); waited < idle*3/4 {
		t.Errorf("closed %v after the last answer, sooner than 3/4 of the idle timeout %v", waited, idle)
	}
}

// moveDeadline moves a deadline only once over 1/8 of the timeout has run
// down.
func TestMoveDeadline(t *testing.T) {
	now := time.Unix(1000, 0)
	var by time.Time
	if !moveDeadline(&by, now, 8*time.Second) || !by.Equal(now.Add(8*time.Second)) {
		t.Fatalf("unset deadline: moved to %v, want %v", by, now.Add(8*time.Second))
	}
	if moveDeadline(&by, now.Add(time.Second), 8*time.Second) {
		t.Error("moved with no more than 1/8 of the timeout run down")
	}
	later := now.Add(time.Second + time.Millisecond)
	if !moveDeadline(&by, later, 8*time.Second) || !by.Equal(later.Add(8*time.Second)) {
		t.Errorf("over 1/8 run down: deadline %v, want %v", by, later.Add(8*time.Second))
	}
}

// TestShutdownEndsBudgetWait: a connection waiting for request budget
// does not hold up Shutdown.
func TestShutdownEndsBudgetWait(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := NewLimits(1<<20, 10, 10)
	s := NewServer(ln, Config{Table: NewTable(kafka44), MaxRequestBytes: 1 << 20, Limits: lim})
	hog, waiter := dial(t, ln.Addr().String()), dial(t, ln.Addr().String())
	hog.c.Write(frameStart(1 << 20))
	waitUntil(t, func() bool { return lim.inFlightBytes() == 1<<20 })
	waiter.c.Write(frameStart(1 << 19))
	waitUntil(t, func() bool { lim.budget.mu.Lock(); defer lim.budget.mu.Unlock(); return len(lim.budget.waiters) == 1 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- s.Shutdown(ctx) }()
	waiter.expectGone()
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if n := lim.inFlightBytes(); n != 0 {
		t.Fatalf("%d bytes of budget held after Shutdown", n)
	}
}
