package core

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRollHeartbeatIntervalRule: which member of which group is answered
// which interval. With streams.rebalance.heartbeat.interval.ms on, every
// member of a group in a roll (a departure within the last session
// timeout, or the group Assigning or Reconciling) is answered the shorter
// interval, never below the floor or 1 ms per member and never longer
// than the configured one; a steady group, a window past its session
// timeout, or the setting off: the configured interval, as in Kafka 4.4.
func TestRollHeartbeatIntervalRule(t *testing.T) {
	const session, configured = 10000, 250
	never := int64(-1)
	cases := []struct {
		name      string
		rebalance int32 // streams.rebalance.heartbeat.interval.ms
		unrel     int32 // streams.unreleased.heartbeat.interval.ms
		state     StreamsGroupState
		departed  int64 // ms before now; never: no departure
		members   int
		member    memberState
		want      int32
	}{
		{"steady group", 50, 0, StreamsStable, never, 3, memberStable, configured},
		{"just after a leave", 50, 0, StreamsStable, 0, 3, memberStable, 50},
		{"half a session after a leave", 50, 0, StreamsStable, session / 2, 3, memberStable, 50},
		{"one session after a leave", 50, 0, StreamsStable, session, 3, memberStable, 50},
		{"past one session after a leave", 50, 0, StreamsStable, session + 1, 3, memberStable, configured},
		{"assigning", 50, 0, StreamsAssigning, never, 3, memberStable, 50},
		{"reconciling: a member revoking", 50, 0, StreamsReconciling, never, 3, memberUnrevokedTasks, 50},
		{"reconciling: another member", 50, 0, StreamsReconciling, never, 3, memberStable, 50},
		{"not ready", 50, 0, StreamsNotReady, never, 3, memberStable, configured},
		{"empty after a leave", 50, 0, StreamsEmpty, 0, 0, memberStable, 50},
		{"off, after a leave", 0, 0, StreamsStable, 0, 3, memberStable, configured},
		{"off, reconciling", 0, 0, StreamsReconciling, never, 3, memberUnrevokedTasks, configured},
		{"below the floor (not accepted by Validate)", 5, 0, StreamsStable, 0, 3, memberStable, MinRebalanceHeartbeatIntervalMs},
		{"1 ms per member: 100 members", 50, 0, StreamsReconciling, never, 100, memberStable, 100},
		{"1 ms per member: 50 members", 50, 0, StreamsReconciling, never, 50, memberStable, 50},
		{"1 ms per member: past the configured interval", 50, 0, StreamsStable, 0, 1000, memberStable, configured},
		{"configured interval already shorter", 300, 0, StreamsStable, 0, 3, memberStable, configured},
		{"both settings: the waiting member gets the shorter", 50, 20, StreamsReconciling, never, 3, memberUnreleasedTasks, 20},
		{"both settings: the others get the roll's", 50, 20, StreamsReconciling, never, 3, memberStable, 50},
		{"both settings: the waiting one's shorter than the bound", 50, 20, StreamsReconciling, never, 100, memberUnreleasedTasks, 20},
		{"only the waiting member's setting", 0, 20, StreamsReconciling, never, 3, memberStable, configured},
	}
	c, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	c.now = 100000
	for _, tc := range cases {
		cfg := StreamsConfig{SessionTimeoutMs: session, HeartbeatIntervalMs: configured,
			RebalanceHeartbeatIntervalMs: tc.rebalance, UnreleasedHeartbeatIntervalMs: tc.unrel}
		g := newStreamsGroup("g")
		for i := range tc.members {
			g.members[fmt.Sprint(i)] = &streamsMember{id: fmt.Sprint(i)}
		}
		g.state = tc.state
		if tc.departed != never {
			g.soft.departed, g.soft.lastDeparture = true, c.now-tc.departed
		}
		if got := c.answeredInterval(g, cfg, &streamsMember{state: tc.member}); got != tc.want {
			t.Errorf("%s: interval %d, want %d", tc.name, got, tc.want)
		}
	}
}

// rollAnswer is one heartbeat answer of rollFlow and what it was
// answered in.
type rollAnswer struct {
	at       int64
	phase    string
	member   string
	interval int32
	members  int // the group's members when it was answered
	state    StreamsGroupState
	bytes    []byte // the answer with the interval set to the configured one
}

