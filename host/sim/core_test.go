package sim_test

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/host/sim"
)

// engines replays testdata/sim/FILE on the model and on the core engine.
func engines(t *testing.T, file string) (model, real *sim.Report) {
	t.Helper()
	model = sim.Run(decode(t, file, readScenario(t, file)), builtins)
	real, err := sim.RunCore(decode(t, file, readScenario(t, file)), builtins)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range real.Assignors {
		if a.Error != "" || len(a.Rebalances) == 0 || !a.Rebalances[0].Baseline {
			t.Fatalf("%s on core: error %q, %d targets", a.Name, a.Error, len(a.Rebalances))
		}
	}
	return model, real
}

// TestCoreEngineAgainstModel replays the three scenarios of testdata/sim
// on both engines. Where they agree and where they differ, and why, is
// docs/AB-TESTING.md's "The core engine"; this test holds both.
func TestCoreEngineAgainstModel(t *testing.T) {
	for _, file := range []string{"leave.yaml", "rolling-restart.yaml", "scale-out.yaml"} {
		model, real := engines(t, file)
		for i, m := range model.Assignors {
			c := real.Assignors[i]
			t.Logf("%-20s %-6s model: rebalances %d moved %d warm %d cold %d unavailable %v; core: %d %d %d %d %v", file, m.Name,
				m.Totals.Rebalances, m.Totals.TasksMoved, m.Totals.Warm, m.Totals.Cold, m.UnavailableTaskS,
				c.Totals.Rebalances, c.Totals.TasksMoved, c.Totals.Warm, c.Totals.Cold, c.UnavailableTaskS)
		}
		sticky, ha := [2]sim.AssignorReport{model.Assignors[0], real.Assignors[0]}, [2]sim.AssignorReport{model.Assignors[1], real.Assignors[1]}
		switch file {
		case "leave.yaml":
			// b's two tasks move to a cold either way; core computes the
			// target one assignment interval (1 s) after b's leave, so
			// both tasks wait one second longer: 20 + 2 task-seconds.
			for _, p := range [][2]sim.AssignorReport{sticky, ha} {
				if p[0].Totals.TasksMoved != 2 || p[1].Totals.TasksMoved != 2 || p[1].Totals.Cold != 2 ||
					p[0].UnavailableTaskS != 20 || p[1].UnavailableTaskS != 22 {
					t.Errorf("leave %s: model %+v %v, core %+v %v", p[0].Name, p[0].Totals, p[0].UnavailableTaskS, p[1].Totals, p[1].UnavailableTaskS)
				}
			}
		case "rolling-restart.yaml":
			// Sticky: one target per leave, join and fencing on both
			// engines, moving the same tasks.
			if m, c := sticky[0].Totals, sticky[1].Totals; m.Rebalances != c.Rebalances || m.TasksMoved != c.TasksMoved {
				t.Errorf("rolling restart, sticky: model %+v, core %+v", m, c)
			}
			// The crashed member is fenced a session timeout after its
			// last heartbeat on core (up to a heartbeat interval before
			// the crash), its target one assignment interval later; on
			// the model a session timeout after the crash.
			if m, c := fencedAt(sticky[0]), fencedAt(sticky[1]); c > m+1 || c < m-4 {
				t.Errorf("rolling restart: fenced at %v s on the model, %v s on core", m, c)
			}
		case "scale-out.yaml":
			// Three instances started in one tick join in three
			// heartbeats: core computes a target at the first one, then
			// one for the other two (the assignment interval), where the
			// model computes one. Sticky then moves tasks twice.
			c := sticky[1].Rebalances
			if sticky[0].Totals.Rebalances != 1 || len(c) < 3 || !slices.Equal(c[1].Reasons, []string{"member-joined:app-4"}) ||
				sticky[1].Totals.TasksMoved <= sticky[0].Totals.TasksMoved {
				t.Errorf("scale-out, sticky: model %+v, core %+v", sticky[0].Totals, sticky[1].Rebalances)
			}
			// HA never hands over cold and probes until its warm-ups are
			// promoted, on both engines.
			if ha[1].Totals.Cold != 0 || ha[1].Totals.Warm == 0 || ha[1].Totals.ProbingRounds == 0 {
				t.Errorf("scale-out, ha on core: %+v", ha[1].Totals)
			}
		}
	}
}

// fencedAt is when a target with a member-fenced reason was installed.
func fencedAt(a sim.AssignorReport) float64 {
	for _, rb := range a.Rebalances {
		for _, r := range rb.Reasons {
			if strings.HasPrefix(r, "member-fenced:") {
				return rb.AtS
			}
		}
	}
	return -1
}

