package wire

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestThrottledConnectionMuted: after a group response with
// throttle_time_ms the connection's next request is not read until that
// time has passed, while other connections are served meanwhile.
func TestThrottledConnectionMuted(t *testing.T) {
	const throttle = 400 * time.Millisecond
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	served := map[string][]time.Time{}
	s := NewServer(ln, Config{
		Table: NewTable(kafka44),
		Group: func(_ context.Context, req *Request) (kmsg.Response, error) {
			hb := req.Body.(*kmsg.HeartbeatRequest)
			mu.Lock()
			served[hb.MemberID] = append(served[hb.MemberID], time.Now())
			mu.Unlock()
			resp := hb.ResponseKind().(*kmsg.HeartbeatResponse)
			if hb.Group == "flood" {
				resp.ThrottleMillis = int32(throttle.Milliseconds())
			}
			return resp, nil
		},
	})
	t.Cleanup(func() { s.Shutdown(context.Background()) })
	hb := func(group, member string) *kmsg.HeartbeatRequest {
		r := kmsg.NewPtrHeartbeatRequest()
		r.Group, r.MemberID = group, member
		return r
	}
	flood, canary := dial(t, ln.Addr().String()), dial(t, ln.Addr().String())
	first := hb("flood", "a")
	flood.send(first, 4, 1)
	flood.send(hb("flood", "b"), 4, 2) // pipelined behind the throttled one
	if _, resp := flood.recv(first); resp.(*kmsg.HeartbeatResponse).ThrottleMillis != int32(throttle.Milliseconds()) {
		t.Fatalf("flood response: %+v", resp)
	}
	answered := time.Now()
	for i := 0; i < 3; i++ {
		req := hb("canary", "c")
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
	flood.recv(hb("flood", "b"))
	mu.Lock()
	defer mu.Unlock()
	if gap := served["b"][0].Sub(served["a"][0]); gap < throttle {
		t.Fatalf("next request read %v after the throttled one, want at least %v", gap, throttle)
	}
	if len(served["c"]) != 3 {
		t.Fatalf("canary served %d times, want 3", len(served["c"]))
	}
}
