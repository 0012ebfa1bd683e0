package loop

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/wire"
)

// quotaLoop is a one-partition loop (nativeDeps) with a 5 % group
// quota whose sticky assignor is fn.
func quotaLoop(t testing.TB, fn assign.Native) *Loop {
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
func quotaBeat(t testing.TB, l *Loop, group string, epoch int32, decode time.Duration) *kmsg.StreamsGroupHeartbeatResponse {
	t.Helper()
	return quotaBeatWith(t, l, group, epoch, func(req *wire.Request) { req.Decode = decode })
}

// quotaBeatWith is quotaBeat with the request's costs set by set.
func quotaBeatWith(t testing.TB, l *Loop, group string, epoch int32, set func(*wire.Request)) *kmsg.StreamsGroupHeartbeatResponse {
	t.Helper()
	req := streamsJoin(group, "m", "in")
	if epoch != 0 {
		body := req.Body.(*kmsg.StreamsGroupHeartbeatRequest)
		body.MemberEpoch, body.Topology = epoch, nil
	}
	set(req)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := l.Handle(ctx, req)
	if err != nil || resp.(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode != 0 {
		t.Fatalf("heartbeat of %s: %v %+v", group, err, resp)
	}
	return resp.(*kmsg.StreamsGroupHeartbeatResponse)
}

// contend keeps a member of group "contender" heartbeating on l's
// partition from 4 goroutines until the test ends, so other groups'
// steps have its events waiting behind them: the quota throttles only a
// group whose steps delay other work (runtime's quota).
func contend(t *testing.T, l *Loop) {
	t.Helper()
	epoch := quotaBeat(t, l, "contender", 0, 0).MemberEpoch
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				req := streamsJoin("contender", "m", "in")
				body := req.Body.(*kmsg.StreamsGroupHeartbeatRequest)
				body.MemberEpoch, body.Topology = epoch, nil
				_, _ = l.Handle(ctx, req) // its answers do not matter
			}
		}()
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// beatUntilThrottled sends group's member heartbeats at epoch, each
// decoded in decode, until one is answered with a throttle or 5 s have
// passed, and returns the last answer.
func beatUntilThrottled(t *testing.T, l *Loop, group string, epoch int32, decode time.Duration) *kmsg.StreamsGroupHeartbeatResponse {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); ; {
		if resp := quotaBeat(t, l, group, epoch, decode); resp.ThrottleMillis > 0 || time.Now().After(deadline) {
			return resp
		}
		time.Sleep(time.Millisecond)
	}
}

// TestAssignorRunCountsTowardsQuota: an assignor run is the group's work
// though it runs off the partition: a group whose run took 300 ms (over
// its 5 % quota, 50 ms a second) has its heartbeat answered with
// throttle_time_ms once its steps delay another group's, while another
// group on the same partition is not throttled.
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
	contend(t, l)
	// The charge lands once the run returns, just after ran.
	if resp := beatUntilThrottled(t, l, "slow", joined.MemberEpoch, 0); resp.ThrottleMillis <= 0 {
		t.Fatal("a group whose assignor run took 300 ms was not throttled")
	}
	if other := quotaBeat(t, l, "other", 0, 0); other.ThrottleMillis != 0 {
		t.Fatalf("another group on the partition was throttled %d ms", other.ThrottleMillis)
	}
}

// TestDecodeCountsTowardsQuota: the time a request's decoding took on its
// connection (wire.Request.Decode) is the group's: heartbeats whose
// decoding took 300 ms are answered with throttle_time_ms once their steps
// delay another group's, and another group's on the same partition is
// not.
func TestDecodeCountsTowardsQuota(t *testing.T) {
	l := quotaLoop(t, assign.Builtins["sticky"].Native)
	epoch := quotaBeat(t, l, "huge", 0, 0).MemberEpoch
	contend(t, l)
	if resp := beatUntilThrottled(t, l, "huge", epoch, 300*time.Millisecond); resp.ThrottleMillis <= 0 {
		t.Fatal("a heartbeat whose decoding took 300 ms was not throttled")
	}
	if other := quotaBeat(t, l, "other", 0, time.Millisecond); other.ThrottleMillis != 0 {
		t.Fatalf("another group on the partition was throttled %d ms", other.ThrottleMillis)
	}
}

// TestWireCountsTowardsQuota: as TestDecodeCountsTowardsQuota, for the
// time its connection spent reading a request and writing the group's
// answer before it (wire.Request.Wire).
func TestWireCountsTowardsQuota(t *testing.T) {
	l := quotaLoop(t, assign.Builtins["sticky"].Native)
	epoch := quotaBeat(t, l, "chatty", 0, 0).MemberEpoch
	contend(t, l)
	wired := func(req *wire.Request) { req.Wire = 300 * time.Millisecond }
	throttled := false
	for deadline := time.Now().Add(5 * time.Second); !throttled && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		throttled = quotaBeatWith(t, l, "chatty", epoch, wired).ThrottleMillis > 0
	}
	if !throttled {
		t.Fatal("a group whose requests took 300 ms each on their connection was not throttled")
	}
	if other := quotaBeat(t, l, "other", 0, time.Millisecond); other.ThrottleMillis != 0 {
		t.Fatalf("another group on the partition was throttled %d ms", other.ThrottleMillis)
	}
}

// TestQuotaSparesGroupAlone: a group alone on its partition is not
// throttled however much it uses (the quota is work-conserving): its
// heartbeats, each decoded in 300 ms, are answered without a throttle.
func TestQuotaSparesGroupAlone(t *testing.T) {
	l := quotaLoop(t, assign.Builtins["sticky"].Native)
	epoch := quotaBeat(t, l, "big", 0, 0).MemberEpoch
	for i := range 5 {
		if resp := quotaBeat(t, l, "big", epoch, 300*time.Millisecond); resp.ThrottleMillis != 0 {
			t.Fatalf("heartbeat %d of a group alone on its partition throttled %d ms", i, resp.ThrottleMillis)
		}
	}
}
