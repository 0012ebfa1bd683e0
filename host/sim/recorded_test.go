package sim_test

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/host/sim"
)

// TestRecordedInputs: with recorded inputs the assignor runs where the
// real one did — at the steps and at each recorded input's time, never on
// its own probe timer (the scripted assignor asks for a probe every 5 s)
// — and is handed each recorded input's end offsets and its process's
// offsets instead of the model's (here the reports'); a recorded probe
// whose target is unchanged installs nothing.
func TestRecordedInputs(t *testing.T) {
	s := &scripted{}
	sc := restoreScenario(t, `reports: {task_offset_interval_ms: 20000, end_offsets_refresh_ms: 30000}
recorded_inputs:
  - {at_s: 30, end_offsets: {"0_2": 500}}
  - {at_s: 0, end_offsets: {"0_0": 10000}, processes: {a: {"0_1": 7}}}
  - {at_s: 10, end_offsets: {"0_1": 12000, "0_2": 11000}, processes: {a: {"0_1": 11500, "0_2": 3}, c: {"0_1": 2}}}
  - {at_s: 22.5, probe: true, end_offsets: {"0_1": 12000}, processes: {a: {"0_2": 4}}}`)
	r := sim.Run(sc, []sim.Assignor{{Name: "scripted", Assign: s.assign}})
	a := r.Assignors[0]
	if a.Error != "" {
		t.Fatal(a.Error)
	}
	want := []string{
		"offsets map[1:7] ends map[0:10000]",                 // 0 s: the baseline, with the input recorded at 0 s
		"offsets map[1:11500 2:3] ends map[1:12000 2:11000]", // 10 s: b left
		"offsets map[2:4] ends map[1:12000]",                 // 23 s: the recorded probe (the tick after 22.5 s)
		"offsets map[] ends map[2:500]",                      // 30 s
	}
	if len(s.offsets) != len(want) {
		t.Fatalf("%d runs, want %d (offsets %v)", len(s.offsets), len(want), s.offsets)
	}
	for i, w := range want {
		if g := fmt.Sprintf("offsets %v ends %v", s.offsets[i], s.ends[i]); g != w {
			t.Errorf("run %d: %s, want %s", i, g, w)
		}
	}
	var got []string
	for _, rb := range a.Rebalances {
		got = append(got, fmt.Sprintf("%v s %v %v", rb.AtS, rb.Reasons, rb.RecordedInputs))
	}
	if w := "[0 s [member-joined:a member-joined:b member-joined:c] true 10 s [member-left:b] true 30 s [recorded-target] true]"; fmt.Sprint(got) != w {
		t.Errorf("rebalances %v, want %s", got, w)
	}
	if a.Totals.ProbesUnchanged != 1 {
		t.Errorf("%d unchanged probes, want 1 (the recorded one)", a.Totals.ProbesUnchanged)
	}

	// Without recorded inputs the model's probes run: every 5 s.
	s = &scripted{}
	sim.Run(restoreScenario(t, ""), []sim.Assignor{{Name: "scripted", Assign: s.assign}})
	if len(s.offsets) != 8 {
		t.Errorf("%d runs without recorded inputs, want 8 (0 to 35 s, every 5 s)", len(s.offsets))
	}
}

// byIndex assigns task i to the i-th member (by id) modulo their
// number, and records per run which tasks each member owned in its input.
type byIndex struct {
	owned []map[string][]int32
}

func (s *byIndex) assign(req *abi.AssignRequest) (*abi.AssignResponse, error) {
	owned := map[string][]int32{}
	resp := &abi.AssignResponse{NextProbeMs: -1}
	for _, m := range req.Members {
		owned[m.ID] = slices.Clone(m.Active) // the replay reuses the slice
		resp.Members = append(resp.Members, abi.MemberAssignment{Active: []int32{}, Standby: []int32{}, Warmup: []int32{}})
	}
	for t := range int32(6) {
		i := int(t) % len(req.Members)
		resp.Members[i].Active = append(resp.Members[i].Active, t)
	}
	s.owned = append(s.owned, owned)
	return resp, nil
}