// TestCoreEngineDeterministic: the same scenario and seed give
// byte-identical JSON and HTML on the core engine; another seed (other
// member ids, other changelog sizes) gives another report.
func TestCoreEngineDeterministic(t *testing.T) {
	run := func(seed uint64) *sim.Report {
		sc, err := sim.Decode("rolling-restart.yaml", readScenario(t, "rolling-restart.yaml"), &seed)
		if err != nil {
			t.Fatal(err)
		}
		r, err := sim.RunCore(sc, builtins)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, b, other := run(7), run(7), run(8)
	if !bytes.Equal(a.JSON(), b.JSON()) || !bytes.Equal(a.HTML(), b.HTML()) {
		t.Fatal("two core runs of one seed differ")
	}
	if bytes.Equal(a.JSON(), other.JSON()) {
		t.Fatal("seeds 7 and 8 give the same report")
	}
	if !bytes.Contains(a.JSON(), []byte(`"engine": "core"`)) {
		t.Fatal("the report does not say it ran on core")
	}
}

// TestCoreEngineRefuses: what the core engine does not simulate yet is
// refused with an error naming it, never replayed on a different model.
func TestCoreEngineRefuses(t *testing.T) {
	for _, tc := range []struct {
		sc   *sim.Scenario
		want string
	}{
		{leaveScenario(t, "events:", "recorded_inputs:\n  - {at_s: 10, end_offsets: {}, processes: {}}\nevents:"), "recorded_inputs without reports"},
	} {
		_, err := sim.RunCore(tc.sc, builtins)
		if !errors.Is(err, sim.ErrCoreUnsupported) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("RunCore: %v, want %q", err, tc.want)
		}
	}
}

// ExampleRunCore replays the leave scenario on the real coordinator.
func ExampleRunCore() {
	seed := uint64(1)
	sc, err := sim.Decode("leave.yaml", []byte(`name: leave
duration_s: 30
subtopologies: [{id: "0", partitions: 4, stateful: true}]
assignment: {acceptable_recovery_lag: 100}
state: {changelog_records: 10000, restore_records_per_s: 1000}
events: [{at_s: 0, join: a}, {at_s: 0, join: b}, {at_s: 10, leave: b}]
`), &seed)
	if err != nil {
		panic(err)
	}
	r, err := sim.RunCore(sc, builtins[:1])
	if err != nil {
		panic(err)
	}
	for _, rb := range r.Assignors[0].Rebalances {
		fmt.Println(rb.AtS, rb.Reasons, rb.TasksMoved)
	}
	// Output:
	// 3 [member-joined:a member-joined:b] 0
	// 11 [member-left:b] 2
}

// TestCoreEngineReports: with reports, core hands the assignor the end
// offsets the host last read and what members last reported — older than
// the changelogs' live ends that every heartbeat carries without reports.
func TestCoreEngineReports(t *testing.T) {
	live, stale := &scripted{}, &scripted{}
	for _, c := range []struct {
		s     *scripted
		extra string
	}{
		{live, "  append_records_per_s: 10"},
		{stale, "  append_records_per_s: 10\nreports: {task_offset_interval_ms: 20000, end_offsets_refresh_ms: 30000, end_offsets_phase_ms: 12000}"},
	} {
		noHint := func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
			resp, err := c.s.assign(req)
			if resp != nil {
				resp.NextProbeMs = -1
			}
			return resp, err
		}
		r, err := sim.RunCore(restoreScenario(t, c.extra), []sim.Assignor{{Name: "scripted", Assign: noHint}})
		if err != nil || r.Assignors[0].Error != "" || len(c.s.ends) != 2 {
			t.Fatalf("err %v, report error %q, %d runs", err, r.Assignors[0].Error, len(c.s.ends))
		}
	}
	// With its next_probe_ms hint (5 s) the same assignor is also run at
	// the probes core arms from it.
	hinted := &scripted{}
	if r, err := sim.RunCore(restoreScenario(t, "  append_records_per_s: 10"), []sim.Assignor{{Name: "scripted", Assign: hinted.assign}}); err != nil ||
		r.Assignors[0].Error != "" || hinted.runs < 6 {
		t.Fatalf("with the hint: err %v, %d runs in 40 s; want the joins, the leave and a probe every 5 s", err, hinted.runs)
	}
	l, s := live.ends[len(live.ends)-1], stale.ends[len(stale.ends)-1]
	// Two runs: the joins, b's leave. Task 0 runs on a throughout, growing 10 records a
	// second; at the leave's run the host's last read is the one at 0 s
	// (the next is at 12 s), and a leaves the task it runs out of its
	// report, so core knows the end at 0 s.
	if s[0] != 10000 || l[0] <= s[0] {
		t.Errorf("last run's end of task 0: %d with reports, %d without", s[0], l[0])
	}
}

// TestCoreEngineSlicedTargets replays a group of more members than core
// writes targets for in one step (128): core writes each target in
// slices and installs it with the last, and the replay records the
// baseline and the target after a leave, as it does for a small group.
func TestCoreEngineSlicedTargets(t *testing.T) {
	var b strings.Builder
	b.WriteString("name: sliced\nseed: 1\nduration_s: 40\ntick_ms: 1000\n" +
		"subtopologies:\n  - {id: \"0\", partitions: 260, stateful: false}\n" +
		"state:\n  changelog_records: 100\n  restore_records_per_s: 1000\nevents:\n")
	for i := range 130 {
		fmt.Fprintf(&b, "  - {at_s: 0, join: m%03d, process: p%02d}\n", i, i/10)
	}
	b.WriteString("  - {at_s: 20, leave: m007}\n")
	r, err := sim.RunCore(decode(t, "sliced.yaml", []byte(b.String())), builtins[:1])
	if err != nil {
		t.Fatal(err)
	}
	a := r.Assignors[0]
	if a.Error != "" || len(a.Rebalances) != 2 || !a.Rebalances[0].Baseline || a.Rebalances[0].Members != 130 ||
		a.Rebalances[1].Members != 129 || !slices.Contains(a.Rebalances[1].Reasons, "member-left:m007") {
		t.Fatalf("error %q, rebalances %+v", a.Error, a.Rebalances)
	}
}
