//go:build linux

package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sys/unix"
)

// hbServer answers StreamsGroupHeartbeat on loopback as a steady group
// does (the member's own epoch back), with hooks for misbehaving.
type hbServer struct {
	t  *testing.T
	ln net.Listener

	delay  time.Duration                                              // before each answer
	split  bool                                                       // write each answer in two parts, apart
	answer func(req *kmsg.StreamsGroupHeartbeatRequest) (int16, bool) // error code to answer; false: close the connection
	seen   atomic.Int64                                               // requests read
	ids    sync.Map                                                   // client IDs seen

	wg sync.WaitGroup
}

func newHBServer(t *testing.T) *hbServer {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &hbServer{t: t, ln: ln}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() { defer s.wg.Done(); s.serve(c) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); s.wg.Wait() })
	return s
}

func (s *hbServer) serve(c net.Conn) {
	defer c.Close()
	var size [4]byte
	for {
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return
		}
		b := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(c, b); err != nil {
			return
		}
		s.seen.Add(1)
		// Header v2: key, version, correlation ID, client ID, tags.
		key, version := int16(binary.BigEndian.Uint16(b)), int16(binary.BigEndian.Uint16(b[2:]))
		corr := int32(binary.BigEndian.Uint32(b[4:]))
		idLen := int(int16(binary.BigEndian.Uint16(b[8:])))
		s.ids.Store(string(b[10:10+max(idLen, 0)]), true)
		rest := b[10+max(idLen, 0)+1:]
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Version = version
		if key != req.Key() || req.ReadFrom(rest) != nil {
			s.t.Errorf("server: bad request: key %d version %d", key, version)
			return
		}
		code, ok := int16(0), true
		if s.answer != nil {
			code, ok = s.answer(req)
		}
		if !ok {
			return
		}
		time.Sleep(s.delay)
		resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
		resp.Version = version
		resp.ErrorCode, resp.MemberID, resp.MemberEpoch = code, req.MemberID, req.MemberEpoch
		out := frame(corr, resp.AppendTo(nil))
		if s.split {
			if _, err := c.Write(out[:len(out)/2]); err != nil {
				return
			}
			time.Sleep(200 * time.Microsecond)
			out = out[len(out)/2:]
		}
		if _, err := c.Write(out); err != nil {
			return
		}
	}
}

// dial opens a raw sender of n connections to s, closed with the test.
func (s *hbServer) dial(n int) *rawSender {
	rs, err := newRawSender(s.ln.Addr().String(), n, 0)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(rs.close)
	return rs
}

// rawMembers is n steady members at epoch 3, spread over the sender's
// connections by index, and their round-robin pick.
func rawMembers(n int) ([]*member, func() *member) {
	ms := make([]*member, n)
	for i := range ms {
		ms[i] = &member{idx: i, group: "g", id: fmt.Sprintf("m%d", i), epoch: 3}
	}
	var next int
	return ms, func() *member {
		for {
			m := ms[next%len(ms)]
			next++
			if m.mu.TryLock() {
				return m
			}
		}
	}
}

func TestRawSenderEvenPace(t *testing.T) {
	s := newHBServer(t)
	s.split = true
	rs := s.dial(3)
	ms, pick := rawMembers(12)
	const rate, d = 2000.0, 300 * time.Millisecond
	r := rs.load(context.Background(), rate, d, paceEven, 8, pick)
	if r.err != nil {
		t.Fatal(r.err)
	}
	// Never more than the window asks; every request sent answered and
	// matched (a mismatch is r.err).
	if n := len(r.lat); n == 0 || n > int(rate*d.Seconds())+1 || int64(n) != s.seen.Load() || len(r.dues) != n {
		t.Fatalf("%d answers, %d dues, server saw %d; want 1..%d, all alike", n, len(r.dues), s.seen.Load(), int(rate*d.Seconds())+1)
	}
	if r.errs != 0 || r.changed != 0 {
		t.Errorf("steady answers counted %d errors, %d changed", r.errs, r.changed)
	}
	// The kgo connections' client ID: another would update every member
	// and bump its group's epoch.
	s.ids.Range(func(id, _ any) bool {
		if id != clientID {
			t.Errorf("request with client ID %q, want %q", id, clientID)
		}
		return true
	})
	step := time.Duration(float64(time.Second) / rate)
	for i := 1; i < len(r.dues); i++ {
		if g := r.dues[i].Sub(r.dues[i-1]); g < step-time.Microsecond || g > step+time.Microsecond {
			t.Fatalf("due %d is %v after the one before, want %v", i, g, step)
		}
		if r.rels[i].Before(r.dues[i]) {
			t.Fatalf("request %d left %v before its due time", i, r.dues[i].Sub(r.rels[i]))
		}
	}
	for _, m := range ms {
		if !m.mu.TryLock() {
			t.Fatalf("member %s still locked after the window", m.id)
		}
		if m.epoch != 3 {
			t.Errorf("member %s at epoch %d, want 3", m.id, m.epoch)
		}
	}
}

