package config

import (
	"testing"
	"time"
)

// TestThrottleCapBelowSessionTimeouts: the throttle cap is
// runtime.group.max.throttle.ms, lowered to a quarter of the smallest
// session timeout groups.defaults or an override allows.
func TestThrottleCapBelowSessionTimeouts(t *testing.T) {
	c, err := load(t, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Kafka's defaults: the classic minimum 6 s, the new protocols 45 s.
	if c.GroupQuotaPercent != 5 || c.MaxThrottle != time.Second || c.ThrottleCap() != time.Second {
		t.Fatalf("defaults: quota %d%%, max throttle %v, cap %v", c.GroupQuotaPercent, c.MaxThrottle, c.ThrottleCap())
	}
	yaml := "runtime:\n  group:\n    max.throttle.ms: 5000\ngroups:\n  overrides:\n    - match: fast-*\n      streams.session.timeout.ms: 2000\n      streams.heartbeat.interval.ms: 500\n"
	if c, err = load(t, []string{"--config", writeYAML(t, yaml)}); err != nil {
		t.Fatal(err)
	}
	if c.MaxThrottle != 5*time.Second || c.ThrottleCap() != 500*time.Millisecond {
		t.Fatalf("override with a 2 s session: max throttle %v, cap %v, want 500ms", c.MaxThrottle, c.ThrottleCap())
	}
	if c, err = load(t, []string{"--groups.defaults.group.min.session.timeout.ms=1200"}); err != nil {
		t.Fatal(err)
	}
	if c.ThrottleCap() != 300*time.Millisecond {
		t.Fatalf("classic minimum 1.2 s: cap %v, want 300ms", c.ThrottleCap())
	}
}
