package wire

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// pipeListener hands a Server the server ends of in-memory pipes: a
// pipe's write returns once the reader took it all, so the test sees
// each of the server's writes as one.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error { l.once.Do(func() { close(l.done) }); return nil }

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// writesConn records the bytes of each of the server's writes.
type writesConn struct {
	net.Conn
	mu     sync.Mutex
	writes [][]byte
}

func (c *writesConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	c.writes = append(c.writes, append([]byte(nil), b...))
	c.mu.Unlock()
	return c.Conn.Write(b)
}

// answersPerWrite returns the sizes of the answer frames of each write.
func (c *writesConn) answersPerWrite(t *testing.T) [][]int {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	var out [][]int
	for _, w := range c.writes {
		var sizes []int
		for len(w) > 0 {
			if len(w) < 4 {
				t.Fatalf("a write ends inside a frame's size")
			}
			n := 4 + int(binary.BigEndian.Uint32(w))
			if n > len(w) {
				t.Fatalf("a write ends inside a frame")
			}
			sizes, w = append(sizes, n), w[n:]
		}
		out = append(out, sizes)
	}
	return out
}

// heldServer serves one pipe connection with group, and returns the
// client's end, the server's end and the server.
func heldServer(t *testing.T, cfg Config) (*client, *writesConn, *Server) {
	t.Helper()
	ln := &pipeListener{conns: make(chan net.Conn, 1), done: make(chan struct{})}
	cli, srv := net.Pipe()
	wc := &writesConn{Conn: srv}
	ln.conns <- wc
	cfg.Table = NewTable(kafka44)
	s := NewServer(ln, cfg)
	t.Cleanup(func() {
		cli.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
	})
	cli.SetDeadline(time.Now().Add(10 * time.Second)) // every wait is bounded
	return &client{t: t, c: cli, br: bufio.NewReader(cli)}, wc, s
}

// heartbeat is a classic Heartbeat of group, at the version sent.
func heartbeat(group string) *kmsg.HeartbeatRequest {
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID = 4, group, "m"
	return hb
}

// sendAll writes the frames of reqs, correlation ids from 0, in one write.
func (c *client) sendAll(reqs ...kmsg.Request) {
	c.t.Helper()
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test"))
	var buf []byte
	for i, r := range reqs {
		buf = append(buf, f.AppendRequest(nil, r, int32(i))...)
	}
	if _, err := c.c.Write(buf); err != nil {
		c.t.Fatal(err)
	}
}

// inPlace answers every group request at once.
func inPlace(_ context.Context, req *Request) (kmsg.Response, error) {
	return ErrorResponse(req.Body, 0), nil
}

// TestHeldAnswersLeaveInOneWrite: heartbeats pipelined in one write and
// answered in place are answered in one write, in order; a request whose
// answer may not wait (a forwarded one) and the one before it are
// written at once.
func TestHeldAnswersLeaveInOneWrite(t *testing.T) {
	c, wc, _ := heldServer(t, Config{Group: inPlace})
	var reqs []kmsg.Request
	for range 6 {
		reqs = append(reqs, heartbeat("g"))
	}
	c.sendAll(reqs...)
	c.expectAnswers(0, reqs...)
	if got := wc.answersPerWrite(t); len(got) != 1 || len(got[0]) != 6 {
		t.Fatalf("six pipelined heartbeats answered in place took writes of %v answers, want one write of six", got)
	}
}

// TestHeldAnswersBounded: at most maxHeldAnswers answers go in one write,
// and at most maxHeldBytes of answers wait in one (the answer that
// overflows it goes with them at once).
func TestHeldAnswersBounded(t *testing.T) {
	big := strings.Repeat("x", 5000)
	c, wc, _ := heldServer(t, Config{Group: func(_ context.Context, req *Request) (kmsg.Response, error) {
		r := kmsg.NewPtrHeartbeatResponse()
		if req.Body.(*kmsg.HeartbeatRequest).Group == "big" {
			r := kmsg.NewPtrJoinGroupResponse() // a large answer, whatever its key
			r.Version = 9
			r.Protocol = &big
			return r, nil
		}
		r.Version = req.Version
		return r, nil
	}})
	var reqs []kmsg.Request
	for range 20 {
		reqs = append(reqs, heartbeat("g"))
	}
	for range 10 {
		reqs = append(reqs, heartbeat("big"))
	}
	c.sendAll(reqs...)
	for i := range 20 {
		if corr, _ := c.recv(reqs[i]); corr != int32(i) {
			t.Fatalf("answer %d has correlation id %d", i, corr)
		}
	}
	for i := 20; i < 30; i++ {
		frame, err := ReadFrame(c.br, 1<<20)
		if err != nil || int32(binary.BigEndian.Uint32(frame)) != int32(i) {
			t.Fatalf("answer %d: %v", i, err)
		}
	}
	got := wc.answersPerWrite(t)
	answers, most := 0, 0
	for _, w := range got {
		answers += len(w)
		most = max(most, len(w))
		if len(w) > maxHeldAnswers {
			t.Fatalf("a write of %d answers (at most %d)", len(w), maxHeldAnswers)
		}
		held := 0
		for _, n := range w[:len(w)-1] {
			held += n
		}
		if held > maxHeldBytes {
			t.Fatalf("%d bytes of answers waited for one more (at most %d): %v", held, maxHeldBytes, w)
		}
	}
	if answers != 30 || most != maxHeldAnswers || len(got) > 10 {
		t.Fatalf("writes of %v answers", got)
	}
}

