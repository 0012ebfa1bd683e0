package sim_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/host/sim"
)

// scripted is an assignor whose target depends on the members only: with
// a, b and c, each runs one task (b's task 1); once b left, a runs tasks 0
// and 1 and holds a standby of task 2, which c runs. Every run asks for a
// probe 5 s later, and offsets records, per run time, a's offsets and the
// end offsets it was handed.
type scripted struct {
	runs    int
	offsets []map[int32]int64
	ends    []map[int32]int64
}

func (s *scripted) assign(req *abi.AssignRequest) (*abi.AssignResponse, error) {
	s.runs++
	resp := &abi.AssignResponse{NextProbeMs: 5000}
	for _, m := range req.Members {
		a := abi.MemberAssignment{Active: []int32{}, Standby: []int32{}, Warmup: []int32{}}
		switch {
		case m.ID == "a" && len(req.Members) == 3:
			a.Active = []int32{0}
		case m.ID == "a":
			a.Active, a.Standby = []int32{0, 1}, []int32{2}
		case m.ID == "b":
			a.Active = []int32{1}
		case m.ID == "c":
			a.Active = []int32{2}
		}
		resp.Members = append(resp.Members, a)
		if m.ID == "a" {
			o, e := map[int32]int64{}, map[int32]int64{}
			for _, x := range m.TaskOffsets {
				o[x.Task] = x.Offset
			}
			for _, x := range m.TaskEndOffsets {
				e[x.Task] = x.Offset
			}
			s.offsets, s.ends = append(s.offsets, o), append(s.ends, e)
		}
	}
	return resp, nil
}

// restoreScenario: three members on their own processes, three stateful
// tasks of 10000 records, b leaves at 10 s, runs every 5 s (the probe
// hint) until 40 s; extra lines go after the state model.
func restoreScenario(t *testing.T, extra string) *sim.Scenario {
	t.Helper()
	return decode(t, "restore.yaml", []byte(restoreYAML(extra)))
}

// restoreYAML is restoreScenario's file.
func restoreYAML(extra string) string {
	return `name: restore
duration_s: 40
tick_ms: 1000
subtopologies:
  - {id: "0", partitions: 3, stateful: true}
assignment: {num_standby_replicas: 0, num_warmup_replicas: 0, acceptable_recovery_lag: 100}
state:
  changelog_records: 10000
  restore_records_per_s: 1000
` + extra + `
events:
  - {at_s: 0, join: a, member_id: a}
  - {at_s: 0, join: b, member_id: b}
  - {at_s: 0, join: c, member_id: c}
  - {at_s: 10, leave: b}
`
}

// TestSharedRestoreActivesFirst: on a shared link a's new standby of task
// 2 waits while its cold active of task 1 restores (10 s to 20 s), then
// restores from 20 s; each copy on its own restores both at once. A new
// standby starts only handover_ms after its target.
func TestSharedRestoreActivesFirst(t *testing.T) {
	for _, c := range []struct {
		extra string
		// a's offsets of tasks 1 and 2 in the runs at 15, 25 and 35 s
		// (-1: not reported)
		want [3][2]int64
	}{
		{extra: "  shared_restore: true", want: [3][2]int64{{5000, -1}, {10000, 5000}, {10000, 10000}}},
		{extra: "", want: [3][2]int64{{5000, 5000}, {10000, 10000}, {10000, 10000}}},
		// The standby starts at 12 s, the active runs from 12 s.
		{extra: "handover_ms: 2000", want: [3][2]int64{{3000, 3000}, {10000, 10000}, {10000, 10000}}},
	} {
		s := &scripted{}
		r := sim.Run(restoreScenario(t, c.extra), []sim.Assignor{{Name: "scripted", Assign: s.assign}})
		if r.Assignors[0].Error != "" || len(s.offsets) < 8 {
			t.Fatalf("%q: error %q, %d runs", c.extra, r.Assignors[0].Error, len(s.offsets))
		}
		for i, at := range []int{3, 5, 7} { // runs at 0, 5, 10 (b left), 15, 20, 25, 30 and 35 s
			got := [2]int64{-1, -1}
			for j, task := range []int32{1, 2} {
				if o, ok := s.offsets[at][task]; ok {
					got[j] = o
				}
			}
			if got != c.want[i] {
				t.Errorf("%q: run %d: a's offsets of tasks 1 and 2 %v, want %v", c.extra, at, got, c.want[i])
			}
		}
	}
}