// rollFlow drives a streams group of n members through a departure: all
// join and settle; one heartbeat each while steady; member m<n> departs
// (depart: "leave", "static" leave or "expire": its session times out)
// at departAt; the rest settle; then one heartbeat each at departAt +
// session/2, departAt + session (the window's last instant) and departAt
// + session + 1. It returns every answer with its phase.
func rollFlow(t *testing.T, cfg Config, o *StreamsGroupOverrides, n int, depart string) []rollAnswer {
	t.Helper()
	h := newHarness(t, cfg)
	if o != nil {
		h.c.setStreamsGroupConfig("g", *o)
	}
	h.lastTopics = parseTopics("in 12")
	h.finish(h.c.updateTopics(h.now, h.lastTopics), false)
	h.topologies["default"] = parseTopology(0, "sub 0 sources=in")
	session := int64(cfg.Streams.SessionTimeoutMs)
	var out []rollAnswer
	phase := ""
	hb := func(member string, extra map[string]string) {
		h.responses = nil
		args := map[string]string{"member": member}
		if depart == "static" {
			args["instance"] = "i-" + member
		}
		for k, v := range extra {
			args[k] = v
		}
		h.heartbeat(args)
		h.answerRuns("g", "ref", false)
		for _, r := range h.responses {
			a := r.(*kmsg.StreamsGroupHeartbeatResponse)
			if a.ErrorCode != 0 || a.MemberEpoch < 0 {
				continue // a leave's answer: no interval (Kafka's too)
			}
			c := *a
			c.HeartbeatIntervalMillis = cfg.Streams.HeartbeatIntervalMs
			out = append(out, rollAnswer{at: h.now, phase: phase, member: a.MemberID, interval: a.HeartbeatIntervalMillis,
				members: len(h.c.groups["g"].(*streamsGroup).members), state: h.c.groups["g"].(*streamsGroup).state, bytes: c.AppendTo(nil)})
		}
	}
	group := func() *streamsGroup { return h.c.groups["g"].(*streamsGroup) }
	members := make([]string, n)
	for i := range members {
		members[i] = fmt.Sprintf("m%d", i+1)
	}
	round := func(who []string, step int64) {
		h.advanceTo(h.now + step)
		for _, m := range who {
			hb(m, nil)
		}
	}
	settle := func(who []string) {
		for i := 0; group().state != StreamsStable; i++ {
			if i == 50 {
				t.Fatalf("not stable: %s", group().state)
			}
			round(who, 100)
		}
	}
	h.now = 1000
	phase = "joining"
	round(members, 0)
	settle(members)
	phase = "steady"
	round(members, 100)
	rest := members[:n-1]
	var departAt int64
	switch depart {
	case "leave", "static":
		h.advanceTo(h.now + 100)
		departAt = h.now
		args := map[string]string{"epoch": "-1"}
		if depart == "static" {
			args["epoch"] = "-2"
		}
		hb(members[n-1], args)
	case "expire":
		phase = ""
		departAt = h.now + session // its last heartbeat was this round's
		for h.now+1000 < departAt {
			round(rest, 1000)
		}
		phase = "settling" // the fence fires first, then their heartbeats
		round(rest, departAt-h.now)
		if _, ok := group().members[members[n-1]]; ok && depart == "expire" {
			t.Fatalf("%s not fenced at %d", members[n-1], h.now)
		}
	}
	phase = "settling"
	if depart == "static" {
		// It comes back within its session, as a bounced static member
		// does (its tasks waited for it); its return is no departure.
		for h.now+1000 < departAt+2000 {
			round(rest, 1000)
		}
		h.advanceTo(departAt + 2000)
		hb(members[n-1], nil)
		rest = members
	}
	settle(rest)
	for _, p := range []struct {
		name string
		at   int64
	}{{"half a session after", departAt + session/2}, {"one session after", departAt + session}, {"past one session", departAt + session + 1}} {
		// Heartbeats in between keep the sessions alive, outside the phase.
		phase = ""
		for h.now+1000 < p.at {
			round(rest, 1000)
		}
		phase = p.name
		round(rest, p.at-h.now)
	}
	return out
}

func rollDefaults() Config {
	cfg := scenarioDefaults()
	cfg.Streams.SessionTimeoutMs = 10000
	cfg.Streams.HeartbeatIntervalMs = 250
	return cfg
}

