package host_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConsumerGroupConfigsAtRuntime: Kafka's consumer-group configs
// consumer.session.timeout.ms and consumer.heartbeat.interval.ms are
// described with their defaults (or the file's value), altered with
// IncrementalAlterConfigs within Kafka 4.4's broker bounds, and the next
// heartbeat of that group, and of no other, answers the altered interval.
// Out-of-bounds values and the KIP-1263 keys coordhost does not serve get
// INVALID_CONFIG naming them, as Kafka's bounds do. A file override
// matching a group that did not exist at start reaches its first
// heartbeat.
func TestConsumerGroupConfigsAtRuntime(t *testing.T) {
	yaml := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(yaml, []byte("groups:\n  overrides:\n    - match: \"slowbeat-*\"\n      consumer.heartbeat.interval.ms: 6000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startLoopHost(t, "", "--config="+yaml, "--groups.defaults.consumer.session.timeout.ms=30000")
	ctx := timeout(t)
	kc := newClient(t, srv.KafkaAddr())
	if err := createTopic(ctx, kc, "ccfg-in", 2); err != nil {
		t.Fatal(err)
	}
	cl := &coordinator{cl: kc}
	wantConfig(t, ctx, cl, "ccfg", "consumer.heartbeat.interval.ms", "5000", kmsg.ConfigSourceDefaultConfig)
	wantConfig(t, ctx, cl, "ccfg", "consumer.session.timeout.ms", "30000", kmsg.ConfigSourceStaticBrokerConfig)
	interval := func(group, member string) int32 {
		t.Helper()
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.SetVersion(1)
		req.Group, req.MemberID, req.RebalanceTimeoutMillis = group, member, 10000
		req.SubscribedTopicNames, req.Topics = []string{"ccfg-in"}, []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("heartbeat of %s: %v %v", group, err, resp)
		}
		return resp.HeartbeatIntervalMillis
	}
	if got := interval("ccfg", "m1"); got != 5000 {
		t.Fatalf("default interval %d", got)
	}
	if got := interval("slowbeat-1", "m1"); got != 6000 {
		t.Fatalf("interval of a group the file overrides %d, want 6000", got)
	}
	mustAlter(t, ctx, cl, "ccfg", setOp("consumer.heartbeat.interval.ms", "8000"), setOp("consumer.session.timeout.ms", "50000"))
	wantConfig(t, ctx, cl, "ccfg", "consumer.heartbeat.interval.ms", "8000", kmsg.ConfigSourceGroupConfig)
	wantConfig(t, ctx, cl, "ccfg", "consumer.session.timeout.ms", "50000", kmsg.ConfigSourceGroupConfig)
	if got := interval("ccfg", "m2"); got != 8000 {
		t.Fatalf("interval after the alter %d, want 8000", got)
	}
	if got := interval("ccfg-other", "m1"); got != 5000 {
		t.Fatalf("another group's interval %d, want 5000", got)
	}
	for _, bad := range []struct{ key, value, msg string }{
		{"consumer.session.timeout.ms", "30000", "must be in the range 45000 to 60000 inclusive (Kafka's group.consumer.min/max.session.timeout.ms)"},
		{"consumer.heartbeat.interval.ms", "4000", "must be in the range 5000 to 15000 inclusive"},
		{"consumer.assignment.interval.ms", "15001", "must be in the range 0 to 15000 inclusive"},
		{"consumer.assignor.offload.enable", "true", "consumer.assignor.offload.enable is not supported"},
	} {
		rs, err := alterGroup(ctx, cl, false, []string{"ccfg"}, setOp(bad.key, bad.value))
		if err != nil {
			t.Fatal(err)
		}
		if rs[0].ErrorCode != kerr.InvalidConfig.Code || !strings.Contains(deref(rs[0].ErrorMessage), bad.msg) {
			t.Errorf("%s=%s: %v %q, want INVALID_CONFIG containing %q", bad.key, bad.value, kerr.ErrorForCode(rs[0].ErrorCode), deref(rs[0].ErrorMessage), bad.msg)
		}
	}
	wantConfig(t, ctx, cl, "ccfg", "consumer.heartbeat.interval.ms", "8000", kmsg.ConfigSourceGroupConfig)
}
