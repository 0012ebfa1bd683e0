package abitest

import (
	"fmt"

	"github.com/coordhost/coordhost/abi"
)

// Figures are the balance and stickiness qualities of one assignment.
type Figures struct {
	Members, Tasks int
	// ActiveMin and ActiveMax are the fewest and most active tasks on a member.
	ActiveMin, ActiveMax int
	// TotalMin and TotalMax count active + standby + warm-up tasks per member.
	TotalMin, TotalMax int
	// Standbys placed, and standbys wanted (stateful tasks x replicas).
	Standbys, StandbysWanted int
	// KeptActive of PrevActive: previously active tasks whose owner is still
	// in the group and that stayed on the same member.
	KeptActive, PrevActive int
}

// Measure computes the figures of resp for req.
func Measure(req *abi.AssignRequest, resp *abi.AssignResponse) Figures {
	f := Figures{Members: len(req.Members), Tasks: int(req.NumTasks()), ActiveMin: -1, TotalMin: -1}
	for _, s := range req.Subtopologies {
		if s.Stateful {
			f.StandbysWanted += int(s.Partitions) * int(req.Configs.NumStandbyReplicas)
		}
	}
	for i, m := range resp.Members {
		a := len(m.Active)
		t := a + len(m.Standby) + len(m.Warmup)
		f.Standbys += len(m.Standby)
		f.ActiveMin, f.ActiveMax = minMax(f.ActiveMin, f.ActiveMax, a)
		f.TotalMin, f.TotalMax = minMax(f.TotalMin, f.TotalMax, t)
		prev := req.Members[i].Active
		f.PrevActive += len(prev)
		f.KeptActive += intersect(prev, m.Active)
	}
	return f
}

func minMax(lo, hi, v int) (int, int) {
	if lo < 0 || v < lo {
		lo = v
	}
	if v > hi {
		hi = v
	}
	return lo, hi
}

// intersect counts common elements of two ascending sets.
func intersect(a, b []int32) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			n++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return n
}

// String renders the figures on one line.
func (f Figures) String() string {
	kept := "n/a"
	if f.PrevActive > 0 {
		kept = fmt.Sprintf("%d/%d (%.0f%%)", f.KeptActive, f.PrevActive, 100*float64(f.KeptActive)/float64(f.PrevActive))
	}
	return fmt.Sprintf("members=%d tasks=%d active/member=%d..%d total/member=%d..%d standbys=%d/%d kept=%s",
		f.Members, f.Tasks, f.ActiveMin, f.ActiveMax, f.TotalMin, f.TotalMax, f.Standbys, f.StandbysWanted, kept)
}
