package sim_test

import (
	"fmt"
	"testing"

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
