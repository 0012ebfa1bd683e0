package sim_test

import (
	"bytes"
	"testing"

	"github.com/coordhost/coordhost/host/sim"
)

// quotaLeave is leave.yaml with one restore link per process, ticks of
// 100 ms, and a's restore consumer under a quota of 1000 bytes/s, fetches
// of at most 200 bytes, a changelog record costing one byte: b's two
// tasks (10000 records each) cost a 20,000 bytes to restore.
func quotaLeave(t *testing.T, replace ...string) *sim.Scenario {
	t.Helper()
	return leaveScenario(t, append([]string{"restore_records_per_s: 1000", "restore_records_per_s: 1000\n  shared_restore: true",
		"tick_ms: 1000", "tick_ms: 100",
		"{at_s: 0, join: a}", `{at_s: 0, join: a, restore_quota: {bytes_per_s: 1000, fetch_max_bytes: 200, record_bytes: 1}}`}, replace...)...)
}

// TestRestoreQuotaPacesTheLink: a process under restore_quota restores
// through fetches Kafka's quota paces, not at its records per second. From
// 10 s (b's leave) a's fresh sensor lets the first second's fetches through
// up to the padded window's 10 s of quota (about 11,000 bytes: both tasks
// about half restored at 11 s), then throttles every retry for about a
// second while that sample is kept (the window stays padded to about 10 s),
// and lets the rest through at once when the ring of 12 samples drops it
// (about 11 s later): both tasks restored at about 22 s, 23 to 25
// task-seconds — where the same link at 1000 records/s restores them at
// 30 s (40 task-seconds) — with throttled fetches counted. The same
// scenario twice gives byte-identical reports, on both engines.
func TestRestoreQuotaPacesTheLink(t *testing.T) {
	r := sim.Run(quotaLeave(t), builtins)
	for _, a := range r.Assignors {
		tot := a.Totals
		if a.Error != "" || tot.TasksMoved != 2 || tot.Cold != 2 || a.UnavailableTaskS < 23 || a.UnavailableTaskS > 25 ||
			tot.SettledAtS < 21.5 || tot.SettledAtS > 22.5 || tot.RecordsRestored != 20000 {
			t.Errorf("%s: error %q, %v task-s, totals %+v; want 2 cold hand-overs, 23 to 25 task-s, settled at about 22 s, 20000 records",
				a.Name, a.Error, a.UnavailableTaskS, tot)
		}
		if tot.ThrottledFetches < 8 || tot.ThrottleMs < 8000 {
			t.Errorf("%s: %d throttled fetches, %d ms; want the stall's retries, about a second each", a.Name, tot.ThrottledFetches, tot.ThrottleMs)
		}
		// Half of each task by 11 s: the first second's burst.
		if p := a.Unavailable; len(p) < 3 || p[1].AtS != 10 || p[1].Tasks != 2 {
			t.Errorf("%s: unavailable over time %v", a.Name, p)
		}
	}
	core, err := sim.RunCore(quotaLeave(t), builtins)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range core.Assignors {
		if a.Error != "" || a.UnavailableTaskS < 23 || a.UnavailableTaskS > 25 || a.Totals.ThrottledFetches < 8 {
			t.Errorf("core %s: error %q, %v task-s, totals %+v; want 23 to 25 task-s and the stall's throttles", a.Name, a.Error, a.UnavailableTaskS, a.Totals)
		}
	}
	for _, engine := range []string{"model", "core"} {
		var out [2][]byte
		for i := range out {
			rep := sim.Run(quotaLeave(t), builtins)
			if engine == "core" {
				if rep, err = sim.RunCore(quotaLeave(t), builtins); err != nil {
					t.Fatal(err)
				}
			}
			out[i] = append(rep.JSON(), rep.HTML()...)
		}
		if !bytes.Equal(out[0], out[1]) {
			t.Errorf("%s: two runs of one scenario differ", engine)
		}
	}
}
