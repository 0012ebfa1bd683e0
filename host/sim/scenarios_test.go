package sim_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/host/sim"
)

// TestRealisticScenarios runs every scenario under testdata/scenarios with
// both built-in assignors: each decodes, replays to the end, gives the
// same bytes twice (the 1,000-member group once: it takes seconds), and
// shows what it was written to show.
func TestRealisticScenarios(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "scenarios", "*.yaml"))
	if err != nil || len(files) < 5 {
		t.Fatalf("testdata/scenarios: %d files, %v; want at least five", len(files), err)
	}
	reports := map[string]*sim.Report{}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		if name == "large-group" && testing.Short() {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		r := sim.Run(decode(t, name, data), builtins)
		for _, a := range r.Assignors {
			if a.Error != "" || a.Totals.Rebalances == 0 {
				t.Errorf("%s, %s: error %q, %d rebalances", name, a.Name, a.Error, a.Totals.Rebalances)
			}
		}
		if name != "large-group" && !bytes.Equal(r.JSON(), sim.Run(decode(t, name, data), builtins).JSON()) {
			t.Errorf("%s: two runs differ", name)
		}
		reports[name] = r
	}
	byName := func(scenario, assignor string) sim.AssignorReport {
		for _, a := range reports[scenario].Assignors {
			if a.Name == assignor {
				return a
			}
		}
		t.Fatalf("%s: no %s", scenario, assignor)
		return sim.AssignorReport{}
	}
	// 30 instances restarted one by one: a leave and a join each.
	if r := byName("rolling-deploy", "sticky"); r.Totals.Rebalances != 60 || r.Rebalances[0].Members != 60 {
		t.Errorf("rolling-deploy, sticky: %d rebalances, %d members; want 60 and 60", r.Totals.Rebalances, r.Rebalances[0].Members)
	}
	// Large stores on new instances: warming them up first keeps the
	// tasks available where moving them at once does not, and the
	// warm-ups finish within the replay (the scenario's sizes allow it).
	if st, ha := byName("scale-out-large", "sticky"), byName("scale-out-large", "ha"); ha.UnavailableTaskS*10 > st.UnavailableTaskS || st.Totals.Cold == 0 || ha.Totals.Cold != 0 || ha.Totals.SettleS < 0 {
		t.Errorf("scale-out-large: ha %v task-s (%d cold, settled %v s after the scale-out), sticky %v (%d cold)",
			ha.UnavailableTaskS, ha.Totals.Cold, ha.Totals.SettleS, st.UnavailableTaskS, st.Totals.Cold)
	}
	// The roll to streams converts the group once, with a rebalance that
	// names it; the roll back once, without a rebalance (the settled
	// downgrade).
	for _, a := range reports["migration-roll"].Assignors {
		var reasons []string
		for _, rb := range a.Rebalances {
			for _, r := range rb.Reasons {
				if strings.HasPrefix(r, "group-converted:") {
					reasons = append(reasons, r)
				}
			}
		}
		if got := conversionsTo(a.Conversions); !slices.Equal(got, []string{"streams", "classic"}) || !slices.Equal(reasons, []string{"group-converted:streams"}) {
			t.Errorf("migration-roll, %s: conversions %q, rebalance reasons %q; want [streams classic] and [group-converted:streams]", a.Name, got, reasons)
		}
	}
	if r, ok := reports["large-group"]; ok && (r.Tasks != 10_000 || r.Assignors[0].Rebalances[0].Members != 1000 || r.Assignors[0].Rebalances[0].Processes != 20) {
		t.Errorf("large-group: %d tasks, first target %d members on %d processes", r.Tasks, r.Assignors[0].Rebalances[0].Members, r.Assignors[0].Rebalances[0].Processes)
	}
	// The lag spike and the two crashes: the crashed instances' members
	// are fenced after the session timeout.
	for _, a := range reports["crash-lag-spike"].Assignors {
		fenced := 0
		for _, rb := range a.Rebalances {
			for _, r := range rb.Reasons {
				if strings.HasPrefix(r, "member-fenced") {
					fenced++
				}
			}
		}
		if fenced != 4 {
			t.Errorf("crash-lag-spike, %s: %d members fenced, want 4", a.Name, fenced)
		}
	}
}

// conversionsTo lists where each of a report's conversions went.
func conversionsTo(cs []sim.Conversion) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.To)
	}
	return out
}
