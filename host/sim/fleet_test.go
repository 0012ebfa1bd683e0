package sim_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/host/sim"
)

// fleetOf replays testdata/sim's three scenarios with the built-ins.
func fleetOf(t *testing.T) (*sim.Fleet, []*sim.Report) {
	t.Helper()
	var reports []*sim.Report
	for _, name := range []string{"leave.yaml", "rolling-restart.yaml", "scale-out.yaml"} {
		reports = append(reports, sim.Run(decode(t, name, readScenario(t, name)), builtins))
	}
	f, err := sim.NewFleet(reports)
	if err != nil {
		t.Fatal(err)
	}
	return f, reports
}

// TestFleetSumsTheGroups: the fleet's totals are the sums of its groups'
// reports, and "fewest unavailable" counts each group for the assignor
// whose unavailable task-seconds were lowest there — worked out here from
// the reports themselves, figure by figure.
func TestFleetSumsTheGroups(t *testing.T) {
	f, reports := fleetOf(t)
	if len(f.Totals) != len(builtins) {
		t.Fatalf("%d totals for %d assignors", len(f.Totals), len(builtins))
	}
	for j, ft := range f.Totals {
		var unavailable float64
		var moved, cold, warm, rebalances, best, notSettled int
		var restored int64
		for _, r := range reports {
			a := r.Assignors[j]
			unavailable += a.UnavailableTaskS
			moved += a.Totals.TasksMoved
			cold += a.Totals.Cold
			warm += a.Totals.Warm
			rebalances += a.Totals.Rebalances
			restored += a.Totals.RecordsRestored
			if a.Totals.SettleS < 0 {
				notSettled++
			}
			lowest := true
			for _, o := range r.Assignors {
				lowest = lowest && a.UnavailableTaskS <= o.UnavailableTaskS
			}
			if lowest {
				best++
			}
		}
		if ft.Name != builtins[j].Name || ft.Groups != 3 || ft.Stopped != 0 || ft.UnavailableTaskS != unavailable ||
			ft.TasksMoved != moved || ft.Cold != cold || ft.Warm != warm || ft.Rebalances != rebalances ||
			ft.RecordsRestored != restored || ft.Best != best || ft.NotSettled != notSettled {
			t.Errorf("%s: fleet totals %+v; summed from the groups: unavailable %v moved %d cold %d warm %d rebalances %d restored %d best %d not settled %d",
				ft.Name, ft, unavailable, moved, cold, warm, rebalances, restored, best, notSettled)
		}
		if unavailable == 0 || moved == 0 {
			t.Errorf("%s: the fleet's scenarios cost nothing (%v task-s, %d moved): the test would check nothing", ft.Name, unavailable, moved)
		}
	}
	// On scale-out.yaml's large stores, HA avoids sticky's cold
	// hand-overs (docs/AB-TESTING.md): the fleet must say so too.
	if f.Totals[1].Cold >= f.Totals[0].Cold {
		t.Errorf("ha's cold hand-overs %d not below sticky's %d over the fleet", f.Totals[1].Cold, f.Totals[0].Cold)
	}
}

// TestFleetDeterministicAndSelfContained: the same fleet twice gives the
// same bytes; the page holds each group's report and fetches nothing.
func TestFleetDeterministicAndSelfContained(t *testing.T) {
	a, _ := fleetOf(t)
	b, _ := fleetOf(t)
	if !bytes.Equal(a.JSON(), b.JSON()) || !bytes.Equal(a.HTML(), b.HTML()) {
		t.Fatal("two replays of the same fleet differ")
	}
	var back sim.Fleet
	if err := json.Unmarshal(a.JSON(), &back); err != nil || len(back.Groups) != 3 || back.Totals[0].Groups != 3 {
		t.Fatalf("JSON: %v %+v", err, back.Totals)
	}
	page := string(a.HTML())
	for _, want := range []string{"<h1>Fleet of 3 groups</h1>", "<h1>Group leave</h1>", "<h1>Group rolling-restart</h1>", "<h1>Group scale-out</h1>", "fewest unavailable in"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	for _, bad := range []string{"http://", "https://", "<script", "src="} {
		if strings.Contains(strings.ReplaceAll(page, `xmlns="http://www.w3.org/2000/svg"`, ""), bad) {
			t.Errorf("page holds %q", bad)
		}
	}
}

// TestFleetRefusesMismatchedGroups: groups replayed with other assignors,
// or two groups of one name, cannot be summed.
func TestFleetRefusesMismatchedGroups(t *testing.T) {
	leave := func() *sim.Report { return sim.Run(decode(t, "leave.yaml", readScenario(t, "leave.yaml")), builtins) }
	rr := sim.Run(decode(t, "rolling-restart.yaml", readScenario(t, "rolling-restart.yaml")), builtins[:1])
	swapped := sim.Run(decode(t, "rolling-restart.yaml", readScenario(t, "rolling-restart.yaml")), []sim.Assignor{builtins[1], builtins[0]})
	for _, c := range []struct {
		groups []*sim.Report
		want   string
	}{
		{nil, "at least one group"},
		{[]*sim.Report{leave(), leave()}, `two groups of the fleet are named "leave"`},
		{[]*sim.Report{leave(), rr}, "has 1 assignors"},
		{[]*sim.Report{leave(), swapped}, "assignor 0 is ha native"},
	} {
		if _, err := sim.NewFleet(c.groups); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("want %q, got %v", c.want, err)
		}
	}
}
