package core

import (
	"strings"
	"testing"
)

// TestConsumerGroupConfig: a group's consumer.session.timeout.ms and
// consumer.heartbeat.interval.ms apply to that group only: its heartbeats
// answer its interval, its members' sessions last its timeout (armed at
// each heartbeat and after a fail-over), while another group keeps the
// broker-wide settings. A change applies from the next heartbeat, as Kafka
// reads group configs when it arms a session.
func TestConsumerGroupConfig(t *testing.T) {
	h := newCHarness(t, consumerTestConfig())
	session, interval := int32(60000), int32(7000)
	h.c.setConsumerGroupConfig("slow", ConsumerGroupOverrides{SessionTimeoutMs: &session, HeartbeatIntervalMs: &interval})
	if r := h.hb(joinReq("slow", "m", "a")); r.HeartbeatIntervalMillis != 7000 {
		t.Fatalf("slow group's interval %d, want 7000", r.HeartbeatIntervalMillis)
	}
	if r := h.hb(joinReq("fast", "m", "b")); r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("other group's interval %d, want the default 5000", r.HeartbeatIntervalMillis)
	}
	// Past the default 45 s only the other group's member is fenced.
	h.tick(50000)
	if h.group("fast").members["m"] != nil {
		t.Fatal("the default group's member outlived 45 s")
	}
	if h.group("slow").members["m"] == nil {
		t.Fatal("the slow group's member was fenced before its 60 s session")
	}
	h.checkReplay()
	// After a fail-over the loaded group's sessions use its setting too.
	fresh, err := replayLog(h.cfg, h.log)
	if err != nil {
		t.Fatal(err)
	}
	fresh.setConsumerGroupConfig("slow", ConsumerGroupOverrides{SessionTimeoutMs: &session})
	fresh.Loaded(h.now)
	fresh.Commit()
	fresh.tick(h.now + 50000)
	fresh.Commit()
	if fresh.groups["slow"].(*consumerGroup).members["m"] == nil {
		t.Fatal("a loaded member was fenced before the group's 60 s session")
	}
	fresh.tick(h.now + 60001)
	fresh.Commit()
	if fresh.groups["slow"].(*consumerGroup).members["m"] != nil {
		t.Fatal("a loaded member outlived the group's 60 s session")
	}
	// Back to the defaults: the next heartbeat answers 5000.
	h.c.setConsumerGroupConfig("slow", ConsumerGroupOverrides{})
	m := h.group("slow").members["m"]
	if r := h.hb(ackReq("slow", "m", m.epoch, toResp(m.assigned.set()))); r.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("interval after the override was removed: %d", r.HeartbeatIntervalMillis)
	}
}

func TestConsumerGroupOverridesValidate(t *testing.T) {
	i := func(v int32) *int32 { return &v }
	broker := DefaultConsumerConfig()
	for _, tc := range []struct {
		o    ConsumerGroupOverrides
		want string
	}{
		{ConsumerGroupOverrides{}, ""},
		{ConsumerGroupOverrides{SessionTimeoutMs: i(50000), HeartbeatIntervalMs: i(15000)}, ""},
		{ConsumerGroupOverrides{SessionTimeoutMs: i(0)}, "consumer.session.timeout.ms: 0 must be > 0"},
		{ConsumerGroupOverrides{HeartbeatIntervalMs: i(-1)}, "consumer.heartbeat.interval.ms: -1 must be > 0"},
		// the interval against the broker's session timeout it falls back to
		{ConsumerGroupOverrides{HeartbeatIntervalMs: i(45000)}, "must be less than consumer.session.timeout.ms 45000"},
		{ConsumerGroupOverrides{SessionTimeoutMs: i(4000)}, "consumer.heartbeat.interval.ms: 5000 must be less than"},
	} {
		err := tc.o.Validate(broker)
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%+v: %v, want %q", tc.o, err, tc.want)
		}
	}
}

// TestConsumerGroupAssignmentInterval: consumer.assignment.interval.ms is
// per group. With 1000 ms, a second member joining right after the first
// target waits for the interval (the group epoch runs ahead of the
// assignment epoch until a heartbeat after it); with the group's 0, every
// change computes a target at once, whatever the broker-wide setting.
func TestConsumerGroupAssignmentInterval(t *testing.T) {
	cfg := consumerTestConfig()
	cfg.Consumer.AssignmentIntervalMs = 0 // Kafka's default, 1 s
	h := newCHarness(t, cfg)
	h.now = 1_000_000 // a target's timestamp 0 reads as "never computed"
	h.setTopics(TopicMetadata{Name: "a", ID: topicID("a"), Partitions: 4})
	zero := int32(0)
	h.c.setConsumerGroupConfig("now", ConsumerGroupOverrides{AssignmentIntervalMs: &zero})
	for _, g := range []string{"batched", "now"} {
		h.hb(joinReq(g, "m1", "a"))
		h.now += 10
		h.hb(joinReq(g, "m2", "a"))
	}
	if g := h.group("batched"); g.assignmentEpoch >= g.groupEpoch {
		t.Fatalf("batched group: assignment epoch %d caught up with group epoch %d within the interval", g.assignmentEpoch, g.groupEpoch)
	}
	if g := h.group("now"); g.assignmentEpoch != g.groupEpoch {
		t.Fatalf("group with interval 0: assignment epoch %d behind group epoch %d", g.assignmentEpoch, g.groupEpoch)
	}
	// After the interval, the batched group's next heartbeat computes.
	h.now += 1000
	m := h.group("batched").members["m1"]
	h.hb(ackReq("batched", "m1", m.epoch, toResp(m.assigned.set())))
	if g := h.group("batched"); g.assignmentEpoch != g.groupEpoch {
		t.Fatalf("batched group after the interval: assignment epoch %d, group epoch %d", g.assignmentEpoch, g.groupEpoch)
	}
	h.checkReplay()
}
