package core

import (
	"fmt"
	"math"
	"testing"

	"github.com/coordhost/coordhost/core/records"
)

// lagGroup: member w (process pw) holds warm-up 0_0 in the target.
func lagGroup(t *testing.T) (*Coordinator, *streamsGroup) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Streams.AcceptableRecoveryLag = 100
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	g := newStreamsGroup("g")
	m := newStreamsMember("w")
	m.processID = "pw"
	g.members["w"] = m
	tt := emptyTuple()
	tt.warmup[TaskID{"0", 0}] = struct{}{}
	g.target["w"] = tt
	g.indexWarmupTarget("w")
	c.groups["g"] = g
	return c, g
}

func TestWarmupLagRules(t *testing.T) {
	task := TaskID{"0", 0}
	cases := []struct {
		name       string
		offset     int64 // -1: no report
		memberEnd  int64 // -1: not reported
		hostEnd    int64 // -1: not supplied
		wantLag    int64
		wantKnown  bool
		wantCaught bool
	}{
		{"unknown end never caught up, even with state", 1000, -1, -1, 0, false, false},
		{"a 4.4 client's MaxInt64 end counts as unknown", 1000, math.MaxInt64, -1, 0, false, false},
		{"member-reported end", 950, 1000, -1, 50, true, true},
		{"host-supplied end", 850, -1, 1000, 150, true, false},
		{"the member's own end wins over a larger host end", 850, 900, 1000, 50, true, true},
		{"no state: lag is the end offset", -1, -1, 80, 80, true, true},
		{"offset one past its own end (a position): caught up", 1001, 1000, -1, 0, true, true},
		{"offset beyond the host end: restore from scratch", 5000, -1, 1000, 1000, true, false},
		{"MaxInt64 offset (not restoring yet) is not measured against its own end", math.MaxInt64, 1000, -1, 1000, true, false},
	}
	for _, tc := range cases {
		c, g := lagGroup(t)
		o := memberOffsets{offsets: map[TaskID]int64{}, endOffsets: map[TaskID]int64{}}
		if tc.offset >= 0 {
			o.offsets[task] = tc.offset
		}
		if tc.memberEnd >= 0 {
			o.endOffsets[task] = tc.memberEnd
		}
		g.putTaskOffsets("w", o)
		if tc.hostEnd >= 0 {
			c.updateEndOffsets(0, "g", []TaskEndOffset{{Task: task, Offset: tc.hostEnd}})
		}
		lag, known := g.taskLag("pw", task)
		if known != tc.wantKnown || (known && lag != tc.wantLag) {
			t.Errorf("%s: lag %d known %v, want %d %v", tc.name, lag, known, tc.wantLag, tc.wantKnown)
		}
		if caught := len(c.caughtUpWarmups(g)) == 1; caught != tc.wantCaught {
			t.Errorf("%s: caught up %v, want %v", tc.name, caught, tc.wantCaught)
		}
	}
}

// TestWarmupLagOwnReport: a warm-up's lag is measured against the end
// offset its member reported with its offset, not against a larger end
// offset another member reported later; the group's end offset stands in
// only for tasks the member reported no end offset for.
func TestWarmupLagOwnReport(t *testing.T) {
	c, g := lagGroup(t)
	t0, t1 := TaskID{"0", 0}, TaskID{"0", 1}
	x := newStreamsMember("x")
	x.processID = "px"
	g.members["x"] = x
	g.putTaskOffsets("w", memberOffsets{offsets: map[TaskID]int64{t0: 950, t1: 950}, endOffsets: map[TaskID]int64{t0: 1000}})
	g.putTaskOffsets("x", memberOffsets{endOffsets: map[TaskID]int64{t0: 5000, t1: 5000}})
	if end, _ := g.endOffsetOf(t0); end != 5000 {
		t.Fatalf("group end offset %d, want the largest reported, 5000", end)
	}
	if lag, ok := g.taskLag("pw", t0); !ok || lag != 50 {
		t.Errorf("lag on 0_0 %d (known %v), want 50 from w's own report", lag, ok)
	}
	if lag, ok := g.taskLag("pw", t1); !ok || lag != 4050 {
		t.Errorf("lag on 0_1 %d (known %v), want 4050 against the group's end: w reported none", lag, ok)
	}
	if got := c.caughtUpWarmups(g); len(got) != 1 || got[0] != "w:0_0" {
		t.Errorf("caught-up warm-ups %v, want [w:0_0]", got)
	}
	// A second member of pw reporting the task without an end offset is
	// measured against the group's: the process keeps its best lag.
	y := newStreamsMember("y")
	y.processID = "pw"
	g.members["y"] = y
	g.putTaskOffsets("y", memberOffsets{offsets: map[TaskID]int64{t0: 900}})
	if lag, _ := g.taskLag("pw", t0); lag != 50 {
		t.Errorf("lag on 0_0 with a second member %d, want 50", lag)
	}
	// The assignor gets the same view: w's own end offset for 0_0 and the
	// group's for 0_1 (w reported none; its offset is below the group's,
	// so it is measured against it as core does); x, which reported no
	// offsets, shares the group's list.
	known := func(t TaskID) (TaskRef, bool) { return TaskRef{Partition: t.Partition}, t.Subtopology == "0" }
	ends := []TaskOffset{{TaskRef{0, 0}, 5000}, {TaskRef{0, 1}, 5000}}
	if got := memberEnds(ends, g.soft.taskOffsets["w"], known); fmt.Sprint(got) != "[{{0 0} 1000} {{0 1} 5000}]" {
		t.Errorf("w's end offsets %v, want its own 1000 for 0_0 and the group's 5000 for 0_1", got)
	}
	// An offset beyond the group's end without an own end offset leaves
	// the task out, so the assignor applies the corrupt-state rule
	// against the group's end, as taskLag does.
	beyond := memberOffsets{offsets: map[TaskID]int64{t1: 6000}}
	if got := memberEnds(ends, beyond, known); fmt.Sprint(got) != "[{{0 0} 5000}]" {
		t.Errorf("end offsets of a member beyond the group's end %v, want 0_1 left out", got)
	}
	if got := memberEnds(ends, g.soft.taskOffsets["x"], known); &got[0] != &ends[0] {
		t.Errorf("x's end offsets %v are a copy, want the shared list", got)
	}
}

