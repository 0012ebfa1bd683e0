package config

import (
	"strings"
	"testing"
)

// TestDynamicLayerPrecedence: runtime values sit above every file layer,
// key by key, and are shown with the dynamic source.
func TestDynamicLayerPrecedence(t *testing.T) {
	c, err := load(t, []string{"--config", "../../docs/coordhost.example.yaml", "--groups.defaults.group.max.size=7"})
	if err != nil {
		t.Fatal(err)
	}
	dyn := map[string]string{"streams.num.standby.replicas": "2", "group.max.size": "3"}
	g := c.Groups.ForWith("orders-payments", dyn)
	if g.StreamsNumStandbyReplicas != 2 || g.MaxSize != 3 || g.StreamsSessionTimeoutMs != 60000 {
		t.Fatalf("effective config: %+v (want dynamic standbys 2 and max size 3 over the file, the file's exact-id session 60000)", g)
	}
	src := map[string]string{}
	for _, s := range c.Groups.ExplainWith("orders-payments", dyn) {
		src[s.Key] = s.Source
	}
	if src["streams.num.standby.replicas"] != DynamicSource || src["group.max.size"] != DynamicSource ||
		src["streams.session.timeout.ms"] != `override "orders-payments"` || src["streams.num.warmup.replicas"] != `override "orders-*"` {
		t.Fatalf("sources: %v", src)
	}
	if c.Groups.For("orders-payments").StreamsNumStandbyReplicas != 1 {
		t.Fatal("the file layers changed")
	}
}

func TestParseDynamic(t *testing.T) {
	for _, tc := range []struct{ key, val, want, err string }{
		{"streams.num.standby.replicas", " 1", "1", ""},
		{"streams.session.timeout.ms", "50000", "50000", ""},
		{"streams.assignor.name", "ha", "ha", ""},
		{"group.min.session.timeout.ms", "1000", "1000", ""},
		{"streams.num.standby.replicas", "3", "", "streams.num.standby.replicas = 3: must be less than or equal to 2"},
		{"streams.session.timeout.ms", "1000", "", "streams.session.timeout.ms = 1000: must be in the range 45000 to 60000"},
		{"streams.task.offset.interval.ms", "100", "", "must be greater than or equal to 15000"},
		{"streams.num.standby.replicas", "x", "", `streams.num.standby.replicas = "x": not an integer`},
		{"streams.num.warmup.replicas", "-1", "", "streams.num.warmup.replicas"},
		{"streams.migration.policy", "sideways", "", "must be one of"},
		{"streams.assignor.name", "", "", "streams.assignor.name: must not be empty"},
		{"no.such.key", "1", "", "unknown group config name: no.such.key"},
		{"consumer.session.timeout.ms", "50000", "50000", ""},
		{"consumer.heartbeat.interval.ms", "15000", "15000", ""},
		{"consumer.session.timeout.ms", "30000", "", "consumer.session.timeout.ms = 30000: must be in the range 45000 to 60000 inclusive (Kafka's group.consumer.min/max.session.timeout.ms)"},
		{"consumer.heartbeat.interval.ms", "16000", "", "must be in the range 5000 to 15000"},
		{"consumer.assignor.offload.enable", "true", "", "consumer.assignor.offload.enable is not supported"},
		{"share.record.lock.duration.ms", "30000", "", "share groups"},
		{"streams.assignor.offload.enable", "true", "", "streams.assignor.offload.enable"},
	} {
		got, err := ParseDynamic(tc.key, tc.val)
		if tc.err == "" {
			if err != nil || got != tc.want {
				t.Errorf("%s=%q: %q, %v; want %q", tc.key, tc.val, got, err, tc.want)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s=%q: err %v, want one containing %q", tc.key, tc.val, err, tc.err)
		}
	}
}

// TestCheckDynamicCrossKey: the cross-key rules hold on the effective
// configuration, file layers included.
func TestCheckDynamicCrossKey(t *testing.T) {
	c, err := load(t, []string{"--groups.defaults.group.min.session.timeout.ms=1000"})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Groups.CheckDynamic("g", map[string]string{"streams.heartbeat.interval.ms": "15000", "streams.session.timeout.ms": "45000"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Groups.CheckDynamic("g", map[string]string{"consumer.heartbeat.interval.ms": "15000", "consumer.session.timeout.ms": "45000"}); err != nil {
		t.Fatal(err)
	}
	err = c.Groups.CheckDynamic("g", map[string]string{"group.max.session.timeout.ms": "500"})
	if err == nil || !strings.Contains(err.Error(), "group.min.session.timeout.ms = 1000 exceeds group.max.session.timeout.ms = 500") {
		t.Fatalf("max below the file's min: %v", err)
	}
	// The waiting members' interval and every member's in a roll: 0
	// (off) or at least the floor, in the file and at run time alike.
	for _, key := range []string{"streams.unreleased.heartbeat.interval.ms", "streams.rebalance.heartbeat.interval.ms"} {
		for v, ok := range map[string]bool{"0": true, "19": false, "1": false, "20": true, "50": true} {
			err := c.Groups.CheckDynamic("g", map[string]string{key: v})
			if (err == nil) != ok || err != nil && !strings.Contains(err.Error(), "must be 0 (off) or at least 20") {
				t.Errorf("%s=%s: %v", key, v, err)
			}
		}
		if _, err := load(t, []string{"--groups.defaults." + key + "=10"}); err == nil || !strings.Contains(err.Error(), key+" = 10") {
			t.Errorf("%s: a file value below the floor: %v", key, err)
		}
	}
	info, ok := GroupKey("streams.acceptable.recovery.lag")
	if !ok || info.Type != "LONG" || !info.Kafka {
		t.Fatalf("key info: %+v", info)
	}
	if info, _ := GroupKey("group.max.size"); info.Kafka || info.Type != "INT" {
		t.Fatalf("group.max.size is a coordhost per-group key: %+v", info)
	}
}
