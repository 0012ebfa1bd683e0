package ha

import (
	"slices"
	"sort"
	"strings"

	"github.com/coordhost/coordhost/abi"
)

// splitOverMembers distributes each process's tasks over its members (the
// stream threads), after the shape of Kafka's assignTasksToThreads: three
// passes (stateful actives, standbys and warm-ups, stateless actives), in
// each a member first keeps tasks it held before (as anything, or state on
// disk) up to an even share, and the rest go to the least-loaded member.
// Members are visited in member id order, so the result does not depend on
// the order of the request's member list.
func splitOverMembers(req *abi.AssignRequest, r *Result, stateful []bool) []abi.MemberAssignment {
	out := make([]abi.MemberAssignment, len(req.Members))
	// byProc[p] lists process p's members, in request order; all lists
	// share one array (counted first).
	byProc := make([][]int, len(req.Processes))
	counts := make([]int, len(req.Processes))
	for i := range req.Members {
		counts[req.Members[i].Process]++
	}
	all, at := make([]int, len(req.Members)), 0
	for p, n := range counts {
		byProc[p] = all[at : at : at+n]
		at += n
	}
	for i := range req.Members {
		byProc[req.Members[i].Process] = append(byProc[req.Members[i].Process], i)
	}
	sp := splitter{req: req, out: out}
	var nActive, nReplicas int // of processes with more than one member
	for _, pa := range r.Processes {
		if len(byProc[pa.Process]) > 1 {
			nActive += len(pa.Active)
			nReplicas += len(pa.Standby) + len(pa.Warmup)
		}
	}
	sp.actives, sp.replicas = make([]int32, nActive), make([]int32, nReplicas)
	for _, pa := range r.Processes {
		ms := byProc[pa.Process]
		if len(ms) == 1 {
			// The passes give a lone member every task, and the sets are
			// already ascending and apart.
			out[ms[0]] = abi.MemberAssignment{Active: pa.Active, Standby: pa.Standby, Warmup: pa.Warmup}
			continue
		}
		slices.SortFunc(ms, func(a, b int) int { return strings.Compare(req.Members[a].ID, req.Members[b].ID) })
		sp.split(ms, pa, stateful)
	}
	return out
}

// The member sets a task can go to.
const (
	setActive = iota
	setStandby
	setWarmup
)

// gift is one decision of the passes: member position k gets task t in set.
type gift struct {
	k, set int32
	t      int32
}

// splitter runs the passes of one process at a time; its buffers serve
// every process of a call.
type splitter struct {
	req     *abi.AssignRequest
	out     []abi.MemberAssignment
	members []int  // request indices, by member id
	load    []int  // tasks given so far, per position in members
	got     []int  // tasks kept in the current pass, per position
	taken   []bool // per task of the current pass
	given   []gift // the process's decisions, in order
	counts  [][3]int32
	tasks   []int32 // stateful actives, then stateless, then replicas
	// actives and replicas are cut into the members' sets, process by
	// process.
	actives, replicas []int32
}

// split runs the three passes for the process of pa over its members ms
// (by member id), then lays each member's sets out in sp.actives and
// sp.replicas, ascending.
func (sp *splitter) split(ms []int, pa ProcessAssignment, stateful []bool) {
	sp.members, sp.given = ms, sp.given[:0]
	sp.load = resize(sp.load, len(ms))
	sp.tasks = sp.tasks[:0]
	for _, t := range pa.Active {
		if stateful[t] {
			sp.tasks = append(sp.tasks, t)
		}
	}
	nStateful := len(sp.tasks)
	for _, t := range pa.Active {
		if !stateful[t] {
			sp.tasks = append(sp.tasks, t)
		}
	}
	nActive := len(sp.tasks)
	sp.tasks = append(append(sp.tasks, pa.Standby...), pa.Warmup...)
	replicas := sp.tasks[nActive:]
	slices.Sort(replicas)
	sp.pass(sp.tasks[:nStateful], true, false, nil)
	sp.pass(replicas, true, true, pa.Warmup)
	sp.pass(sp.tasks[nStateful:nActive], false, false, nil)

	sp.counts = resize(sp.counts, len(ms))
	for _, g := range sp.given {
		sp.counts[g.k][g.set]++
	}
	for k, mi := range ms {
		n := sp.counts[k]
		ma := &sp.out[mi]
		ma.Active, sp.actives = sp.actives[:0:n[setActive]], sp.actives[n[setActive]:]
		ma.Standby, sp.replicas = sp.replicas[:0:n[setStandby]], sp.replicas[n[setStandby]:]
		ma.Warmup, sp.replicas = sp.replicas[:0:n[setWarmup]], sp.replicas[n[setWarmup]:]
	}
	for _, g := range sp.given {
		ma := &sp.out[ms[g.k]]
		switch g.set {
		case setActive:
			ma.Active = append(ma.Active, g.t)
		case setStandby:
			ma.Standby = append(ma.Standby, g.t)
		default:
			ma.Warmup = append(ma.Warmup, g.t)
		}
	}
	for _, mi := range ms {
		ma := &sp.out[mi]
		slices.Sort(ma.Active) // tasks are unique in a set
		slices.Sort(ma.Standby)
		slices.Sort(ma.Warmup)
	}
}

// resize returns b with length n, zeroed, reusing its memory.
func resize[T any](b []T, n int) []T {
	b = slices.Grow(b[:0], n)[:n]
	clear(b)
	return b
}

// pass gives tasks to the members: first each member, in order, keeps the
// tasks it held before up to an even share, then each remaining task goes
// to the least-loaded member (the first of equals). Replicas go to the
// warm-up set when warm holds them, else to standby; other tasks to active.
func (sp *splitter) pass(tasks []int32, stateful, replicas bool, warm []int32) {
	if len(tasks) == 0 {
		return
	}
	share := (len(tasks) + len(sp.members) - 1) / len(sp.members)
	sp.taken = resize(sp.taken, len(tasks))
	sp.got = resize(sp.got, len(sp.members))
	for k, mi := range sp.members {
		for i, t := range tasks {
			if !sp.taken[i] && sp.got[k] < share && heldBefore(&sp.req.Members[mi], t, stateful) {
				sp.taken[i] = true
				sp.got[k]++
				sp.give(k, t, replicas, warm)
			}
		}
	}
	for i, t := range tasks {
		if sp.taken[i] {
			continue
		}
		best := 0
		for k := range sp.members {
			if sp.load[k] < sp.load[best] {
				best = k
			}
		}
		sp.give(best, t, replicas, warm)
	}
}

func (sp *splitter) give(k int, t int32, replicas bool, warm []int32) {
	sp.load[k]++
	set := int32(setActive)
	if replicas {
		set = setStandby
		if has(warm, t) {
			set = setWarmup
		}
	}
	sp.given = append(sp.given, gift{k: int32(k), set: set, t: t})
}

// heldBefore reports whether member m ran task t before: as active, or, for
// stateful tasks, as standby or warm-up or with state on disk.
func heldBefore(m *abi.Member, t int32, stateful bool) bool {
	if has(m.Active, t) {
		return true
	}
	if !stateful {
		return false
	}
	if has(m.Standby, t) || has(m.Warmup, t) {
		return true
	}
	i := sort.Search(len(m.TaskOffsets), func(i int) bool { return m.TaskOffsets[i].Task >= t })
	return i < len(m.TaskOffsets) && m.TaskOffsets[i].Task == t && m.TaskOffsets[i].Offset >= 0
}