// TestRollHeartbeatIntervalAnswers: every answer of a departure flow. With
// the setting on, every member is answered the shorter interval from the
// departure (a leave, a static member's leave, a session expiry) until one
// session timeout of the group after it, and while the group settles, and
// the configured interval before and after; nothing else in any answer
// changes. The interval is never below 1 ms per member. With the setting
// off (the default, or 0 for the group), every answer is byte for byte
// Kafka's rule's: the configured interval, whatever happens.
func TestRollHeartbeatIntervalAnswers(t *testing.T) {
	base := rollDefaults()
	zero, fifty, twenty := int32(0), int32(50), int32(20)
	cases := []struct {
		name   string
		o      *StreamsGroupOverrides
		broker int32 // broker-wide setting
		n      int
		depart string
		short  int32 // the roll's setting; the configured interval with the setting off
	}{
		{"off", nil, 0, 3, "leave", 250},
		{"0 for the group", &StreamsGroupOverrides{RebalanceHeartbeatIntervalMs: &zero}, 50, 3, "leave", 250},
		{"broker-wide, leave", nil, 50, 3, "leave", 50},
		{"per group, leave", &StreamsGroupOverrides{RebalanceHeartbeatIntervalMs: &fifty}, 0, 3, "leave", 50},
		{"off, static leave", nil, 0, 3, "static", 250},
		{"off, session expiry", nil, 0, 3, "expire", 250},
		{"off, 30 members", nil, 0, 30, "leave", 250},
		{"static leave", nil, 50, 3, "static", 50},
		{"session expiry", nil, 50, 3, "expire", 50},
		{"30 members: 1 ms each", &StreamsGroupOverrides{RebalanceHeartbeatIntervalMs: &twenty}, 0, 30, "leave", 20},
	}
	kafka := map[string][]rollAnswer{}
	for _, tc := range cases {
		cfg := base
		cfg.Streams.RebalanceHeartbeatIntervalMs = tc.broker
		answers := rollFlow(t, cfg, tc.o, tc.n, tc.depart)
		key := fmt.Sprint(tc.n, tc.depart)
		if tc.short == base.Streams.HeartbeatIntervalMs && kafka[key] == nil {
			kafka[key] = answers
		}
		seen := map[string]int{}
		for _, a := range answers {
			want := base.Streams.HeartbeatIntervalMs
			switch a.phase {
			case "joining":
				// No departure yet: short while the group assigns or
				// reconciles, as it is after a join.
				if a.state != StreamsStable {
					want = min(max(tc.short, int32(a.members)), want)
				}
			case "settling", "half a session after", "one session after":
				// 1 ms per member of the group (29 after the leave of
				// 30; 1 to 30 while they join).
				want = min(max(tc.short, int32(a.members)), want)
			}
			if a.phase != "" && a.interval != want {
				t.Errorf("%s: %s @%d (%s): interval %d, want %d", tc.name, a.member, a.at, a.phase, a.interval, want)
			}
			seen[a.phase]++
		}
		for _, p := range []string{"joining", "steady", "settling", "half a session after", "one session after", "past one session"} {
			if seen[p] == 0 {
				t.Errorf("%s: no answer in phase %q", tc.name, p)
			}
		}
		if k := kafka[key]; k != nil {
			if len(k) != len(answers) {
				t.Fatalf("%s: %d answers, %d with the setting off", tc.name, len(answers), len(k))
			}
			for i := range k {
				if !bytes.Equal(k[i].bytes, answers[i].bytes) {
					t.Errorf("%s: answer %d differs from Kafka's in more than the interval", tc.name, i)
				}
			}
		}
	}
}

