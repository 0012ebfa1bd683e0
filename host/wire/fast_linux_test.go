package wire

import (
	"context"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fastServer is a listener with a poller: Begin answers heartbeats at
// once, but those of group "wait", which it leaves to a Wait of 20 ms;
// Group answers everything the connections' goroutines serve. Both count
// what they answered.
type fastServer struct {
	s                      *Server
	addr                   string
	begun, waited, grouped atomic.Int64
	panics                 atomic.Bool
}

func startFastServer(t *testing.T, cfg Config) *fastServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fastServer{addr: ln.Addr().String()}
	answer := func(req *Request) kmsg.Response {
		resp := req.Body.ResponseKind()
		resp.SetVersion(req.Version)
		return resp
	}
	cfg.Table = NewTable(kafka44)
	cfg.Group = func(_ context.Context, req *Request) (kmsg.Response, error) {
		f.grouped.Add(1)
		return answer(req), nil
	}
	cfg.Begin = func(_ context.Context, req *Request) (kmsg.Response, Wait, error) {
		if f.panics.Load() {
			panic("a bug in a group handler")
		}
		if GroupOf(req.Body) == "wait" {
			return nil, func(context.Context) (kmsg.Response, error) {
				time.Sleep(20 * time.Millisecond)
				f.waited.Add(1)
				return answer(req), nil
			}, nil
		}
		f.begun.Add(1)
		return answer(req), nil, nil
	}
	if runtime.GOMAXPROCS(0) < 2 {
		t.Skip("a process on one P has no poller (TestNoPollerOnOneP)")
	}
	cfg.Poller = PollerOn // whatever the test's rate
	f.s = NewServer(ln, cfg)
	if f.s.poll == nil {
		t.Fatal("the listener has no poller")
	}
	t.Cleanup(func() { f.s.poll.force.Store(0) })
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		f.s.Shutdown(ctx)
	})
	return f
}

func heartbeat(group string) *kmsg.ConsumerGroupHeartbeatRequest {
	hb := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	hb.SetVersion(1)
	hb.Group, hb.MemberID = group, "m"
	return hb
}

// Heartbeats sent one at a time on an idle connection are answered by
// the poller's goroutine (Begin), none by the connection's.
func TestParkedHeartbeatsServedByPoller(t *testing.T) {
	f := startFastServer(t, Config{})
	c := dial(t, f.addr)
	before := ReadPollerStats()
	for i := range 50 {
		hb := heartbeat("g")
		c.send(hb, 1, int16(i))
		if corr, _ := c.recv(hb); corr != int32(i) {
			t.Fatalf("answer %d has correlation id %d", i, corr)
		}
	}
	if f.begun.Load() != 50 || f.grouped.Load() != 0 {
		t.Fatalf("begun %d, by the goroutine %d; want 50, 0", f.begun.Load(), f.grouped.Load())
	}
	if st := ReadPollerStats(); !st.Engaged || st.Served-before.Served < 49 { // the first is the goroutine's
		t.Fatalf("poller stats %+v, before %+v", st, before)
	}
}

// Pipelined requests of every kind are answered in order whoever serves
// them: heartbeats answered at once, heartbeats whose answer waits (the
// connection's goroutine waits for it), and requests only the goroutine
// serves.
func TestParkedPipelinedInOrder(t *testing.T) {
	f := startFastServer(t, Config{})
	c := dial(t, f.addr)
	handed := ReadPollerStats().HandedBack
	fm := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test"))
	var buf []byte
	var reqs []kmsg.Request
	for i := range 40 {
		var r kmsg.Request
		switch i % 4 {
		case 0, 2:
			r = heartbeat("g")
		case 1:
			r = heartbeat("wait")
		default:
			jg := kmsg.NewPtrJoinGroupRequest()
			jg.SetVersion(9)
			jg.Group = "g"
			r = jg
		}
		buf = append(buf, fm.AppendRequest(nil, r, int32(i))...) // it sizes the frame from dst[0]
		reqs = append(reqs, r)
	}
	for _, part := range [][]byte{buf[:len(buf)/3], buf[len(buf)/3:]} { // a frame split between writes
		if _, err := c.c.Write(part); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Millisecond)
	}
	for i, r := range reqs {
		if corr, _ := c.recv(r); corr != int32(i) {
			t.Fatalf("answer %d has correlation id %d", i, corr)
		}
	}
	// The poller serves the first heartbeat and hands the second one's
	// wait back; the goroutine then serves what it was handed.
	if f.begun.Load()+f.waited.Load()+f.grouped.Load() != 40 || f.begun.Load() < 1 || f.waited.Load() < 1 {
		t.Fatalf("begun %d, waited %d, by the goroutine %d", f.begun.Load(), f.waited.Load(), f.grouped.Load())
	}
	if n := ReadPollerStats().HandedBack - handed; n < 1 {
		t.Fatalf("handed back %d times", n)
	}
}

