package core

import (
	"bytes"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestUnreleasedHeartbeatIntervalRule: which member is answered which
// interval. Only a member in UNRELEASED_TASKS gets the shorter
// streams.unreleased.heartbeat.interval.ms, never longer than the
// configured interval and never below the floor; with the setting off
// every member gets the configured interval, as in Kafka 4.4.
func TestUnreleasedHeartbeatIntervalRule(t *testing.T) {
	states := []memberState{memberStable, memberUnrevokedTasks, memberUnreleasedTasks, memberUnknown}
	cases := []struct {
		name                 string
		configured, shorter  int32
		wantWaiting, wantAll int32
	}{
		{"off", 250, 0, 250, 250},
		{"on", 250, 50, 50, 250},
		{"on, Kafka's default interval", 5000, 20, 20, 5000},
		{"configured interval already shorter", 40, 50, 40, 40},
		{"equal", 50, 50, 50, 50},
		{"below the floor (not accepted by Validate)", 250, 5, MinUnreleasedHeartbeatIntervalMs, 250},
	}
	for _, tc := range cases {
		cfg := StreamsConfig{HeartbeatIntervalMs: tc.configured, UnreleasedHeartbeatIntervalMs: tc.shorter}
		for _, st := range states {
			want := tc.wantAll
			if st == memberUnreleasedTasks {
				want = tc.wantWaiting
			}
			if got := heartbeatInterval(cfg, &streamsMember{state: st}); got != want {
				t.Errorf("%s: member %s: interval %d, want %d", tc.name, st, got, want)
			}
		}
	}
}

// withheldFlow drives second_member_withheld's flow (m1 owns four tasks,
// m2 joins, m1 revokes late, then releases; m2 is given 0_2 and 0_3) and
// returns every heartbeat answer with the state its member was left in.
func withheldFlow(t *testing.T, cfg Config, groupConfig *StreamsGroupOverrides) ([]*kmsg.StreamsGroupHeartbeatResponse, []memberState) {
	t.Helper()
	h := newHarness(t, cfg)
	if groupConfig != nil {
		h.c.setStreamsGroupConfig("g", *groupConfig)
	}
	h.lastTopics = parseTopics("in 4")
	h.finish(h.c.updateTopics(h.now, h.lastTopics), false)
	h.topologies["default"] = parseTopology(0, "sub 0 sources=in")
	var out []*kmsg.StreamsGroupHeartbeatResponse
	var states []memberState
	step := func(at int64, args map[string]string, assign bool) {
		h.now = at
		h.responses = nil
		h.heartbeat(args)
		if assign {
			h.answerRuns("g", "ref", false)
		}
		for _, r := range h.responses {
			hb := r.(*kmsg.StreamsGroupHeartbeatResponse)
			out = append(out, hb)
			states = append(states, h.c.groups["g"].(*streamsGroup).members[hb.MemberID].state)
		}
	}
	step(1000, map[string]string{"member": "m1"}, true)
	step(2000, map[string]string{"member": "m2"}, true)
	step(2100, map[string]string{"member": "m1"}, false)
	step(2150, map[string]string{"member": "m2"}, false)
	step(2200, map[string]string{"member": "m1", "active": "0_0,0_1,0_2,0_3"}, false)
	step(2250, map[string]string{"member": "m2"}, false)
	step(2300, map[string]string{"member": "m1", "active": "0_0,0_1"}, false)
	step(2350, map[string]string{"member": "m2"}, false)
	step(2400, map[string]string{"member": "m2"}, false)
	return out, states
}

func scenarioDefaults() Config {
	cfg := DefaultConfig()
	cfg.Streams.InitialRebalanceDelayMs = 0
	cfg.Streams.AssignmentIntervalMs = 0
	return cfg
}

// TestUnreleasedHeartbeatIntervalAnswers: with the setting on, the waiting
// member's answers carry the shorter interval until it is given its
// target, and nothing else in any answer changes; with it off (the
// default, or 0 set for the group) every answer is byte for byte the one
// Kafka's rule gives: the configured interval, whatever the state.
func TestUnreleasedHeartbeatIntervalAnswers(t *testing.T) {
	base := scenarioDefaults()
	kafka, kafkaStates := withheldFlow(t, base, nil)
	zero := int32(0)
	off, _ := withheldFlow(t, base, &StreamsGroupOverrides{UnreleasedHeartbeatIntervalMs: &zero})
	onCfg := base
	onCfg.Streams.UnreleasedHeartbeatIntervalMs = 50
	on, onStates := withheldFlow(t, onCfg, nil)
	fifty := int32(50)
	perGroup, _ := withheldFlow(t, base, &StreamsGroupOverrides{UnreleasedHeartbeatIntervalMs: &fifty})
	if len(kafka) != 9 || len(off) != len(kafka) || len(on) != len(kafka) || len(perGroup) != len(kafka) {
		t.Fatalf("answers: %d / %d / %d / %d, want 9 each", len(kafka), len(off), len(on), len(perGroup))
	}
	waiting := 0
	for i := range kafka {
		k := kafka[i].AppendTo(nil)
		if kafka[i].HeartbeatIntervalMillis != base.Streams.HeartbeatIntervalMs {
			t.Errorf("answer %d (off): interval %d, want the configured %d", i, kafka[i].HeartbeatIntervalMillis, base.Streams.HeartbeatIntervalMs)
		}
		if o := off[i].AppendTo(nil); !bytes.Equal(o, k) {
			t.Errorf("answer %d: 0 set for the group changed the bytes of Kafka's answer", i)
		}
		if kafkaStates[i] != onStates[i] {
			t.Fatalf("answer %d: member state %s with the setting, %s without", i, onStates[i], kafkaStates[i])
		}
		want := base.Streams.HeartbeatIntervalMs
		if onStates[i] == memberUnreleasedTasks {
			want = 50
			waiting++
		}
		for name, a := range map[string]*kmsg.StreamsGroupHeartbeatResponse{"broker-wide": on[i], "per group": perGroup[i]} {
			if a.HeartbeatIntervalMillis != want {
				t.Errorf("answer %d to %s (%s, %s): interval %d, want %d", i, a.MemberID, onStates[i], name, a.HeartbeatIntervalMillis, want)
			}
			c := *a
			c.HeartbeatIntervalMillis = base.Streams.HeartbeatIntervalMs
			if !bytes.Equal(c.AppendTo(nil), k) {
				t.Errorf("answer %d (%s): differs from Kafka's in more than the interval", i, name)
			}
		}
	}
	// m2's join answer and its two heartbeats while m1 holds 0_2 and 0_3.
	if waiting != 3 {
		t.Errorf("%d answers to a waiting member, want 3", waiting)
	}
	if last := on[len(on)-1]; last.MemberID != "m2" || onStates[len(on)-1] != memberStable || last.HeartbeatIntervalMillis != base.Streams.HeartbeatIntervalMs {
		t.Errorf("m2 reconciled: %s in %s, interval %d; want the configured interval back", last.MemberID, onStates[len(on)-1], last.HeartbeatIntervalMillis)
	}
}

// TestUnreleasedHeartbeatIntervalValidation: 0 (off) or at least the
// floor, broker-wide and per group, for the waiting members' interval and
// for every member's in a roll (streams_roll.go).
func TestUnreleasedHeartbeatIntervalValidation(t *testing.T) {
	keys := []struct {
		key   string
		floor int32
		set   func(*StreamsConfig, *StreamsGroupOverrides, int32)
	}{
		{"streams.unreleased.heartbeat.interval.ms", MinUnreleasedHeartbeatIntervalMs, func(c *StreamsConfig, o *StreamsGroupOverrides, v int32) {
			c.UnreleasedHeartbeatIntervalMs, o.UnreleasedHeartbeatIntervalMs = v, &v
		}},
		{"streams.rebalance.heartbeat.interval.ms", MinRebalanceHeartbeatIntervalMs, func(c *StreamsConfig, o *StreamsGroupOverrides, v int32) {
			c.RebalanceHeartbeatIntervalMs, o.RebalanceHeartbeatIntervalMs = v, &v
		}},
	}
	for _, k := range keys {
		for v, ok := range map[int32]bool{0: true, 1: false, k.floor - 1: false, k.floor: true, 50: true, -1: false} {
			cfg, o := DefaultConfig(), StreamsGroupOverrides{}
			k.set(&cfg.Streams, &o, v)
			if err := cfg.Validate(); (err == nil) != ok || err != nil && !strings.Contains(err.Error(), k.key) {
				t.Errorf("%s broker-wide %d: %v", k.key, v, err)
			}
			if err := o.Validate(); (err == nil) != ok || err != nil && !strings.Contains(err.Error(), k.key) {
				t.Errorf("%s per group %d: %v", k.key, v, err)
			}
		}
	}
}