// TestRollHeartbeatIntervalClassicUnaffected: an online rolling upgrade
// (the same-process rule fences each classic instance as its streams
// replacement joins) with the setting on and off. Every classic answer
// (JoinGroup, SyncGroup, Heartbeat) is byte for byte the same — the classic
// protocol carries no interval —, the streams answers differ only in the
// interval, and some streams answer carries the shorter one.
func TestRollHeartbeatIntervalClassicUnaffected(t *testing.T) {
	run := func(o *StreamsGroupOverrides) []Response {
		s := newMigSim(t, 6)
		if o != nil {
			s.setGroupConfig(*o)
		}
		var got []Response
		s.seen = func(r Response) { got = append(got, r) }
		var classic []*migInst
		for i := 1; i <= 3; i++ {
			classic = append(classic, s.inst(fmt.Sprintf("c%d", i), byte(i), true))
		}
		s.settle(20)
		for i, old := range classic {
			old.alive = false
			s.inst(fmt.Sprintf("s%d", i+1), byte(i+1), false)
			s.settle(40)
		}
		return got
	}
	fifty := int32(50)
	off, on := run(nil), run(&StreamsGroupOverrides{RebalanceHeartbeatIntervalMs: &fifty})
	if len(off) != len(on) {
		t.Fatalf("%d answers with the setting on, %d off", len(on), len(off))
	}
	short, classicAnswers := 0, 0
	for i := range off {
		a, b := off[i].Msg, on[i].Msg
		if sa, ok := a.(*kmsg.StreamsGroupHeartbeatResponse); ok {
			sb := b.(*kmsg.StreamsGroupHeartbeatResponse)
			if sb.HeartbeatIntervalMillis == 50 {
				short++
			}
			c := *sb
			c.HeartbeatIntervalMillis = sa.HeartbeatIntervalMillis
			b = &c
		} else {
			classicAnswers++
		}
		if !bytes.Equal(a.AppendTo(nil), b.AppendTo(nil)) {
			t.Errorf("answer %d (%T) differs with the setting on", i, a)
		}
	}
	if short == 0 || classicAnswers == 0 {
		t.Errorf("%d streams answers with the shorter interval, %d classic answers; want some of each", short, classicAnswers)
	}
}

// TestRollHeartbeatWindowNotReplayed: the departure window is soft state.
// A coordinator that replays the log after a leave starts with no window
// open (the group Stable: the configured interval), while one that
// replays a group still reconciling answers the shorter interval, as the
// reconciliation is in the log.
func TestRollHeartbeatWindowNotReplayed(t *testing.T) {
	cfg := rollDefaults()
	cfg.Streams.RebalanceHeartbeatIntervalMs = 50
	h := newHarness(t, cfg)
	h.lastTopics = parseTopics("in 4")
	h.finish(h.c.updateTopics(h.now, h.lastTopics), false)
	h.topologies["default"] = parseTopology(0, "sub 0 sources=in")
	interval := func(member string) int32 {
		h.responses = nil
		h.heartbeat(map[string]string{"member": member})
		h.answerRuns("g", "ref", false)
		return h.responses[len(h.responses)-1].(*kmsg.StreamsGroupHeartbeatResponse).HeartbeatIntervalMillis
	}
	h.now = 1000
	for _, m := range []string{"m1", "m2", "m3"} {
		interval(m)
	}
	for i := 0; h.c.groups["g"].(*streamsGroup).state != StreamsStable; i++ {
		if i == 20 {
			t.Fatal("not stable")
		}
		h.now += 100
		for _, m := range []string{"m1", "m2", "m3"} {
			interval(m)
		}
	}
	h.now += 100
	h.heartbeat(map[string]string{"member": "m3", "epoch": "-1"})
	for i := 0; h.c.groups["g"].(*streamsGroup).state != StreamsStable; i++ {
		if i == 20 {
			t.Fatal("not stable after the leave")
		}
		h.now += 100
		interval("m1")
		interval("m2")
	}
	h.now += 100
	if got := interval("m1"); got != 50 {
		t.Fatalf("after the leave: %d, want 50", got)
	}
	if out := h.restart(); strings.Contains(out, "error") {
		t.Fatalf("restart: %s", out)
	}
	h.now += 100
	if got := interval("m1"); got != 250 {
		t.Errorf("after a fail-over, Stable: %d, want the configured 250 (no window replayed)", got)
	}
	// A join makes the group reconcile; a replay keeps that.
	h.now += 100
	interval("m4")
	if st := h.c.groups["g"].(*streamsGroup).state; st != StreamsReconciling && st != StreamsAssigning {
		t.Fatalf("after a join: %s", st)
	}
	h.restart()
	h.now += 100
	if got := interval("m1"); got != 50 {
		t.Errorf("after a fail-over, reconciling: %d, want 50", got)
	}
}