// TestHeldAnswerNotHeldBehindAWait: an answer already computed reaches
// the client while the request pipelined behind it waits — in the group
// coordinator (which calls Flush first), for its group's quota, or for
// request budget.
func TestHeldAnswerNotHeldBehindAWait(t *testing.T) {
	t.Run("group coordinator", func(t *testing.T) {
		release := make(chan struct{})
		c, _, _ := heldServer(t, Config{Group: func(ctx context.Context, req *Request) (kmsg.Response, error) {
			if req.Body.(*kmsg.HeartbeatRequest).Group == "slow" {
				Flush(ctx)
				select {
				case <-release:
				case <-ctx.Done(): // the test failed: Shutdown gave up waiting
				}
			}
			return inPlace(ctx, req)
		}})
		reqs := []kmsg.Request{heartbeat("g"), heartbeat("slow")}
		c.sendAll(reqs...)
		c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		c.expectAnswers(0, reqs[0]) // while the second waits
		close(release)
		c.expectAnswers(1, reqs[1:]...)
	})
	t.Run("quota", func(t *testing.T) {
		var mu sync.Mutex
		asked := 0
		c, _, _ := heldServer(t, Config{Group: inPlace, Quota: quotaFunc(func(string) time.Duration {
			mu.Lock()
			defer mu.Unlock()
			if asked++; asked == 1 {
				return 0
			}
			return time.Hour // the second request waits until Shutdown
		})})
		reqs := []kmsg.Request{heartbeat("g"), heartbeat("g")}
		c.sendAll(reqs...)
		c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		c.expectAnswers(0, reqs[0])
	})
	t.Run("request budget", func(t *testing.T) {
		l := NewLimits(1<<20, 10, 10)
		var took int64
		c, _, _ := heldServer(t, Config{Limits: l, Group: func(ctx context.Context, req *Request) (kmsg.Response, error) {
			if took == 0 { // another connection takes the budget left: the next frame, larger than this one, waits
				l.budget.mu.Lock()
				took, l.budget.avail = l.budget.avail, 0
				l.budget.mu.Unlock()
			}
			return inPlace(ctx, req)
		}})
		second := heartbeat("g")
		second.MemberID = strings.Repeat("m", 100)
		reqs := []kmsg.Request{heartbeat("g"), second}
		c.sendAll(reqs...)
		c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		c.expectAnswers(0, reqs[0])
		l.release(took)
		c.expectAnswers(1, reqs[1:]...)
	})
}

type quotaFunc func(string) time.Duration

func (f quotaFunc) GroupThrottle(g string) time.Duration { return f(g) }

// TestHeldAnswersWrittenBeforeClose: answers held when the connection
// closes — a request behind them fails, the server shuts down — reach the
// client before the close.
func TestHeldAnswersWrittenBeforeClose(t *testing.T) {
	t.Run("failed request", func(t *testing.T) {
		c, _, _ := heldServer(t, Config{Group: func(ctx context.Context, req *Request) (kmsg.Response, error) {
			if req.Body.(*kmsg.HeartbeatRequest).Group == "bad" {
				return nil, errors.New("refused")
			}
			return inPlace(ctx, req)
		}})
		reqs := []kmsg.Request{heartbeat("g"), heartbeat("g"), heartbeat("bad"), heartbeat("g")}
		c.sendAll(reqs...)
		c.expectAnswers(0, reqs[:2]...)
		c.expectClosed()
	})
	t.Run("shutdown", func(t *testing.T) {
		entered, release := make(chan struct{}), make(chan struct{})
		c, _, s := heldServer(t, Config{Group: func(ctx context.Context, req *Request) (kmsg.Response, error) {
			if req.Body.(*kmsg.HeartbeatRequest).Group == "slow" {
				close(entered) // no Flush: the answer before it stays held
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return inPlace(ctx, req)
		}})
		reqs := []kmsg.Request{heartbeat("g"), heartbeat("slow"), heartbeat("g")}
		c.sendAll(reqs...)
		select {
		case <-entered:
		case <-time.After(5 * time.Second): // a pipe's write waits for its reader: the first answer was not held
			t.Fatal("the second request was not served")
		}
		done := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			done <- s.Shutdown(ctx)
		}()
		for !s.isDraining() {
			time.Sleep(time.Millisecond)
		}
		close(release)
		c.expectAnswers(0, reqs[:2]...) // the third is not served: the server drains
		if _, err := c.br.ReadByte(); !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrClosedPipe) {
			t.Fatalf("want the connection closed, got %v", err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}

// TestHeldAnswerWriteFailure: a write that fails is returned by every
// later write, and nothing after it is written.
func TestHeldAnswerWriteFailure(t *testing.T) {
	client, server := net.Pipe()
	client.Close()
	c := &conn{s: &Server{cfg: Config{WriteTimeout: time.Second}}, nc: server}
	if err := c.hold(1, ErrorResponse(heartbeat("g"), kerr.NotCoordinator.Code), true); err != nil {
		t.Fatalf("holding wrote: %v", err)
	}
	if err := c.flush(); err == nil {
		t.Fatal("a write to a closed pipe succeeded")
	}
	if err := c.writeResponse(2, ErrorResponse(heartbeat("g"), 0)); err == nil {
		t.Fatal("a write after a failed one succeeded")
	}
}