// A slow server: at most limit requests in flight, the due ones wait for
// a slot (their latency counting from their due time), and the answers in
// flight at the window's end are waited for.
func TestRawSenderLimitAndDrain(t *testing.T) {
	s := newHBServer(t)
	s.delay = 20 * time.Millisecond
	rs := s.dial(1)
	_, pick := rawMembers(4)
	r := rs.load(context.Background(), 1000, 100*time.Millisecond, paceEven, 2, pick)
	if r.err != nil {
		t.Fatal(r.err)
	}
	// The first answer takes 20 ms: before it, only the 2 slots' worth
	// left.
	early := 0
	for _, rel := range r.rels {
		if rel.Before(r.rels[0].Add(19 * time.Millisecond)) {
			early++
		}
	}
	if early > 2 {
		t.Errorf("%d requests left before the first answer could come, limit 2", early)
	}
	if int64(len(r.lat)) != s.seen.Load() || len(r.lat) == 0 {
		t.Fatalf("%d answers recorded, server saw %d", len(r.lat), s.seen.Load())
	}
	// One connection answered in order, 20 ms each: the last answer came
	// at least 20 ms after the window's end; latency counts from the due
	// time, so the queueing shows.
	var worst time.Duration
	for _, l := range r.lat {
		worst = max(worst, l)
	}
	if worst < 40*time.Millisecond {
		t.Errorf("worst latency %v with 2 slots at 20 ms an answer and 1,000/s due", worst)
	}
}

func TestRawSenderErrorAnswer(t *testing.T) {
	s := newHBServer(t)
	var fenced atomic.Bool
	s.answer = func(req *kmsg.StreamsGroupHeartbeatRequest) (int16, bool) {
		if req.MemberID == "m1" && fenced.CompareAndSwap(false, true) {
			return kerr.FencedMemberEpoch.Code, true
		}
		return 0, true
	}
	rs := s.dial(2)
	ms, pick := rawMembers(4)
	r := rs.load(context.Background(), 200, 100*time.Millisecond, paceTick, 4, pick)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.errs != 1 || r.changed < 1 {
		t.Errorf("one fenced answer counted as %d errors, %d changed", r.errs, r.changed)
	}
	// Fenced: the member rejoins with epoch 0 (and answers it back,
	// steady, at 0), as the Streams client does.
	if ms[1].epoch != 0 || !strings.Contains(ms[1].lastErr, "FENCED_MEMBER_EPOCH") {
		t.Errorf("fenced member at epoch %d, last error %q", ms[1].epoch, ms[1].lastErr)
	}
}

func TestRawSenderServerCloses(t *testing.T) {
	s := newHBServer(t)
	s.answer = func(*kmsg.StreamsGroupHeartbeatRequest) (int16, bool) { return 0, s.seen.Load() < 5 }
	rs := s.dial(1)
	_, pick := rawMembers(4)
	r := rs.load(context.Background(), 1000, time.Second, paceEven, 4, pick)
	// The read sees the end of the stream, or a write the reset.
	if r.err == nil {
		t.Fatalf("load over a connection the server closed: %v", r.err)
	}
}

func TestRawSenderNoServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, err := newRawSender(addr, 1, 0); err == nil || !strings.Contains(err.Error(), addr) {
		t.Fatalf("newRawSender to a closed port: %v", err)
	}
}

// A server that stops reading for a while: the requests the sockets do
// not take wait in the sender (polled for room) and go out in order
// once it reads again; every one is answered and matched.
func TestRawSenderSocketFull(t *testing.T) {
	s := newHBServer(t)
	var paused atomic.Bool
	s.answer = func(*kmsg.StreamsGroupHeartbeatRequest) (int16, bool) {
		if paused.CompareAndSwap(false, true) {
			time.Sleep(300 * time.Millisecond)
		}
		return 0, true
	}
	rs := s.dial(1)
	// Small buffers: 300 ms of requests at 20,000/s (about 400 KB) do
	// not fit in them.
	if err := unix.SetsockoptInt(rs.conns[0].fd, unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
		t.Fatal(err)
	}
	ms, pick := rawMembers(8000)
	r := rs.load(context.Background(), 20000, 400*time.Millisecond, paceEven, len(ms), pick)
	if r.err != nil {
		t.Fatal(r.err)
	}
	if len(r.lat) == 0 || int64(len(r.lat)) != s.seen.Load() || len(r.lat) != len(r.dues) {
		t.Fatalf("%d answers, %d sent, server saw %d", len(r.lat), len(r.dues), s.seen.Load())
	}
	if rs.conns[0].polling || len(rs.conns[0].out) != 0 {
		t.Errorf("after the window: polling %v, %d bytes held", rs.conns[0].polling, len(rs.conns[0].out))
	}
}