// movesScenario is restoreScenario with six stateless tasks and a 100 ms
// tick until 20 s: a, b and c share the tasks; b leaves at 10 s,
// a target on a recorded input that moves 0_1 b -> c, 0_2 c -> a, 0_3
// a -> c and 0_4 b -> a. The model's grant and hand-over take 5 s; the
// recording gives 0_1's (to c: granted 0.1 s, startable 0.3 s after the
// target), 0_2's grant (2 s, no hand-over) and 0_3's to another member
// than the replay's (a), so 0_3 and 0_4 take the model's. Recorded probes
// read the owners in between; the recorded target at 12 s installs the
// same target again, which leaves the pending grants as they are.
func movesScenario(t *testing.T, moves string) *sim.Scenario {
	t.Helper()
	data := restoreYAML(`recorded_inputs:
  - {at_s: 10, end_offsets: {}, moves: {` + moves + `}}
  - {at_s: 10.1, probe: true, end_offsets: {}}
  - {at_s: 11.9, probe: true, end_offsets: {}}
  - {at_s: 12, end_offsets: {}}
  - {at_s: 14.9, probe: true, end_offsets: {}}
  - {at_s: 15, probe: true, end_offsets: {}}`)
	for _, r := range [][2]string{{"duration_s: 40\ntick_ms: 1000", "duration_s: 20\ntick_ms: 100\ngrant_ms: 5000\nhandover_ms: 5000"},
		{"partitions: 3, stateful: true", "partitions: 6, stateful: false"}} {
		if !strings.Contains(data, r[0]) {
			t.Fatalf("restoreYAML has no %q", r[0])
		}
		data = strings.Replace(data, r[0], r[1], 1)
	}
	return decode(t, "moves.yaml", []byte(data))
}

