package host_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/loop"
	"github.com/coordhost/coordhost/host/runtime"
)

// TestFloodingGroupThrottled: a group whose members keep joining with a
// topology of 20,000 subtopologies uses more than its quota of its
// partition's step time and its responses carry throttle_time_ms; a
// canary group on the same partition, heartbeating steadily, is never
// throttled.
func TestFloodingGroupThrottled(t *testing.T) {
	l, err := loop.New(loop.Deps{NewCore: newFloodCore, Partitions: 4, Workers: 2, GroupQuotaPercent: 5, MaxThrottle: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Shutdown(context.Background())
	canary := "canary-0"
	for i := 0; runtime.PartitionFor(canary, 4) != runtime.PartitionFor("flood", 4); i++ {
		canary = fmt.Sprintf("canary-%d", i)
	}
	resp, err := handleHB(l, joinRequest(canary, "m"))
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("canary join: %v %+v", err, resp)
	}
	epoch := resp.MemberEpoch
	var throttled, maxThrottle atomic.Int32
	stop := joinFlood(hugeTopologyJoin, func(_ int, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
		resp, err := handleHB(l, req)
		if err != nil {
			return nil, err
		}
		if ms := resp.ThrottleMillis; ms > 0 {
			throttled.Add(1)
			if ms > maxThrottle.Load() {
				maxThrottle.Store(ms)
			}
			time.Sleep(time.Duration(ms) * time.Millisecond) // as Kafka's clients do
		}
		return resp, nil
	})
	deadline := time.Now().Add(20 * time.Second)
	beats := 0
	for ; beats < 100 || throttled.Load() == 0 && time.Now().Before(deadline); beats++ {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, canary, "m", epoch
		resp, err := handleHB(l, req)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("canary heartbeat: %v %+v", err, resp)
		}
		if resp.ThrottleMillis != 0 {
			t.Fatalf("canary heartbeat %d throttled %d ms", beats, resp.ThrottleMillis)
		}
		epoch = resp.MemberEpoch
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if throttled.Load() == 0 {
		t.Fatal("the flooding group was never throttled")
	}
	if m := maxThrottle.Load(); m > 200 {
		t.Fatalf("throttle %d ms over the 200 ms cap", m)
	}
	t.Logf("%d flood responses throttled (longest %d ms); %d canary heartbeats, none throttled", throttled.Load(), maxThrottle.Load(), beats)
}
