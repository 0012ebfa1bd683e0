package metrics_test

import (
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
	"github.com/coordhost/coordhost/abi/metrics"
)

// rotate is a deliberately restless assignor: member i takes over member
// i+1's previous active tasks and standbys, and tasks nobody held go round
// robin, so that every conformance case has kept, moved and new tasks.
func rotate(req *abi.AssignRequest) *abi.AssignResponse {
	n := len(req.Members)
	resp := &abi.AssignResponse{Members: make([]abi.MemberAssignment, n), NextProbeMs: -1}
	held := make([]bool, req.NumTasks())
	for i := range req.Members {
		next := &req.Members[(i+1)%n]
		resp.Members[i] = abi.MemberAssignment{Active: next.Active, Standby: next.Standby}
		for _, t := range next.Active {
			held[t] = true
		}
	}
	for t, h := range held {
		if !h {
			m := &resp.Members[t%n]
			m.Active = append(m.Active, int32(t))
		}
	}
	return resp
}

// TestAgreesWithConformanceFigures: on every conformance case the report
// adds up (each target active task is kept, moved or new; each hand-over
// warm or cold) and agrees with the conformance kit's own figures.
func TestAgreesWithConformanceFigures(t *testing.T) {
	for _, c := range abitest.Cases(false) {
		if len(c.Req.Members) == 0 {
			continue
		}
		resp := rotate(c.Req)
		r, err := metrics.Measure(c.Req, resp, metrics.Options{})
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		f := abitest.Measure(c.Req, resp)
		mv := r.Movement
		switch {
		case mv.Kept+mv.Moved+mv.New != r.Tasks:
			t.Errorf("%s: kept %d + moved %d + new %d != %d tasks", c.Name, mv.Kept, mv.Moved, mv.New, r.Tasks)
		case mv.Warm+mv.Cold != mv.HandOvers || mv.HandOvers > mv.MovedProcess+mv.New || mv.MovedProcess > mv.Moved ||
			mv.ColdUnknownLag > mv.Cold:
			t.Errorf("%s: movement does not add up: %+v", c.Name, mv)
		case mv.Kept != f.KeptActive:
			t.Errorf("%s: kept %d, the kit counts %d", c.Name, mv.Kept, f.KeptActive)
		case r.Balance.ActivePerMember.Min != f.ActiveMin || r.Balance.ActivePerMember.Max != f.ActiveMax ||
			r.Balance.AllPerMember.Min != f.TotalMin || r.Balance.AllPerMember.Max != f.TotalMax:
			t.Errorf("%s: balance %+v, the kit's figures %v", c.Name, r.Balance, f)
		case r.Standbys.Placed != f.Standbys || r.Standbys.Wanted != f.StandbysWanted:
			t.Errorf("%s: standbys %+v, the kit's figures %v", c.Name, r.Standbys, f)
		}
		hs, err := metrics.HandOvers(c.Req, resp, metrics.Options{})
		if err != nil || len(hs) != mv.HandOvers {
			t.Errorf("%s: %d hand-overs listed (%v), %d counted", c.Name, len(hs), err, mv.HandOvers)
		}
		if mv.Moved == 0 && len(c.Req.Members) > 1 && f.PrevActive > 0 {
			t.Errorf("%s: the rotation moved nothing: %+v", c.Name, mv)
		}
	}
}