func TestUpdateEndOffsetsForget(t *testing.T) {
	c, g := lagGroup(t)
	task := TaskID{"0", 0}
	c.updateEndOffsets(0, "g", []TaskEndOffset{{Task: task, Offset: 10}})
	if _, ok := g.endOffsetOf(task); !ok {
		t.Fatal("host end offset not stored")
	}
	c.updateEndOffsets(0, "g", []TaskEndOffset{{Task: task, Offset: -1}})
	if _, ok := g.endOffsetOf(task); ok {
		t.Fatal("a negative host end offset must forget the task's end offset")
	}
	if out := c.updateEndOffsets(0, "missing", []TaskEndOffset{{Task: task, Offset: 1}}); len(out.Records)+len(out.AssignorRuns) != 0 {
		t.Fatal("end offsets for an unknown group must do nothing")
	}
}

func TestProbingConfigLayer(t *testing.T) {
	cfg := DefaultConfig()
	if cfg.Streams.ProbingIntervalMs != 600000 {
		t.Fatalf("default probing interval %d, want Kafka Streams' 600000", cfg.Streams.ProbingIntervalMs)
	}
	cfg.Streams.ProbingIntervalMs = -1
	if err := cfg.Validate(); err == nil {
		t.Fatal("negative probing interval accepted")
	}
	neg := int64(-5)
	if err := (StreamsGroupOverrides{ProbingIntervalMs: &neg}).Validate(); err == nil {
		t.Fatal("negative probing interval override accepted")
	}
	c, _ := New(DefaultConfig())
	iv, lag, w := int64(1234), int64(7), int32(3)
	c.setStreamsGroupConfig("g", StreamsGroupOverrides{ProbingIntervalMs: &iv, AcceptableRecoveryLag: &lag, NumWarmupReplicas: &w})
	s := c.streamsConfig("g")
	if s.ProbingIntervalMs != 1234 || s.AcceptableRecoveryLag != 7 || s.NumWarmupReplicas != 3 {
		t.Fatalf("overrides not applied: %+v", s)
	}
}

// TestWarmupTargetIndex checks that the index of members whose target holds
// a warm-up follows every target change: live writes, a rolled-back batch,
// and replay of the same records into a fresh coordinator.
func TestWarmupTargetIndex(t *testing.T) {
	c, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	g := newStreamsGroup("g")
	c.groups["g"] = g
	warm, cold := emptyTuple(), emptyTuple()
	warm.warmup[TaskID{"0", 1}] = struct{}{}
	cold.active[TaskID{"0", 0}] = struct{}{}
	want := func(step string, members ...string) {
		t.Helper()
		if len(g.warmupTargets) != len(members) {
			t.Fatalf("%s: index %v, want %v", step, g.warmupTargets, members)
		}
		for _, m := range members {
			if _, ok := g.warmupTargets[m]; !ok {
				t.Fatalf("%s: index %v, want %v", step, g.warmupTargets, members)
			}
		}
		if g.targetHasWarmups() != (len(members) > 0) {
			t.Fatalf("%s: targetHasWarmups %v", step, g.targetHasWarmups())
		}
	}
	c.setTarget(g, "a", &warm)
	c.setTarget(g, "b", &cold)
	c.Commit()
	want("written", "a")
	c.setTarget(g, "a", &cold)
	c.setTarget(g, "b", &warm)
	want("rewritten", "b")
	c.Rollback()
	want("rolled back", "a")
	c.setTarget(g, "a", nil)
	c.Commit()
	want("deleted")

	r, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range []records.Record{targetRecord("g", "a", cold), targetRecord("g", "b", warm), targetRecord("g", "c", warm)} {
		if err := r.Replay(rec); err != nil {
			t.Fatal(err)
		}
	}
	g = r.groups["g"].(*streamsGroup)
	want("replayed", "b", "c")
	if err := r.Replay(records.Record{Key: records.StreamsGroupTargetAssignmentMemberKey{GroupID: "g", MemberID: "b"}}); err != nil {
		t.Fatal(err)
	}
	want("tombstone replayed", "c")
}