// A heartbeat sent in pieces is answered once whole, and one larger than
// a parked connection's buffer is read and answered by the connection's
// goroutine.
func TestParkedPartialAndLargeFrames(t *testing.T) {
	f := startFastServer(t, Config{})
	c := dial(t, f.addr)
	hb := heartbeat("g")
	frame := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test")).AppendRequest(nil, hb, 7)
	for _, b := range frame {
		c.c.Write([]byte{b})
		time.Sleep(time.Millisecond)
	}
	if corr, _ := c.recv(hb); corr != 7 {
		t.Fatalf("correlation id %d", corr)
	}
	big := heartbeat("g")
	big.SubscribedTopicNames = []string{strings.Repeat("t", 3*fastBuffer)}
	c.send(big, 1, 8)
	if corr, _ := c.recv(big); corr != 8 {
		t.Fatalf("correlation id %d", corr)
	}
	if f.begun.Load() != 1 || f.grouped.Load() != 1 {
		t.Fatalf("begun %d, by the goroutine %d; want 1, 1", f.begun.Load(), f.grouped.Load())
	}
	hb2 := heartbeat("g") // and the connection parks again
	c.send(hb2, 1, 9)
	if corr, _ := c.recv(hb2); corr != 9 || f.begun.Load() != 2 {
		t.Fatalf("correlation id %d, begun %d", corr, f.begun.Load())
	}
}

// A group over its quota is left to the connection's goroutine, which
// holds its requests until the throttle ends.
func TestParkedQuotaLeftToGoroutine(t *testing.T) {
	var throttle atomic.Int64
	throttle.Store(int64(100 * time.Millisecond))
	f := startFastServer(t, Config{Quota: quotaFunc(func(string) time.Duration { return time.Duration(throttle.Load()) })})
	c := dial(t, f.addr)
	go func() {
		time.Sleep(150 * time.Millisecond)
		throttle.Store(0)
	}()
	start := time.Now()
	hb := heartbeat("g")
	c.send(hb, 1, 1)
	if corr, _ := c.recv(hb); corr != 1 {
		t.Fatalf("correlation id %d", corr)
	}
	if waited := time.Since(start); waited < 100*time.Millisecond || f.grouped.Load() != 1 || f.begun.Load() != 0 {
		t.Fatalf("answered after %v; begun %d, by the goroutine %d", waited, f.begun.Load(), f.grouped.Load())
	}
	c.send(hb, 1, 2) // under its quota again: the poller answers
	if corr, _ := c.recv(hb); corr != 2 || f.begun.Load() != 1 {
		t.Fatalf("correlation id %d, begun %d", corr, f.begun.Load())
	}
}

type quotaFunc func(string) time.Duration

func (q quotaFunc) GroupThrottle(g string) time.Duration { return q(g) }

// A parked connection idle for the idle timeout is closed, as any other.
func TestParkedIdleTimeout(t *testing.T) {
	f := startFastServer(t, Config{IdleTimeout: 200 * time.Millisecond})
	c := dial(t, f.addr)
	hb := heartbeat("g")
	c.send(hb, 1, 1)
	c.recv(hb)
	start := time.Now()
	c.expectClosed()
	if waited := time.Since(start); waited < 150*time.Millisecond {
		t.Fatalf("closed after %v", waited)
	}
}

// Shutdown closes parked connections at once, and one whose answer is
// being waited for gets it first.
func TestParkedShutdown(t *testing.T) {
	f := startFastServer(t, Config{})
	var idle []*client
	for range 5 {
		c := dial(t, f.addr)
		hb := heartbeat("g")
		c.send(hb, 1, 1)
		c.recv(hb)
		idle = append(idle, c)
	}
	busy := dial(t, f.addr)
	w := heartbeat("wait")
	busy.send(w, 1, 2)
	time.Sleep(5 * time.Millisecond) // its Wait has begun
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("Shutdown took %v", took)
	}
	if corr, _ := busy.recv(w); corr != 2 {
		t.Fatalf("correlation id %d", corr)
	}
	busy.expectClosed()
	for _, c := range idle {
		c.expectClosed()
	}
}

