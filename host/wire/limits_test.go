package wire

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync/atomic"
	"testing"
	"time"
)

func TestJavaHost(t *testing.T) {
	for _, tc := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 53122}, "/127.0.0.1"},
		{&net.TCPAddr{IP: net.ParseIP("::ffff:10.1.2.3"), Port: 1}, "/10.1.2.3"},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 9092}, "/0:0:0:0:0:0:0:1"},
		{&net.TCPAddr{IP: net.ParseIP("fe80::1:abcd"), Port: 9092, Zone: "eth0"}, "/fe80:0:0:0:0:0:1:abcd%eth0"},
		{pipeAddr{}, "pipe"},
	} {
		if got := javaHost(tc.addr); got != tc.want {
			t.Errorf("javaHost(%v) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// TestBudgetFirstComeFirstServed: a grant waits for released bytes, a
// large waiter is not overtaken by a medium one that would fit, a small
// one overtakes when it fits, a cancelled waiter lets the next one
// through, and more than the whole budget is refused at once.
func TestBudgetFirstComeFirstServed(t *testing.T) {
	const k = 1 << 10
	l := NewLimits(1000*k, 10, 10)
	ctx := context.Background()
	waiters := func(n int) func() bool {
		return func() bool { l.budget.mu.Lock(); defer l.budget.mu.Unlock(); return len(l.budget.waiters) == n }
	}
	if err := l.acquire(ctx, 700*k); err != nil {
		t.Fatal(err)
	}
	big, medium := make(chan error, 1), make(chan error, 1)
	go func() { big <- l.acquire(ctx, 600*k) }()
	waitUntil(t, waiters(1))
	go func() { medium <- l.acquire(ctx, 100*k) }()
	waitUntil(t, waiters(2))
	if err := l.acquire(ctx, smallFrame); err != nil { // fits, overtakes
		t.Fatal(err)
	}
	select {
	case err := <-medium:
		t.Fatalf("a medium request overtook a waiting large one (%v)", err)
	case <-time.After(50 * time.Millisecond):
	}
	l.release(700 * k)
	if err := <-big; err != nil {
		t.Fatal(err)
	}
	if err := <-medium; err != nil {
		t.Fatal(err)
	}
	l.release(smallFrame)
	if got := l.inFlightBytes(); got != 700*k {
		t.Fatalf("in flight %d, want %d", got, 700*k)
	}
	cctx, cancel := context.WithCancel(ctx)
	blocked := make(chan error, 1)
	go func() { blocked <- l.acquire(cctx, 500*k) }()
	waitUntil(t, waiters(1))
	next := make(chan error, 1)
	go func() { next <- l.acquire(ctx, 300*k) }()
	waitUntil(t, waiters(2))
	cancel()
	if err := <-blocked; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled wait: %v", err)
	}
	if err := <-next; err != nil {
		t.Fatal(err)
	}
	if err := l.acquire(ctx, 1000*k+1); !errors.Is(err, ErrFrameSize) {
		t.Fatalf("more than the budget: %v", err)
	}
	l.release(1000 * k)
	if got := l.inFlightBytes(); got != 0 {
		t.Fatalf("in flight %d after releasing everything", got)
	}
}

// TestConnectionCaps: a connection over the total or the per-address cap
// is refused; a closed one frees its slot once.
func TestConnectionCaps(t *testing.T) {
	l := NewLimits(1<<20, 3, 2)
	a := &net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 1}
	b := &net.TCPAddr{IP: net.ParseIP("10.0.0.2"), Port: 1}
	r1, err := l.admit(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.admit(&net.TCPAddr{IP: a.IP, Port: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.admit(&net.TCPAddr{IP: a.IP, Port: 3}); !errors.Is(err, errTooManyConns) {
		t.Fatalf("third connection from one address: %v", err)
	}
	if _, err := l.admit(b); err != nil {
		t.Fatal(err)
	}
	if _, err := l.admit(&net.TCPAddr{IP: net.ParseIP("10.0.0.3")}); !errors.Is(err, errTooManyConns) {
		t.Fatalf("fourth connection in total: %v", err)
	}
	r1()
	r1()
	if _, err := l.admit(&net.TCPAddr{IP: net.ParseIP("10.0.0.3")}); err != nil {
		t.Fatalf("after a close: %v", err)
	}
	if _, err := l.admit(&net.TCPAddr{IP: net.ParseIP("10.0.0.4")}); !errors.Is(err, errTooManyConns) {
		t.Fatalf("a double release freed two slots: %v", err)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// countHandler counts log records.
type countHandler struct{ n *atomic.Int64 }

func (h countHandler) Enabled(context.Context, slog.Level) bool  { return true }
func (h countHandler) Handle(context.Context, slog.Record) error { h.n.Add(1); return nil }
func (h countHandler) WithAttrs([]slog.Attr) slog.Handler        { return h }
func (h countHandler) WithGroup(string) slog.Handler             { return h }

// TestWarningsRateLimited: a flood of client-caused warnings logs one
// line, not one per connection.
func TestWarningsRateLimited(t *testing.T) {
	var n atomic.Int64
	var w warnings
	log := slog.New(countHandler{&n})
	for i := 0; i < 1000; i++ {
		w.warn(log, "kafka connection refused", errTooManyConns)
	}
	if n.Load() != 1 || w.missed != 999 {
		t.Fatalf("%d lines logged, %d counted as left out; want 1 and 999", n.Load(), w.missed)
	}
}
