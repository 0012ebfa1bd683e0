package loop

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/assign"
)

// TestAssignorTimeoutFromGroupConfig: the bound on a group's plugin calls
// is its streams.assignor.timeout.ms from the config file's layers, and
// the key's default (30 s) without per-group configuration.
func TestAssignorTimeoutFromGroupConfig(t *testing.T) {
	if got := (&Loop{}).assignorTimeout("g"); got != 30*time.Second {
		t.Fatalf("without per-group configuration: %v, want 30s", got)
	}
	l := loopWithGroupsYAML(t, "groups:\n  defaults:\n    streams.assignor.timeout.ms: 5000\n  overrides:\n    - match: \"slow-*\"\n      streams.assignor.timeout.ms: 120000\n")
	for group, want := range map[string]time.Duration{"orders": 5 * time.Second, "slow-1": 2 * time.Minute} {
		if got := l.assignorTimeout(group); got != want {
			t.Errorf("group %s: %v, want %v", group, got, want)
		}
	}
}

// TestAssignorRunCountsTowardsQuota: an assignor run is the group's work
// though it runs off the partition: a group whose run took 300 ms (over
// its 5 % quota, 50 ms a second) has its next heartbeat answered with
// throttle_time_ms, while another group on the same partition is not
// throttled.
func TestAssignorRunCountsTowardsQuota(t *testing.T) {
	ran := make(chan struct{}, 16)
	slow := func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
		time.Sleep(300 * time.Millisecond)
		defer func() { ran <- struct{}{} }()
		return assign.Builtins["sticky"].Native(req)
	}
	cfg := core.DefaultConfig()
	cfg.Streams.InitialRebalanceDelayMs, cfg.Streams.AssignmentIntervalMs, cfg.AssignorWaitMs = 0, 0, 0
	c, err := core.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Step(time.Now().UnixMilli(), core.Topics{Topics: []core.TopicMetadata{{Name: "in", ID: [16]byte{1}, Partitions: 3}}})
	c.Commit()
	asg, err := assign.NewNative(slog.New(slog.DiscardHandler), map[string]assign.Native{"sticky": slow})
	if err != nil {
		t.Fatal(err)
	}
	l, err := New(Deps{Core: c, Assignors: asg, GroupQuotaPercent: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Shutdown(context.Background())
	heartbeat := func(group string, epoch int32) *kmsg.StreamsGroupHeartbeatResponse {
		req := streamsJoin(group, "m", "in")
		if epoch != 0 {
			body := req.Body.(*kmsg.StreamsGroupHeartbeatRequest)
			body.MemberEpoch, body.Topology = epoch, nil
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		resp, err := l.Handle(ctx, req)
		if err != nil || resp.(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode != 0 {
			t.Fatalf("heartbeat of %s: %v %+v", group, err, resp)
		}
		return resp.(*kmsg.StreamsGroupHeartbeatResponse)
	}
	joined := heartbeat("slow", 0)
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
		if resp = heartbeat("slow", joined.MemberEpoch); resp.ThrottleMillis > 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if resp.ThrottleMillis <= 0 {
		t.Fatal("a group whose assignor run took 300 ms was not throttled")
	}
	if other := heartbeat("other", 0); other.ThrottleMillis != 0 {
		t.Fatalf("another group on the partition was throttled %d ms", other.ThrottleMillis)
	}
}
