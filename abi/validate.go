package abi

import (
	"errors"
	"fmt"
)

// ErrInvalidAssignment is wrapped by every error ValidateAssignment returns.
var ErrInvalidAssignment = errors.New("invalid assignment")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidAssignment, fmt.Sprintf(format, args...))
}

// ValidateAssignment checks resp against the validity rules of SPEC.md
// section 6 for req: one entry per member, only known tasks, every task
// active exactly once, a process holding a task at most once, and standbys
// and warm-ups only for stateful tasks.
func ValidateAssignment(req *AssignRequest, resp *AssignResponse) error {
	if len(resp.Members) != len(req.Members) {
		return invalid("%d member entries for %d members (entries beyond the request name unknown members)",
			len(resp.Members), len(req.Members))
	}
	space := NewTaskSpace(req.Subtopologies)
	total := space.Total()
	stateful := statefulTasks(req.Subtopologies, total)
	activeOwner := make([]int32, total) // member index + 1, 0 = none
	// holders[t] lists processes holding task t, kept short (1 + replicas).
	holders := make([][]int32, total)
	for i := range resp.Members {
		ma := &resp.Members[i]
		proc := req.Members[i].Process
		for kind, set := range [3][]int32{ma.Active, ma.Standby, ma.Warmup} {
			if err := checkSet(set, total, kindNames[kind], req.Members[i].ID); err != nil {
				return err
			}
			for _, t := range set {
				if kind == 0 {
					if o := activeOwner[t]; o != 0 {
						return invalid("task %d is active on both %q and %q", t, req.Members[o-1].ID, req.Members[i].ID)
					}
					activeOwner[t] = int32(i) + 1
				} else if !stateful[t] {
					return invalid("member %q has %s task %d of a stateless subtopology", req.Members[i].ID, kindNames[kind], t)
				}
				for _, p := range holders[t] {
					if p == proc {
						return invalid("process %q holds task %d more than once (member %q, as %s)",
							req.Processes[proc], t, req.Members[i].ID, kindNames[kind])
					}
				}
				holders[t] = append(holders[t], proc)
			}
		}
	}
	for t, o := range activeOwner {
		if o == 0 {
			s, p := space.Locate(int32(t))
			return invalid("task %d (subtopology %q partition %d) is not active anywhere", t, req.Subtopologies[s].ID, p)
		}
	}
	return nil
}

var kindNames = [3]string{"active", "standby", "warm-up"}

func checkSet(set []int32, total int32, kind, member string) error {
	for i, t := range set {
		if t < 0 || t >= total {
			return invalid("member %q has unknown %s task %d (only %d tasks)", member, kind, t, total)
		}
		if i > 0 && t <= set[i-1] {
			return invalid("member %q: %s tasks not strictly ascending at %d", member, kind, t)
		}
	}
	return nil
}

func statefulTasks(subs []Subtopology, total int32) []bool {
	out := make([]bool, total)
	var base int32
	for _, s := range subs {
		if s.Stateful {
			for p := int32(0); p < s.Partitions; p++ {
				out[base+p] = true
			}
		}
		base += s.Partitions
	}
	return out
}
