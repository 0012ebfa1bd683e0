package core

import (
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
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
	c.setStreamsGroupConfig("g", StreamsGroupOverrides{NumStandbyReplicas: &two, AssignorName: &name})
	if got := c.streamsConfig("g"); got.NumStandbyReplicas != 2 || got.AssignorName != "balanced" || got.SessionTimeoutMs != 45000 {
		t.Fatalf("override not applied over defaults: %+v", got)
	}
	if got := c.streamsConfig("other"); got.NumStandbyReplicas != 0 || got.AssignorName != "sticky" {
		t.Fatalf("override leaked to another group: %+v", got)
	}
}

// TestClassicGroupConfig: per-group classic settings (SetClassicGroupConfig)
// decide JoinGroup's session-timeout bounds and group.max.size for that
// group only; other groups keep the broker defaults.
func TestClassicGroupConfig(t *testing.T) {
	c, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	minSession, maxSize, zero := int32(20000), int32(1), int32(0)
	o := ClassicGroupOverrides{MinSessionTimeoutMs: &minSession, MaxSize: &maxSize, InitialRebalanceDelayMs: &zero}
	if err := o.Validate(c.cfg.Classic); err != nil {
		t.Fatal(err)
	}
	c.setClassicGroupConfig("tight", o)
	join := func(group, member string, session int32) int16 {
		t.Helper()
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version, req.Group, req.MemberID, req.ProtocolType = 9, group, member, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = session, 30000
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name = "range"
		req.Protocols = append(req.Protocols, p)
		out := c.joinGroup(0, 1, ClientInfo{ClientID: "c"}, req)
		c.Commit()
		if len(out.Responses) != 1 {
			t.Fatalf("join %s: %d responses", group, len(out.Responses))
		}
		return out.Responses[0].Msg.(*kmsg.JoinGroupResponse).ErrorCode
	}
	if code := join("tight", "", 10000); code != kerr.InvalidSessionTimeout.Code {
		t.Fatalf("session 10000 under the group's minimum 20000: error %d, want INVALID_SESSION_TIMEOUT", code)
	}
	if code := join("other", "", 10000); code != kerr.MemberIDRequired.Code {
		t.Fatalf("another group keeps the broker minimum 6000: error %d, want MEMBER_ID_REQUIRED", code)
	}
	if got := c.classicConfig("tight"); got.MaxSize != 1 || got.MaxSessionTimeoutMs != DefaultClassicConfig().MaxSessionTimeoutMs {
		t.Fatalf("effective classic config: %+v", got)
	}
	bad := int32(5000)
	if err := (ClassicGroupOverrides{MaxSessionTimeoutMs: &bad}).Validate(c.cfg.Classic); err == nil ||
		!strings.Contains(err.Error(), "group.max.session.timeout.ms") {
		t.Fatalf("max session 5000 below the broker minimum 6000: err %v, want one naming the key", err)
	}
}
