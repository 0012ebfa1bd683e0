package abi

import (
	"errors"
	"fmt"
	"sync"
)

// ErrInvalidAssignment is wrapped by every error ValidateAssignment returns.
var ErrInvalidAssignment = errors.New("invalid assignment")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidAssignment, fmt.Sprintf(format, args...))
}

// validateScratch is the per-call working memory of ValidateAssignment,
// pooled: the host validates every plugin response, and allocating
// task-sized arrays (and a holder list per task) per call was most of its
// own cost.
type validateScratch struct {
	owner  []int32 // per task: active member index + 1, 0 = none
	holder []int32 // per task: process index + 1 of the last process seen holding it
	byProc []int32 // member indices grouped by process (counting sort)
	start  []int32 // per process: first position in byProc; then its end
}

var validatePool = sync.Pool{New: func() any { return new(validateScratch) }}

// grow returns s[:n] cleared, reallocating only when s is too small.
func grow(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// ValidateAssignment checks resp against the validity rules of SPEC.md
// section 6 for req: one entry per member, only known tasks, every task
// active exactly once, a process holding a task at most once, and standbys
// and warm-ups only for stateful tasks. It allocates nothing per call for a
// valid response (its working memory is pooled).
func ValidateAssignment(req *AssignRequest, resp *AssignResponse) error {
	if len(resp.Members) != len(req.Members) {
		return invalid("%d member entries for %d members (entries beyond the request name unknown members)",
			len(resp.Members), len(req.Members))
	}
	sc := validatePool.Get().(*validateScratch)
	defer validatePool.Put(sc)
	total := req.NumTasks()
	procs := len(req.Processes)
	// Members grouped by process (counting sort), so that rule 4 needs one
	// stamp per task — the process index + 1 that last held it — instead
	// of a list of holders; every rule is checked in the same pass.
	sc.start = grow(sc.start, procs+1)
	for i := range req.Members {
		p := req.Members[i].Process
		if p < 0 || int(p) >= procs {
			return invalid("member %q has process index %d, only %d processes", req.Members[i].ID, p, procs)
		}
		sc.start[p+1]++
	}
	for p := 1; p <= procs; p++ {
		sc.start[p] += sc.start[p-1]
	}
	sc.byProc = grow(sc.byProc, len(req.Members))
	for i := range req.Members { // start[p] ends as the end of process p's run
		p := req.Members[i].Process
		sc.byProc[sc.start[p]] = int32(i)
		sc.start[p]++
	}
	owner := grow(sc.owner, int(total))
	holder := grow(sc.holder, int(total))
	sc.owner, sc.holder = owner, holder
	for _, i := range sc.byProc {
		ma, m := &resp.Members[i], &req.Members[i]
		stamp := m.Process + 1
		for kind, set := range [3][]int32{ma.Active, ma.Standby, ma.Warmup} {
			if err := checkSet(set, total, kindNames[kind], m.ID); err != nil {
				return err
			}
			if kind > 0 {
				if err := checkStateful(req.Subtopologies, set, kindNames[kind], m.ID); err != nil {
					return err
				}
			}
			for _, t := range set {
				if kind == 0 {
					if o := owner[t]; o != 0 {
						return invalid("task %d is active on both %q and %q", t, req.Members[o-1].ID, m.ID)
					}
					owner[t] = i + 1
				}
				if holder[t] == stamp {
					return invalid("process %q holds task %d more than once (member %q, as %s)",
						req.Processes[m.Process], t, m.ID, kindNames[kind])
				}
				holder[t] = stamp
			}
		}
	}
	for t, o := range owner {
		if o == 0 {
			space := NewTaskSpace(req.Subtopologies)
			s, p := space.Locate(int32(t))
			return invalid("task %d (subtopology %q partition %d) is not active anywhere", t, req.Subtopologies[s].ID, p)
		}
	}
	return nil
}

var kindNames = [3]string{"active", "standby", "warm-up"}

func checkSet(set []int32, total int32, kind, member string) error {
	next := int32(0)
	for _, t := range set {
		if uint32(t) >= uint32(total) {
			return invalid("member %q has unknown %s task %d (only %d tasks)", member, kind, t, total)
		}
		if t < next {
			return invalid("member %q: %s tasks not strictly ascending at %d", member, kind, t)
		}
		next = t + 1
	}
	return nil
}

// checkStateful reports a task of an ascending set that belongs to a
// stateless subtopology, walking the set and the subtopology table together.
func checkStateful(subs []Subtopology, set []int32, kind, member string) error {
	if len(set) == 0 {
		return nil
	}
	s, base := 0, int32(0)
	for _, t := range set {
		for t >= base+subs[s].Partitions {
			base += subs[s].Partitions
			s++
		}
		if !subs[s].Stateful {
			return invalid("member %q has %s task %d of a stateless subtopology", member, kind, t)
		}
	}
	return nil
}