// TestReportsAreStale: with reports the assignor sees what a reported (at
// its join, on the tick after its target changed, then every
// task_offset_interval_ms) and the end offsets the host read (every
// end_offsets_refresh_ms, from end_offsets_phase_ms) or a member reported.
func TestReportsAreStale(t *testing.T) {
	s := &scripted{}
	sc := restoreScenario(t, "  append_records_per_s: 10\nreports: {task_offset_interval_ms: 20000, end_offsets_refresh_ms: 30000, end_offsets_phase_ms: 12000}")
	r := sim.Run(sc, []sim.Assignor{{Name: "scripted", Assign: s.assign}})
	if r.Assignors[0].Error != "" || len(s.offsets) < 8 {
		t.Fatalf("error %q, %d runs", r.Assignors[0].Error, len(s.offsets))
	}
	got := func(i int) string {
		return fmt.Sprintf("offsets %v ends %v", s.offsets[i], s.ends[i])
	}
	want := []string{
		// At 0 s a joined without state; the host read the ends at 0 s.
		"offsets map[] ends map[0:10000 1:10000 2:10000]",
		// At 5 s: a's report after its first target (at 0 s), before the
		// baseline's state was its: no offsets yet. Its running active
		// is left out.
		"offsets map[] ends map[0:10000 1:10000 2:10000]",
		// At 10 s (b left): the same; the host's next read is at 12 s.
		"offsets map[] ends map[0:10000 1:10000 2:10000]",
		// At 15 s: a reported at 11 s, the tick after its new target:
		// 1000 records of its cold active 1 and of its standby 2 (its
		// running active 0 left out); the host read the ends at 12 s,
		// after tasks 0 and 2 grew 120 records and task 1 100 (it ran on
		// b until 10 s).
		"offsets map[1:1000 2:1000] ends map[0:10120 1:10100 2:10120]",
		// At 20 s: no new report (the next is 20 s after 11 s).
		"offsets map[1:1000 2:1000] ends map[0:10120 1:10100 2:10120]",
	}
	for i, w := range want {
		if g := got(i); g != w {
			t.Errorf("run %d: %s, want %s", i, g, w)
		}
	}
}

// TestRecordedReportTimes: a member with recorded report times (reports.at)
// reports when it joins and then at those times only — not on the tick
// after its target changed (11 s) nor on the interval — while the others
// keep the model's rules; a time between two ticks reports at the next.
func TestRecordedReportTimes(t *testing.T) {
	s := &scripted{}
	sc := restoreScenario(t, "  append_records_per_s: 10\nreports: {task_offset_interval_ms: 20000, end_offsets_refresh_ms: 30000, end_offsets_phase_ms: 12000, at: {a: [13, 17.5]}}")
	r := sim.Run(sc, []sim.Assignor{{Name: "scripted", Assign: s.assign}})
	if r.Assignors[0].Error != "" || len(s.offsets) < 8 {
		t.Fatalf("error %q, %d runs", r.Assignors[0].Error, len(s.offsets))
	}
	want := []string{
		"offsets map[] ends map[0:10000 1:10000 2:10000]", // 0 s
		"offsets map[] ends map[0:10000 1:10000 2:10000]", // 5 s
		"offsets map[] ends map[0:10000 1:10000 2:10000]", // 10 s: b left
		// 15 s: a reported at 13 s: 3000 records of its cold active 1
		// and of its standby 2, and task 2's end then (c runs it).
		"offsets map[1:3000 2:3000] ends map[0:10120 1:10100 2:10130]",
		// 20 s: a reported at 18 s (the tick after 17.5 s).
		"offsets map[1:8000 2:8000] ends map[0:10120 1:10100 2:10180]",
	}
	for i, w := range want {
		if g := fmt.Sprintf("offsets %v ends %v", s.offsets[i], s.ends[i]); g != w {
			t.Errorf("run %d: %s, want %s", i, g, w)
		}
	}
	for _, bad := range []struct{ at, want string }{
		{`{a: [41]}`, `reports.at: "a": 41 must be in [0, duration_s]`},
		{`{"": [1]}`, "reports.at: empty member label"},
	} {
		_, err := sim.Decode("bad.yaml", []byte(restoreYAML("reports: {task_offset_interval_ms: 1, end_offsets_refresh_ms: 1, at: "+bad.at+"}")), nil)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("at %s: error %v, want %q", bad.at, err, bad.want)
		}
	}
}

