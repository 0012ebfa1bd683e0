package sim_test

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/host/sim"
)

func readRoll(t *testing.T) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "scenarios", "migration-roll.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestCoreEngineMigrationRoll replays the migration roll (classic ->
// streams -> classic, coordhost restarting in the middle) on both
// engines. Every rebalance of the model has its counterpart on core six
// seconds later at most (the first classic generation waits for the
// initial rebalance delay, extended once as Kafka extends it while
// members join), with the same members joining and leaving
// and the same conversions; what core adds is written down in
// docs/AB-TESTING.md ("The core engine"): a streams instance's two
// threads join in two heartbeats, a classic member that gave up tasks
// rejoins (tasks-revoked), HA's warm-ups are promoted by probes. Two core
// runs give the same bytes.
func TestCoreEngineMigrationRoll(t *testing.T) {
	model := sim.Run(decode(t, "migration-roll", readRoll(t)), builtins)
	real, err := sim.RunCore(decode(t, "migration-roll", readRoll(t)), builtins)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range model.Assignors {
		c := real.Assignors[i]
		t.Logf("%-6s model: rebalances %d moved %d warm %d cold %d unavailable %v settled %v; core: %d %d %d %d %v %v", m.Name,
			m.Totals.Rebalances, m.Totals.TasksMoved, m.Totals.Warm, m.Totals.Cold, m.UnavailableTaskS, m.Totals.SettledAtS,
			c.Totals.Rebalances, c.Totals.TasksMoved, c.Totals.Warm, c.Totals.Cold, c.UnavailableTaskS, c.Totals.SettledAtS)
		if c.Error != "" || c.Totals.SettledAtS < 0 {
			t.Fatalf("%s on core: error %q, settled at %v", c.Name, c.Error, c.Totals.SettledAtS)
		}
		for _, rb := range m.Rebalances {
			if got := reasonsWithin(c, rb.AtS, rb.AtS+6); !slices.Equal(got, sorted(rb.Reasons)) {
				t.Errorf("%s: the model's rebalance at %v s has reasons %v, core's from then to 6 s later %v", m.Name, rb.AtS, rb.Reasons, got)
			}
		}
		// The same conversions, each direction once, within the few
		// seconds a classic join takes of each other: back to classic
		// once the last instance is back (its streams members' process
		// returns on the classic protocol with the same process id, so
		// it is not awaited any longer) and its group has settled. On
		// core that is at most three classic heartbeat intervals
		// (classic_rejoin_ms, 3 s) after the return: one for every
		// classic member to hear of the return's target, one for the
		// revoking members' rejoin, one for the Heartbeat that finds the
		// group settled; where in those intervals it falls depends on
		// the members' heartbeat phases.
		if mc, cc := conversionsTo(m.Conversions), conversionsTo(c.Conversions); !slices.Equal(mc, cc) || !slices.Equal(mc, []string{"streams", "classic"}) {
			t.Errorf("%s: conversions model %v, core %v; want [streams classic] on both", m.Name, m.Conversions, c.Conversions)
		} else if back, last := c.Conversions[1].AtS, 910.0; math.Abs(m.Conversions[1].AtS-back) > 6 || back < last || back > last+9 {
			t.Errorf("%s: back to classic at %v s in the model, %v s on core; want them within 6 s of each other and core's within 9 s of the last return at %v s", m.Name, m.Conversions[1].AtS, back, last)
		}
		epochs := slices.IsSortedFunc(c.Rebalances, func(a, b sim.Rebalance) int { return int(a.Epoch - b.Epoch) })
		if !epochs || c.Totals.Rebalances < m.Totals.Rebalances {
			t.Errorf("%s on core: epochs in order %v, %d rebalances against the model's %d", c.Name, epochs, c.Totals.Rebalances, m.Totals.Rebalances)
		}
	}
	again, err := sim.RunCore(decode(t, "migration-roll", readRoll(t)), builtins)
	if err != nil || !bytes.Equal(real.JSON(), again.JSON()) || !bytes.Equal(real.HTML(), again.HTML()) {
		t.Fatalf("two core runs of the migration roll differ (%v)", err)
	}
}

