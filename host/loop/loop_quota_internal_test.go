package loop

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/host/assign"
)

// quotaLoop is a one-partition loop (nativeDeps) with a 5 % group
// quota whose sticky assignor is fn.
func quotaLoop(t *testing.T, fn assign.Native) *Loop {
	t.Helper()
	d := nativeDeps(t, fn)
	d.GroupQuotaPercent = 5
	l, err := New(d)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Shutdown(context.Background()) })
	return l
}

// quotaBeat sends member "m" of group a heartbeat (a join at epoch 0),
// its decoding having taken decode, and returns the answer.
func quotaBeat(t *testing.T, l *Loop, group string, epoch int32, decode time.Duration) *kmsg.StreamsGroupHeartbeatResponse {
	t.Helper()
	req := streamsJoin(group, "m", "in")
	if epoch != 0 {
		body := req.Body.(*kmsg.StreamsGroupHeartbeatRequest)
		body.MemberEpoch, body.Topology = epoch, nil
	}
	req.Decode = decode
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := l.Handle(ctx, req)
	if err != nil || resp.(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode != 0 {
		t.Fatalf("heartbeat of %s: %v %+v", group, err, resp)
	}
	return resp.(*kmsg.StreamsGroupHeartbeatResponse)
}

// TestAssignorRunCountsTowardsQuota: an assignor run is the group's work
// though it runs off the partition: a group whose run took 300 ms (over
// its 5 % quota, 50 ms a second) has its next heartbeat answered with
// throttle_time_ms, while another group on the same partition is not
// throttled.
func TestAssignorRunCountsTowardsQuota(t *testing.T) {
	ran := make(chan struct{}, 16)
	l := quotaLoop(t, func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
		time.Sleep(300 * time.Millisecond)
		defer func() { ran <- struct{}{} }()
		return assign.Builtins["sticky"].Native(req)
	})
	joined := quotaBeat(t, l, "slow", 0, 0)
	if joined.ThrottleMillis != 0 {
		t.Fatalf("the join was throttled %d ms before any run", joined.ThrottleMillis)
	}
	select {
	case <-ran:
	case <-time.After(10 * time.Second):
		t.Fatal("no assignor run")
	}
	var resp *kmsg.StreamsGroupHeartbeatResponse
	for deadline := time.Now().Add(5 * time.Second); ; {
		// The charge lands once the run returns, just after ran.
		if resp = quotaBeat(t, l, "slow", joined.MemberEpoch, 0); resp.ThrottleMillis > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if resp.ThrottleMillis <= 0 {
		t.Fatal("a group whose assignor run took 300 ms was not throttled")
	}
	if other := quotaBeat(t, l, "other", 0, 0); other.ThrottleMillis != 0 {
		t.Fatalf("another group on the partition was throttled %d ms", other.ThrottleMillis)
	}
}

// TestDecodeCountsTowardsQuota: the time a request's decoding took on its
// connection (wire.Request.Decode) is the group's: a heartbeat whose
// decoding took 300 ms is answered with throttle_time_ms, and another
// group's on the same partition is not.
func TestDecodeCountsTowardsQuota(t *testing.T) {
	l := quotaLoop(t, assign.Builtins["sticky"].Native)
	if resp := quotaBeat(t, l, "huge", 0, 300*time.Millisecond); resp.ThrottleMillis <= 0 {
		t.Fatal("a heartbeat whose decoding took 300 ms was not throttled")
	}
	if other := quotaBeat(t, l, "other", 0, time.Millisecond); other.ThrottleMillis != 0 {
		t.Fatalf("another group on the partition was throttled %d ms", other.ThrottleMillis)
	}
}
