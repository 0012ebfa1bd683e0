package experiment

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"

	"github.com/coordhost/coordhost/abi/metrics"
	"github.com/coordhost/coordhost/host/config"
)

// TestSplitIsStable: a group's arm depends on its id and the percentage
// alone (the same answer on every call, i.e. after a restart, and
// whatever other keys change); raising the percentage only adds groups
// to the candidate arm; the share of groups in it is close to the
// percentage.
func TestSplitIsStable(t *testing.T) {
	a := &Runtime{arms: map[string]string{}}
	inArm := func(group string, percent int64, timeoutMs int32) bool {
		g := config.Group{StreamsAssignorName: "sticky", StreamsAssignorCandidate: "ha", StreamsAssignorCandidatePercent: percent, StreamsAssignorTimeoutMs: timeoutMs}
		got := a.Split(group, g)
		if in := got.StreamsAssignorName == "ha"; in != (a.arms[group] == armCandidate) {
			t.Fatalf("group %s: assignor %q but arm %q", group, got.StreamsAssignorName, a.arms[group])
		}
		return got.StreamsAssignorName == "ha"
	}
	n := 0
	for i := 0; i < 2000; i++ {
		group := fmt.Sprintf("orders-%d", i)
		at10, at30 := inArm(group, 10, 1000), inArm(group, 30, 1000)
		if at10 && !at30 {
			t.Fatalf("%s left the candidate arm when the share rose from 10 to 30 %%", group)
		}
		if inArm(group, 30, 5000) != at30 || inArm(group, 30, 1000) != at30 {
			t.Fatalf("%s changed arm without a change of its share", group)
		}
		if inArm(group, 0, 1000) || !inArm(group, 100, 1000) {
			t.Fatalf("%s: 0 %% must put no group in the candidate arm, 100 %% every group", group)
		}
		if at30 {
			n++
		}
	}
	if n < 2000*25/100 || n > 2000*35/100 {
		t.Fatalf("%d of 2000 groups in the candidate arm at 30 %%", n)
	}
	a.Split("plain", config.Group{StreamsAssignorName: "sticky"})
	if _, ok := a.arms["plain"]; ok {
		t.Fatal("a group without a candidate is in an arm")
	}
}

// TestSplitReport: below 20 measured groups in an arm /v1/ab says
// "insufficient data" and compares nothing; with enough it gives each
// figure's mean per arm with a bootstrap interval around it, and the same
// data give the same interval.
func TestSplitReport(t *testing.T) {
	fill := func(perArm int) *Runtime {
		a := New(context.Background(), &sync.WaitGroup{}, Config{Log: slog.New(slog.DiscardHandler)})
		for i := 0; i < perArm; i++ {
			for _, side := range []string{armControl, armCandidate} {
				group := fmt.Sprintf("%s-%d", side, i)
				a.arms[group] = side
				rep := metrics.Report{Movement: metrics.Movement{Moved: 4 + i%3}}
				who := arm{Assignor: "sticky", Role: rolePrimary}
				if side == armCandidate {
					rep.Movement.Moved, who.Assignor = 1+i%2, "ha"
				}
				a.record(group, who, rep, nil)
			}
		}
		return a
	}
	r := fill(19).Report().Split
	if r == nil || r.Status != "insufficient data" || len(r.Arms) != 2 || r.Arms[0].Groups != 19 || r.Arms[1].Groups != 19 || r.Arms[0].Figures != nil {
		t.Fatalf("19 groups per arm: %+v", r)
	}
	a := fill(20)
	r = a.Report().Split
	if r.Status != "ok" || r.Arms[0].Arm != armControl || r.Arms[1].Arm != armCandidate || r.Arms[1].Assignors[0] != "ha" {
		t.Fatalf("20 groups per arm: %+v", r)
	}
	moved := func(s ArmSummary) Figure {
		for _, f := range s.Figures {
			if f.Name == "tasks_moved" {
				return f
			}
		}
		t.Fatalf("no tasks_moved figure: %+v", s)
		return Figure{}
	}
	c, d := moved(r.Arms[0]), moved(r.Arms[1])
	if c.Mean != 4.95 || d.Mean != 1.5 || !(c.Low < c.Mean && c.Mean < c.High) || !(d.Low < d.Mean && d.Mean < d.High) || d.High >= c.Low {
		t.Fatalf("control %+v, candidate %+v", c, d)
	}
	if again := moved(a.Report().Split.Arms[0]); again != c {
		t.Fatalf("the same data gave another interval: %+v then %+v", c, again)
	}
}
