package core

import (
	"strings"
	"testing"
)

func TestConfigValidation(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Streams.HeartbeatIntervalMs = cfg.Streams.SessionTimeoutMs
	if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), "group.streams.heartbeat.interval.ms") {
		t.Fatalf("heartbeat interval = session timeout: err %v, want one naming the key", err)
	}
	neg := int32(-1)
	if err := (StreamsGroupOverrides{NumStandbyReplicas: &neg}).Validate(); err == nil || !strings.Contains(err.Error(), "streams.num.standby.replicas") {
		t.Fatalf("negative standbys: err %v", err)
	}
	two, name := int32(2), "balanced"
	c, _ := New(DefaultConfig())
	c.SetStreamsGroupConfig("g", StreamsGroupOverrides{NumStandbyReplicas: &two, AssignorName: &name})
	if got := c.streamsConfig("g"); got.NumStandbyReplicas != 2 || got.AssignorName != "balanced" || got.SessionTimeoutMs != 45000 {
		t.Fatalf("override not applied over defaults: %+v", got)
	}
	if got := c.streamsConfig("other"); got.NumStandbyReplicas != 0 || got.AssignorName != "sticky" {
		t.Fatalf("override leaked to another group: %+v", got)
	}
}
