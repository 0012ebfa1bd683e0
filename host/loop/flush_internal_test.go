package loop

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/wire"
)

// TestFlushBeforeWaiting: the answers a connection holds (wire.Flush)
// are written before a group request waits for its answer — a JoinGroup
// waiting for its group's initial rebalance — and not for a request
// answered in place (a heartbeat of an unknown group), whose answer may
// then wait with them for one write.
func TestFlushBeforeWaiting(t *testing.T) {
	l, err := newLoop(context.Background(), nativeDeps(t, assign.Builtins["sticky"].Native), time.Now)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Shutdown(context.Background()) })
	handle := func(ctx context.Context, body kmsg.Request, flushed *atomic.Int32) (kmsg.Response, error) {
		ctx = wire.WithFlush(ctx, func() { flushed.Add(1) })
		return l.Handle(ctx, &wire.Request{Key: body.Key(), Version: body.GetVersion(), Body: body})
	}

	// The partition may be busy for a moment (its load, a sweep of end
	// offsets): then the heartbeat waits for a worker and flushes. Most
	// are answered in place.
	var flushed atomic.Int32
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version, hb.Group, hb.MemberID = 4, "nobody", "m"
	inPlace := 0
	for range 50 {
		flushed.Store(0)
		resp, err := handle(context.Background(), hb, &flushed)
		if err != nil || resp.(*kmsg.HeartbeatResponse).ErrorCode != kerr.UnknownMemberID.Code {
			t.Fatalf("heartbeat of an unknown group: %+v, %v", resp, err)
		}
		if flushed.Load() == 0 {
			inPlace++
		}
	}
	if inPlace == 0 {
		t.Fatal("every heartbeat of an unknown group flushed: none was answered in place")
	}

	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.ProtocolType = 9, "g", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 30000, 30000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	resp, err := handle(context.Background(), join, &flushed)
	if err != nil || resp.(*kmsg.JoinGroupResponse).ErrorCode != kerr.MemberIDRequired.Code {
		t.Fatalf("first join: %+v, %v", resp, err)
	}
	join.MemberID = resp.(*kmsg.JoinGroupResponse).MemberID
	flushed.Store(0)
	ctx, cancel := context.WithCancel(context.Background())
	answered := make(chan error, 1)
	go func() {
		_, err := handle(ctx, join, &flushed)
		answered <- err
	}()
	deadline := time.Now().Add(2 * time.Second) // within the group's 3 s initial rebalance delay
	for flushed.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	select {
	case err := <-answered:
		t.Fatalf("the join was answered (%v) before its rebalance", err)
	default:
	}
	if flushed.Load() == 0 {
		t.Fatal("a join waiting for its rebalance did not flush the connection's held answers first")
	}
	cancel()
	<-answered
}