// reasonsWithin lists, sorted, the event reasons of a's rebalances from
// from to to seconds (the core engine's own reasons left out).
func reasonsWithin(a sim.AssignorReport, from, to float64) []string {
	var out []string
	for _, rb := range a.Rebalances {
		if rb.AtS >= from && rb.AtS <= to {
			for _, r := range rb.Reasons {
				if r != "probe" && r != "tasks-revoked" {
					out = append(out, r)
				}
			}
		}
	}
	return sorted(out)
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestCoreEngineCoordhostRestart replays testdata/sim/coordhost-restart.yaml
// on both engines: b crashes at 10 s and coordhost is down from 12 s to
// 40 s. The new coordinator replays the old one's records and restarts
// every session timer when it loads, so core fences b a session timeout
// (45 s) after 40 s, not after its last heartbeat, as the model says; the
// group's epochs go on from the replayed state (nobody joins again), and
// without the restart b is fenced 30 s sooner.
func TestCoreEngineCoordhostRestart(t *testing.T) {
	file := "coordhost-restart.yaml"
	without := strings.Replace(string(readScenario(t, file)), "  - {at_s: 12, coordhost_restart: 28}\n", "", 1)
	var fenced [2]float64
	for i, data := range []string{without, string(readScenario(t, file))} {
		r, err := sim.RunCore(decode(t, file, []byte(data)), builtins[:1])
		if err != nil {
			t.Fatal(err)
		}
		a := r.Assignors[0]
		if a.Error != "" || len(a.Rebalances) != 2 || !slices.Equal(a.Rebalances[1].Reasons, []string{"member-fenced:b"}) ||
			a.Rebalances[1].Epoch <= a.Rebalances[0].Epoch {
			t.Fatalf("restart %v: error %q, rebalances %+v", i == 1, a.Error, a.Rebalances)
		}
		fenced[i] = a.Rebalances[1].AtS
	}
	model := sim.Run(decode(t, file, readScenario(t, file)), builtins[:1])
	t.Logf("b fenced at %v s on core without the restart, %v s with it; model %v s", fenced[0], fenced[1], fencedAt(model.Assignors[0]))
	if m := fencedAt(model.Assignors[0]); fenced[1] < 85 || fenced[1] > m+2 || fenced[0] > fenced[1]-25 {
		t.Errorf("b fenced at %v s on core without the restart, %v s with it; the model says %v s", fenced[0], fenced[1], m)
	}
}

// TestCoreEngineClassicOnly: a group of classic members only stays a
// classic group: its leader runs the assignor, and a member that leaves
// hands its tasks over at the next generation, which the other member
// joins when its heartbeat (classic_rejoin_ms) tells it to: the same
// figures as the model's.
func TestCoreEngineClassicOnly(t *testing.T) {
	sc := leaveScenario(t, "{at_s: 0, join: a}", "{at_s: 0, join: a, protocol: classic}", "{at_s: 0, join: b}", "{at_s: 0, join: b, protocol: classic}")
	model := sim.Run(sc, builtins)
	r, err := sim.RunCore(leaveScenario(t, "{at_s: 0, join: a}", "{at_s: 0, join: a, protocol: classic}", "{at_s: 0, join: b}", "{at_s: 0, join: b, protocol: classic}"), builtins)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range r.Assignors {
		m := model.Assignors[i]
		t.Logf("%s: core %+v %v; model %+v %v", a.Name, a.Totals, a.UnavailableTaskS, m.Totals, m.UnavailableTaskS)
		if a.Error != "" || len(a.Rebalances) != 2 || !slices.Equal(a.Rebalances[1].Reasons, []string{"member-left:b"}) ||
			a.Totals.TasksMoved != m.Totals.TasksMoved || a.Totals.Cold != 2 || a.UnavailableTaskS != m.UnavailableTaskS {
			t.Errorf("%s: error %q, rebalances %+v; model %+v", a.Name, a.Error, a.Rebalances, m.Totals)
		}
		for _, rb := range a.Rebalances {
			if strings.HasPrefix(strings.Join(rb.Reasons, ","), "group-converted") {
				t.Errorf("%s: a classic group converted: %v", a.Name, rb.Reasons)
			}
		}
	}
}

// TestCoreEngineSessionsAndLostLeaves: two behaviours of the real
// coordinator the model leaves out (docs/AB-TESTING.md, "The core
// engine"). A classic member b that crashed at 10 s is fenced a session
// timeout after the streams member c converted the group at 20 s, which
// schedules every session afresh, not after its crash; and a leave sent
// while coordhost is down (8 s to 20 s) is lost, so core fences its
// member a session timeout after coordhost is back, where the model
// applies the leave then.
func TestCoreEngineSessionsAndLostLeaves(t *testing.T) {
	for _, tc := range []struct {
		replace        []string
		model, core    string
		modelAt, minAt float64
	}{
		{[]string{"duration_s: 60", "duration_s: 120", "{at_s: 0, join: a}", "{at_s: 0, join: a, protocol: classic}",
			"{at_s: 0, join: b}", "{at_s: 0, join: b, protocol: classic}", "{at_s: 10, leave: b}", "{at_s: 10, crash: b}\n  - {at_s: 20, join: c}"},
			"member-fenced:b", "member-fenced:b", 55, 65},
		{[]string{"duration_s: 60", "duration_s: 120", "{at_s: 10, leave: b}", "{at_s: 8, coordhost_restart: 12}\n  - {at_s: 10, leave: b}"},
			"member-left:b", "member-fenced:b", 20, 65},
	} {
		model := sim.Run(leaveScenario(t, tc.replace...), builtins[:1]).Assignors[0]
		r, err := sim.RunCore(leaveScenario(t, tc.replace...), builtins[:1])
		if err != nil {
			t.Fatal(err)
		}
		real := r.Assignors[0]
		m, c := reasonAt(model, tc.model), reasonAt(real, tc.core)
		t.Logf("%s at %v s on the model, %s at %v s on core", tc.model, m, tc.core, c)
		if real.Error != "" || m != tc.modelAt || c < tc.minAt || c > tc.minAt+2 {
			t.Errorf("%v: %s at %v s on the model, %s at %v s on core (error %q)", tc.replace, tc.model, m, tc.core, c, real.Error)
		}
	}
}

// reasonAt is when a target with reason was installed, -1: never.
func reasonAt(a sim.AssignorReport, reason string) float64 {
	for _, rb := range a.Rebalances {
		if slices.Contains(rb.Reasons, reason) {
			return rb.AtS
		}
	}
	return -1
}