// TestRecordedMoves: a task moved at a target on a recorded input is its
// new owner's in the assignor's input, and that owner starts it, when the
// recording says; a task without a recorded delay, or recorded as moved
// to another member, takes the model's grant_ms and handover_ms; the
// report counts which took which; the same scenario gives the same bytes.
func TestRecordedMoves(t *testing.T) {
	const moves = `"0_1": {member: c, grant_ms: 100, handover_ms: 300}, "0_2": {member: a, grant_ms: 2000}, "0_3": {member: a, grant_ms: 100}`
	s := &byIndex{}
	r := sim.Run(movesScenario(t, moves), []sim.Assignor{{Name: "rr", Assign: s.assign}})
	a := r.Assignors[0]
	if a.Error != "" {
		t.Fatal(a.Error)
	}
	// Runs: the baseline, the target at 10 s, the probes at 10.1 and
	// 11.9 s, the target at 12 s, the probes at 14.9 and 15 s (all with
	// the same target).
	want := []string{
		"a [] c []",           // 0 s: nobody owns anything yet
		"a [0 3] c [2 5]",     // 10 s: before the target (b's 1 and 4 left with it)
		"a [0] c [1 5]",       // 10.1 s: 0_1 is c's 0.1 s after the target
		"a [0] c [1 5]",       // 11.9 s: 0_2 not yet a's
		"a [0 2] c [1 5]",     // 12 s: 0_2 granted 2 s after the target
		"a [0 2] c [1 5]",     // 14.9 s: 0_3 and 0_4 wait for grant_ms
		"a [0 2 4] c [1 3 5]", // 15 s: granted 5 s after the target at 10 s, not the one at 12 s
	}
	if len(s.owned) != len(want) {
		t.Fatalf("%d runs, want %d: %v", len(s.owned), len(want), s.owned)
	}
	for i, w := range want {
		if g := fmt.Sprintf("a %v c %v", s.owned[i]["a"], s.owned[i]["c"]); g != w {
			t.Errorf("run %d: %s, want %s", i, g, w)
		}
	}
	// 0_1 waits 0.3 s, 0_2, 0_3 and 0_4 handover_ms: 15.3 task-s.
	if a.UnavailableTaskS != 15.3 {
		t.Errorf("%v unavailable task-s, want 15.3", a.UnavailableTaskS)
	}
	if g := fmt.Sprintf("%d %d %d %d", a.Totals.RecordedGrants, a.Totals.ModelledGrants, a.Totals.RecordedHandOvers, a.Totals.ModelledHandOvers); g != "2 2 1 3" {
		t.Errorf("recorded/modelled grants and hand-overs %s, want 2 2 1 3", g)
	}
	if rb := a.Rebalances[1]; rb.RecordedGrants != 2 || rb.ModelledHandOvers != 3 || rb.TasksMoved != 4 {
		t.Errorf("the target at 10 s: %+v", rb)
	}
	again := sim.Run(movesScenario(t, moves), []sim.Assignor{{Name: "rr", Assign: (&byIndex{}).assign}})
	if !bytes.Equal(r.JSON(), again.JSON()) || !bytes.Equal(r.HTML(), again.HTML()) {
		t.Error("two runs of the same scenario differ")
	}

	// Without recorded moves every moved task takes 5 s: 20 task-s.
	a = sim.Run(movesScenario(t, ""), []sim.Assignor{{Name: "rr", Assign: (&byIndex{}).assign}}).Assignors[0]
	if a.UnavailableTaskS != 20 || a.Totals.RecordedGrants != 0 || a.Totals.ModelledGrants != 4 {
		t.Errorf("without moves: %v task-s, totals %+v", a.UnavailableTaskS, a.Totals)
	}

	for _, bad := range []struct{ moves, want string }{
		{`"9_0": {member: a}`, `moves: no task "9_0"`},
		{`"0_1": {member: ""}`, "0_1: empty member"},
		{`"0_1": {member: a, grant_ms: -1}`, "grant_ms -1 must be in"},
		{`"0_1": {member: a, handover_ms: 2592000001}`, "handover_ms 2592000001 must be in"},
	} {
		data := strings.Replace(`duration_s: 10
subtopologies: [{id: "0", partitions: 2}]
state: {restore_records_per_s: 1}
events: [{at_s: 0, join: a}]
recorded_inputs: [{at_s: 1, end_offsets: {}, moves: {MOVES}}]`, "MOVES", bad.moves, 1)
		if _, err := sim.Decode("bad.yaml", []byte(data), nil); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("moves %s: error %v, want %q", bad.moves, err, bad.want)
		}
	}
}

// TestRecordedStops: a recorded move's previous owner runs the task until
// the recorded stop — after the target (0_2 runs on c until 10.7 s), or
// before it (b closed 0_1 at 9 s, before its leave at 10 s reached the
// group); a stop recorded from another member than the replay's previous
// owner (0_4: c, where the replay has b) leaves the model's guess (the
// task stops at the target).
func TestRecordedStops(t *testing.T) {
	const moves = `"0_1": {member: c, grant_ms: 100, handover_ms: 300, from: b, stop_ms: -1000},` +
		` "0_2": {member: a, grant_ms: 2000, handover_ms: 1000, from: c, stop_ms: 700},` +
		` "0_4": {member: a, handover_ms: 500, from: c, stop_ms: -2000}`
	run := func() *sim.Report {
		return sim.Run(movesScenario(t, moves), []sim.Assignor{{Name: "rr", Assign: (&byIndex{}).assign}})
	}
	r := run()
	a := r.Assignors[0]
	if a.Error != "" {
		t.Fatal(a.Error)
	}
	// 0_1: 9 s to 10.3 s; 0_2: 10.7 to 11 s; 0_3: handover_ms (5 s);
	// 0_4: 10 to 10.5 s.
	if a.UnavailableTaskS != 7.1 {
		t.Errorf("%v unavailable task-s, want 7.1", a.UnavailableTaskS)
	}
	want := "[[0 0] [9 1] [10 3] [10.3 2] [10.5 1] [10.7 2] [11 1] [15 0]]"
	if g := fmt.Sprint(points(a.Unavailable)); g != want {
		t.Errorf("unavailable over time %s, want %s", g, want)
	}
	if a.Totals.RecordedStops != 2 {
		t.Errorf("%d recorded stops, want 2 (0_1 and 0_2)", a.Totals.RecordedStops)
	}
	if again := run(); !bytes.Equal(r.JSON(), again.JSON()) || !bytes.Equal(r.HTML(), again.HTML()) {
		t.Error("two runs of the same scenario differ")
	}

	for _, bad := range []struct{ moves, want string }{
		{`"0_1": {member: a, from: b}`, "0_1: from and stop_ms go together"},
		{`"0_1": {member: a, stop_ms: 5}`, "0_1: from and stop_ms go together"},
		{`"0_1": {member: a, from: b, stop_ms: -2592000001}`, "stop_ms -2592000001 must be in"},
	} {
		data := strings.Replace(`duration_s: 10
subtopologies: [{id: "0", partitions: 2}]
state: {restore_records_per_s: 1}
events: [{at_s: 0, join: a}]
recorded_inputs: [{at_s: 1, end_offsets: {}, moves: {MOVES}}]`, "MOVES", bad.moves, 1)
		if _, err := sim.Decode("bad.yaml", []byte(data), nil); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("moves %s: error %v, want %q", bad.moves, err, bad.want)
		}
	}
}