// TestRecordedReportRestores: a recorded report value (reports.values)
// also says how far its member's process had restored. b joins at 5 s
// and warms task 0 up at 100 records/s; its recorded report at 10 s
// gives it 50 records behind the end it reported, so the warm-up is
// caught up and the probe that follows hands b the active. The replay's
// copy on b must then be as far as that report: it restores the last 50
// records (0.5 s) and runs — not from the 500 records its own restore
// reached by then (9,500 more at 100 records/s: unavailable from 10 s to
// the end, 30 task-seconds, as before). The recorded lag is kept against
// the replay's own end (10,000 here, 9,990 in the report). On both
// engines.
func TestRecordedReportRestores(t *testing.T) {
	const yaml = `name: recorded-restore
duration_s: 40
tick_ms: 100
heartbeat_interval_ms: 250
subtopologies:
  - {id: "0", partitions: 1, stateful: true}
assignment: {num_standby_replicas: 0, num_warmup_replicas: 1, acceptable_recovery_lag: 100}
state:
  changelog_records: 10000
  restore_records_per_s: 1000
reports:
  task_offset_interval_ms: 60000
  end_offsets_refresh_ms: 60000
  values:
    b:
      - {at_s: 10, task_offsets: {"0_0": 9940}, task_end_offsets: {"0_0": 9990}}
events:
  - {at_s: 0, join: a, member_id: a, process: pa}
  - {at_s: 5, join: b, member_id: b, process: pb, restore_records_per_s: 100}
`
	// warm: b warms task 0 up until its offset in the assignor's input
	// is within 100 of the end, then runs it.
	warm := func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
		toB := false
		for _, m := range req.Members {
			for _, o := range m.TaskOffsets {
				if m.ID == "b" && o.Task == 0 && o.Offset >= 9900 {
					toB = true
				}
			}
		}
		resp := &abi.AssignResponse{NextProbeMs: -1}
		for _, m := range req.Members {
			a := abi.MemberAssignment{Active: []int32{}, Standby: []int32{}, Warmup: []int32{}}
			switch {
			case m.ID == "a" && !toB, m.ID == "b" && toB:
				a.Active = []int32{0}
			case m.ID == "b":
				a.Warmup = []int32{0}
			}
			resp.Members = append(resp.Members, a)
		}
		return resp, nil
	}
	assignors := []sim.Assignor{{Name: "warm", Assign: warm}}
	core, err := sim.RunCore(decode(t, "recorded-restore.yaml", []byte(yaml)), assignors)
	if err != nil {
		t.Fatal(err)
	}
	model := sim.Run(decode(t, "recorded-restore.yaml", []byte(yaml)), assignors)
	for engine, r := range map[string]*sim.Report{"model": model, "core": core} {
		a := r.Assignors[0]
		if a.Error != "" {
			t.Fatalf("%s engine: %s", engine, a.Error)
		}
		if a.Totals.TasksMoved != 1 {
			t.Errorf("%s engine: %d tasks moved, want 1 (task 0 to b)", engine, a.Totals.TasksMoved)
		}
		if a.UnavailableTaskS > 1 {
			t.Errorf("%s engine: %.1f unavailable task-seconds (%v), want at most 1: b's copy is as far as its recorded report said",
				engine, a.UnavailableTaskS, a.Unavailable)
		}
	}
}