// A panic in the handler while the poller serves closes that connection
// only: the process and other connections go on.
func TestParkedPanicClosesOneConnection(t *testing.T) {
	f := startFastServer(t, Config{Limits: NewLimits(1<<20, 100, 100)})
	other := dial(t, f.addr)
	c := dial(t, f.addr)
	f.panics.Store(true)
	c.send(heartbeat("g"), 1, 1)
	c.expectClosed()
	f.panics.Store(false)
	hb := heartbeat("g")
	other.send(hb, 1, 2)
	if corr, _ := other.recv(hb); corr != 2 {
		t.Fatalf("correlation id %d", corr)
	}
	if n := f.s.cfg.Limits.inFlightBytes(); n != 0 {
		t.Fatalf("%d request bytes still granted after the panic", n)
	}
}

// Many connections at once: every answer comes, in order on each.
func TestParkedManyConnections(t *testing.T) {
	f := startFastServer(t, Config{})
	var wg sync.WaitGroup
	for range 16 {
		c := dial(t, f.addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				hb := heartbeat("g")
				if i%20 == 0 {
					hb = heartbeat("wait")
				}
				c.send(hb, 1, int16(i))
				if corr, _ := c.recv(hb); corr != int32(i) {
					t.Errorf("answer %d has correlation id %d", i, corr)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// On one P there is no poller: its goroutine would keep the only P while
// it waits in epoll_wait. Heartbeats are then served by their
// connections' goroutines.
func TestNoPollerOnOneP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var grouped atomic.Int64
	s := NewServer(ln, Config{
		Table: NewTable(kafka44), Poller: PollerOn,
		Group: func(_ context.Context, req *Request) (kmsg.Response, error) {
			grouped.Add(1)
			return ErrorResponse(req.Body, 0), nil
		},
		Begin: func(context.Context, *Request) (kmsg.Response, Wait, error) {
			t.Error("Begin called without a poller")
			return nil, nil, nil
		},
	})
	defer s.Shutdown(context.Background())
	if s.poll != nil {
		t.Fatal("a poller on one P")
	}
	c := dial(t, ln.Addr().String())
	hb := heartbeat("g")
	c.send(hb, 1, 3)
	if corr, _ := c.recv(hb); corr != 3 || grouped.Load() != 1 {
		t.Fatalf("correlation id %d, served by the goroutine %d", corr, grouped.Load())
	}
}

// The poller engages at pollerOn heartbeats a second and disengages below
// pollerOff, window by window.
func TestPollerEngagement(t *testing.T) {
	p := &poller{}
	t0 := time.Unix(1000, 0)
	p.rateAt.Store(t0.UnixNano())
	beat := func(n int, over time.Duration) { // n beats evenly, the last at over
		start := t0
		for i := range n {
			t0 = start.Add(over * time.Duration(i+1) / time.Duration(n))
			p.note(t0)
		}
	}
	// per100ms is n beats a second over one 100 ms window.
	per100ms := func(rate int) { beat(rate/10, 100*time.Millisecond) }
	per100ms(pollerOn - 100)
	if p.engaged.Load() {
		t.Fatal("engaged below pollerOn")
	}
	per100ms(pollerOn + 100)
	if !p.engaged.Load() {
		t.Fatal("not engaged above pollerOn")
	}
	per100ms(pollerOff + 100) // stays
	if !p.engaged.Load() {
		t.Fatal("disengaged above pollerOff")
	}
	per100ms(pollerOff - 100)
	if p.engaged.Load() {
		t.Fatal("engaged below pollerOff")
	}
	beat(2, 10*time.Second) // a long quiet gap
	if p.engaged.Load() {
		t.Fatal("engaged after a quiet gap")
	}

	// Engaged, then not keeping up: off, and off for pollerCooldown
	// whatever the rate.
	rate := 2 * pollerOn
	per100ms(rate)
	if !p.engaged.Load() {
		t.Fatalf("not engaged at %d/s", rate)
	}
	p.saturated.Store(true)
	per100ms(rate)
	p.saturated.Store(false)
	if p.engaged.Load() {
		t.Fatal("engaged while saturated")
	}
	beat(rate/10*40, 4*time.Second)
	if p.engaged.Load() {
		t.Fatal("engaged within the cooldown")
	}
	beat(rate/10*20, 2*time.Second)
	if !p.engaged.Load() {
		t.Fatal("not engaged after the cooldown")
	}

	// The rate times a recent cost decides.
	p.engaged.Store(false)
	p.cost.Store(int64(10 * time.Microsecond))
	p.costAt.Store(t0.UnixNano())
	beat(3000, 100*time.Millisecond) // 30,000/s: 0.3 at 10 µs
	if !p.engaged.Load() {
		t.Fatal("not engaged where one goroutine keeps up")
	}
	p.engaged.Store(false)
	beat(6000, 100*time.Millisecond) // 60,000/s: 0.6 at 10 µs
	if p.engaged.Load() {
		t.Fatal("engaged where one goroutine would not keep up")
	}
	secs := int(pollerCostFor/time.Second) - 1 // 60,000/s up to a second before the cost is old
	beat(60000*secs, time.Duration(secs)*time.Second)
	if p.engaged.Load() {
		t.Fatal("engaged where one goroutine would not keep up, its cost still recent")
	}
	// A cost the poller has not measured again for pollerCostFor no
	// longer keeps it off: it was taken under other conditions.
	beat(60000*2, 2*time.Second)
	if !p.engaged.Load() {
		t.Fatal("an old cost kept the poller off")
	}
}

// A slice is measured by its thread's CPU time: one spent waiting, as a
// preempted thread does, adds wall time and little CPU; one spent
// running adds its CPU.
func TestPollerSliceCPU(t *testing.T) {
	runtime.LockOSThread() // the slice's thread stays this one
	defer runtime.UnlockOSThread()
	p := &poller{}
	s := p.startSlice(time.Now())
	time.Sleep(20 * time.Millisecond)
	p.endSlice(s, time.Now())
	if p.wall < float64(20*time.Millisecond) || p.busy > float64(5*time.Millisecond) {
		t.Fatalf("a slice spent waiting: %v on the CPU over %v", time.Duration(p.busy), time.Duration(p.wall))
	}
	busy := p.busy
	s = p.startSlice(time.Now())
	// Spun until the thread ran 20 ms, not for 20 ms of wall time: on a
	// busy machine the thread may wait for a CPU meanwhile (a slice of
	// 20 ms of wall time once held 8 ms on the CPU).
	for start, _ := threadCPU(); ; {
		if now, _ := threadCPU(); now-start >= 20*time.Millisecond {
			break
		}
	}
	p.endSlice(s, time.Now())
	if got := p.busy - busy; got < float64(10*time.Millisecond) {
		t.Fatalf("a slice spent running 20 ms on the CPU added %v", time.Duration(got))
	}
}

// A slice spent running all along may show a little more CPU time than
// wall time (each clock is read after the wall clock): it counts as all
// busy. Much more, or a change of thread, is not measured.
func TestPollerSliceSkew(t *testing.T) {
	p := &poller{}
	at := time.Unix(1000, 0)
	s := slice{at: at, tid: 7, cpu: time.Second}
	end := at.Add(pollerSlice)
	p.endSliceWith(s, end, s.cpu+pollerSlice+5*time.Microsecond, 7)
	if p.wall != float64(pollerSlice) || p.busy != float64(pollerSlice) {
		t.Fatalf("a running slice with a few µs of skew: %v busy over %v, want all of %v", time.Duration(p.busy), time.Duration(p.wall), pollerSlice)
	}
	for _, bad := range []struct {
		cpu time.Duration
		tid int
	}{
		{s.cpu + pollerSlice + 2*pollerSkew, 7}, // more CPU than the skew explains
		{s.cpu + pollerSlice/2, 8},              // another thread
		{s.cpu + pollerSlice/2, 0},              // moved while read
		{s.cpu - time.Microsecond, 7},           // a clock going back
	} {
		p.endSliceWith(s, end, bad.cpu, bad.tid)
		if p.wall != float64(pollerSlice) {
			t.Fatalf("measured a slice with CPU %v on thread %d", bad.cpu-s.cpu, bad.tid)
		}
	}
}

// Saturation and cost are over the recent slices: a slice's spike
// decides neither; a sustained share over pollerBusy saturates the
// poller until it falls below pollerIdle.
func TestPollerSaturation(t *testing.T) {
	p := &poller{}
	end := time.Unix(1000, 0)
	slices := func(n int, share float64, answered int) {
		for range n {
			end = end.Add(pollerSlice)
			p.measure(end, time.Duration(share*float64(pollerSlice)), pollerSlice, answered)
		}
	}
	slices(50, 0.3, 100) // 24 µs an edge
	if p.saturated.Load() {
		t.Fatal("saturated at 30 %")
	}
	if c := time.Duration(p.cost.Load()); c < 23*time.Microsecond || c > 25*time.Microsecond {
		t.Fatalf("cost %v, want 24 µs", c)
	}
	if at := time.Unix(0, p.costAt.Load()); !at.Equal(end) {
		t.Fatalf("cost measured at %v, want the last slice's end %v", at, end)
	}
	slices(1, 1, 25) // the collector took this one: 320 µs an edge
	if p.saturated.Load() {
		t.Fatal("saturated by one slice")
	}
	if c := time.Duration(p.cost.Load()); c > 48*time.Microsecond {
		t.Fatalf("cost %v after one slice's spike", c)
	}
	slices(25, 0.9, 300) // 200 ms at 90 %
	if !p.saturated.Load() || pollStats.saturations.Load() == 0 {
		t.Fatal("not saturated at 90 %")
	}
	slices(50, 0.5, 100)
	if !p.saturated.Load() {
		t.Fatal("no longer saturated above pollerIdle")
	}
	slices(50, 0.2, 100)
	if p.saturated.Load() {
		t.Fatal("still saturated at 20 %")
	}
}

// A connection moves into the poller between requests once it is
// engaged, and back into Go's poller once it is not: heartbeats are
// served by Begin only meanwhile, every answer in order.
func TestConnMovesBetweenPollers(t *testing.T) {
	f := startFastServer(t, Config{})
	f.s.poll.force.Store(forceOff)
	f.s.poll.engaged.Store(false)
	c := dial(t, f.addr)
	corr := int16(0)
	ask := func() {
		t.Helper()
		corr++
		hb := heartbeat("g")
		c.send(hb, 1, corr)
		if got, _ := c.recv(hb); got != int32(corr) {
			t.Fatalf("correlation id %d, want %d", got, corr)
		}
	}
	ask()
	ask()
	if f.begun.Load() != 0 || f.grouped.Load() != 2 {
		t.Fatalf("disengaged: begun %d, by the goroutine %d", f.begun.Load(), f.grouped.Load())
	}
	f.s.poll.force.Store(forceOn)
	ask() // noted: engaged; the connection moves after this answer
	ask()
	ask()
	if f.begun.Load() < 2 {
		t.Fatalf("engaged: begun %d, by the goroutine %d", f.begun.Load(), f.grouped.Load())
	}
	f.s.poll.force.Store(forceOff)
	begun := f.begun.Load()
	ask() // handed back on its edge, served by the goroutine, which moves it back
	ask()
	ask()
	if f.begun.Load() > begun+1 {
		t.Fatalf("disengaged again: begun %d more", f.begun.Load()-begun)
	}
	f.s.poll.mu.Lock()
	n := len(f.s.poll.conns)
	f.s.poll.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d connections still in the poller", n)
	}
}

// The poller's cost is counted per request it answers: requests
// pipelined on one readiness each count, and the cost is measured from
// them alone.
func TestPollerCostPerRequest(t *testing.T) {
	f := startFastServer(t, Config{})
	f.s.poll.cost.Store(0)
	c := dial(t, f.addr)
	fm := kmsg.NewRequestFormatter(kmsg.FormatterClientID("test"))
	corr := int32(0)
	for deadline := time.Now().Add(5 * time.Second); f.s.poll.cost.Load() == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("no cost after %d requests answered by the poller", f.begun.Load())
		}
		var buf []byte
		hb := heartbeat("g")
		for range 8 { // one write, one readiness
			buf = append(buf, fm.AppendRequest(nil, hb, corr)...) // it sizes the frame from dst[0]
			corr++
		}
		if _, err := c.c.Write(buf); err != nil {
			t.Fatal(err)
		}
		for i := corr - 8; i < corr; i++ {
			if got, _ := c.recv(hb); got != i {
				t.Fatalf("correlation id %d, want %d", got, i)
			}
		}
	}
	if st := ReadPollerStats(); st.RequestCPU <= 0 || st.RequestCPU > time.Second {
		t.Fatalf("cost per request %v", st.RequestCPU)
	}
}