// TestRecordedStopsOfCrashedMember: b crashes at 5 s and is fenced at
// 10 s (session_timeout_s 5). Without a recorded stop its tasks stop at
// its crash (0_4: 5 s to its hand-over at 10.5 s); with one they run
// until it (0_1: stopped at 8 s, before the fence, or at 10.2 s, after it).
func TestRecordedStopsOfCrashedMember(t *testing.T) {
	for _, c := range []struct {
		stop string
		want float64 // 0_2 and 0_3 take handover_ms (5 s each)
	}{{"-2000", 2.3 + 5.5 + 10}, {"200", 0.1 + 5.5 + 10}} {
		moves := `"0_1": {member: c, grant_ms: 100, handover_ms: 300, from: b, stop_ms: ` + c.stop + `}, "0_4": {member: a, handover_ms: 500}`
		data := restoreYAML(`session_timeout_s: 5
recorded_inputs:
  - {at_s: 10, end_offsets: {}, moves: {` + moves + `}}`)
		for _, r := range [][2]string{{"duration_s: 40\ntick_ms: 1000", "duration_s: 20\ntick_ms: 100\ngrant_ms: 5000\nhandover_ms: 5000"},
			{"partitions: 3, stateful: true", "partitions: 6, stateful: false"}, {"{at_s: 10, leave: b}", "{at_s: 5, crash: b}"}} {
			if !strings.Contains(data, r[0]) {
				t.Fatalf("restoreYAML has no %q", r[0])
			}
			data = strings.Replace(data, r[0], r[1], 1)
		}
		a := sim.Run(decode(t, "crash.yaml", []byte(data)), []sim.Assignor{{Name: "rr", Assign: (&byIndex{}).assign}}).Assignors[0]
		if a.Error != "" {
			t.Fatal(a.Error)
		}
		if len(a.Rebalances) != 2 || fmt.Sprint(a.Rebalances[1].AtS, a.Rebalances[1].Reasons) != "10 [member-fenced:b]" {
			t.Fatalf("stop %s: rebalances %+v, want the baseline and b's fence at 10 s", c.stop, a.Rebalances)
		}
		if math.Abs(a.UnavailableTaskS-c.want) > 1e-9 {
			t.Errorf("stop %s: %v unavailable task-s, want %v", c.stop, a.UnavailableTaskS, c.want)
		}
		if a.Totals.RecordedStops != 1 {
			t.Errorf("stop %s: %d recorded stops, want 1", c.stop, a.Totals.RecordedStops)
		}
	}
}

// points are the report's unavailable series as {at_s tasks} pairs.
func points(ps []sim.Point) [][2]float64 {
	var out [][2]float64
	for _, p := range ps {
		out = append(out, [2]float64{p.AtS, float64(p.Tasks)})
	}
	return out
}
