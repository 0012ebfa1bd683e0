package wire

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// throttle is what startThrottling's group coordinator throttles group
// "flood" for.
const throttle = 400 * time.Millisecond

// throttling is startThrottling's listener and what its group
// coordinator saw: when each member's heartbeats were served, and
// whether the last came on a shared connection (Request.SharedConn).
type throttling struct {
	addr   string
	mu     sync.Mutex
	served map[string][]time.Time
	shared map[string]bool
}

// startThrottling starts a listener with quota q whose group coordinator
// answers heartbeats, those of group "flood" with a throttle.
func startThrottling(t *testing.T, q GroupQuota) *throttling {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	th := &throttling{addr: ln.Addr().String(), served: map[string][]time.Time{}, shared: map[string]bool{}}
	s := NewServer(ln, Config{
		Table: NewTable(kafka44),
		Quota: q,
		Group: func(_ context.Context, req *Request) (kmsg.Response, error) {
			hb := req.Body.(*kmsg.HeartbeatRequest)
			th.mu.Lock()
			th.served[hb.MemberID] = append(th.served[hb.MemberID], time.Now())
			th.shared[hb.MemberID] = req.SharedConn
			th.mu.Unlock()
			resp := hb.ResponseKind().(*kmsg.HeartbeatResponse)
			if hb.Group == "flood" {
				resp.ThrottleMillis = int32(throttle.Milliseconds())
			}
			return resp, nil
		},
	})
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	return th
}

// groupHeartbeat is a heartbeat of member of group.
func groupHeartbeat(group, member string) *kmsg.HeartbeatRequest {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Group, r.MemberID = group, member
	return r
}

// TestThrottledConnectionMuted: after a group response with
// throttle_time_ms the connection's next request is not read until that
// time has passed, while other connections are served meanwhile.
func TestThrottledConnectionMuted(t *testing.T) {
	th := startThrottling(t, nil)
	mu, served := &th.mu, th.served
	flood, canary := dial(t, th.addr), dial(t, th.addr)
	first := groupHeartbeat("flood", "a")
	flood.send(first, 4, 1)
	flood.send(groupHeartbeat("flood", "b"), 4, 2) // pipelined behind the throttled one
	if _, resp := flood.recv(first); resp.(*kmsg.HeartbeatResponse).ThrottleMillis != int32(throttle.Milliseconds()) {
		t.Fatalf("flood response: %+v", resp)
	}
	answered := time.Now()
	for i := 0; i < 3; i++ {
		req := groupHeartbeat("canary", "c")
		canary.send(req, 4, int16(i))
		if _, resp := canary.recv(req); resp.(*kmsg.HeartbeatResponse).ThrottleMillis != 0 {
			t.Fatalf("canary throttled: %+v", resp)
		}
	}
	mu.Lock()
	early := len(served["b"])
	mu.Unlock()
	if early != 0 && time.Since(answered) < throttle {
		t.Fatal("the throttled connection's next request was read while it was muted")
	}
	flood.recv(groupHeartbeat("flood", "b"))
	mu.Lock()
	defer mu.Unlock()
	if gap := served["b"][0].Sub(served["a"][0]); gap < throttle {
		t.Fatalf("next request read %v after the throttled one, want at least %v", gap, throttle)
	}
	if len(served["c"]) != 3 {
		t.Fatalf("canary served %d times, want 3", len(served["c"]))
	}
}

// noQuota is a GroupQuota that holds no group: the listener still looks
// at each group request's group.
type noQuota struct{}

func (noQuota) GroupThrottle(string) time.Duration { return 0 }

// TestSharedConnectionNotMuted: a throttled answer on a connection that
// carries requests of several groups goes out without its throttle, and
// the connection's next request, another group's, is read at once; on a
// connection of the throttled group alone the throttle stays and mutes it.
// The group coordinator is told which requests came on a shared
// connection (Request.SharedConn), so it does not hold them back either.
func TestSharedConnectionNotMuted(t *testing.T) {
	th := startThrottling(t, noQuota{})
	mu, served := &th.mu, th.served
	shared, alone := dial(t, th.addr), dial(t, th.addr)
	first := groupHeartbeat("canary", "c0")
	shared.send(first, 4, 1)
	shared.recv(first)
	flood := groupHeartbeat("flood", "f")
	shared.send(flood, 4, 2)
	shared.send(groupHeartbeat("canary", "c1"), 4, 3) // pipelined behind the flood's
	if _, resp := shared.recv(flood); resp.(*kmsg.HeartbeatResponse).ThrottleMillis != 0 {
		t.Fatalf("shared connection: the flood's answer carries a throttle: %+v", resp)
	}
	shared.recv(groupHeartbeat("canary", "c1"))
	own := groupHeartbeat("flood", "g")
	alone.send(own, 4, 1)
	alone.send(groupHeartbeat("flood", "h"), 4, 2)
	if _, resp := alone.recv(own); resp.(*kmsg.HeartbeatResponse).ThrottleMillis != int32(throttle.Milliseconds()) {
		t.Fatalf("the flood's own connection: answer %+v, want its throttle", resp)
	}
	alone.recv(groupHeartbeat("flood", "h"))
	mu.Lock()
	defer mu.Unlock()
	if gap := served["c1"][0].Sub(served["f"][0]); gap >= throttle {
		t.Errorf("shared connection muted: the next request read %v after the throttled one", gap)
	}
	if gap := served["h"][0].Sub(served["g"][0]); gap < throttle {
		t.Errorf("the flood's own connection read its next request %v after the throttled one, want at least %v", gap, throttle)
	}
	if !th.shared["f"] || th.shared["g"] || th.shared["c0"] {
		t.Errorf("Request.SharedConn: %v, want true for f only (the first request of a connection is no one else's yet)", th.shared)
	}
}

func TestGroupsSeen(t *testing.T) {
	var g groupsSeen
	for _, group := range []string{"a", "a", "a"} {
		g.note(group)
	}
	if g.shared() {
		t.Fatal("one group's requests: shared")
	}
	g.note("b")
	if !g.shared() {
		t.Fatal("a request of another group followed: not shared")
	}
	g.mixedAt = time.Now().Add(-sharedFor)
	g.note("b")
	if g.shared() {
		t.Fatalf("only b for %v: still shared", sharedFor)
	}
}

// TestGroupsSeenSharedNow: a request's answer is taken once and kept
// until the next request; a request whose group differs from the last
// one is shared at once, without another look at the clock.
func TestGroupsSeenSharedNow(t *testing.T) {
	var g groupsSeen
	g.next()
	g.note("a")
	if g.sharedNow() {
		t.Fatal("the first group's request: shared")
	}
	g.next()
	g.note("b")
	if !g.sharedNow() || g.mixedAt.IsZero() {
		t.Fatalf("a request of another group: sharedNow %v, mixedAt %v", g.sharedNow(), g.mixedAt)
	}
	// The window ends while the request is served: its answer stands
	// (the gates and the throttle see what screen saw) ...
	g.mixedAt = time.Now().Add(-sharedFor)
	if !g.sharedNow() {
		t.Fatal("the request's answer changed while it was served")
	}
	// ... and the next request looks again.
	g.next()
	g.note("b")
	if g.sharedNow() {
		t.Fatalf("the next request after %v of b alone: still shared", sharedFor)
	}
}
