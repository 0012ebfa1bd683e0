package ha

import (
	"slices"
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
	for _, pa := range r.Processes {
		ms := byProc[pa.Process]
		if len(ms) == 1 {
			// The passes give a lone member every task, and the sets are
			// already ascending and apart.
			out[ms[0]] = abi.MemberAssignment{Active: pa.Active, Standby: pa.Standby, Warmup: pa.Warmup}
			continue
		}
		slices.SortFunc(ms, func(a, b int) int { return strings.Compare(req.Members[a].ID, req.Members[b].ID) })
		sp := splitter{req: req, out: out, members: ms, load: make([]int, len(ms))}
		var statefulActive, stateless []int32
		for _, t := range pa.Active {
			if stateful[t] {
				statefulActive = append(statefulActive, t)
			} else {
				stateless = append(stateless, t)
			}
		}
		sp.pass(statefulActive, func(ma *abi.MemberAssignment, t int32) { ma.Active = append(ma.Active, t) }, true)
		replicas := mergeSorted(pa.Standby, pa.Warmup)
		sp.pass(replicas, func(ma *abi.MemberAssignment, t int32) {
			if has(pa.Warmup, t) {
				ma.Warmup = append(ma.Warmup, t)
			} else {
				ma.Standby = append(ma.Standby, t)
			}
		}, true)
		sp.pass(stateless, func(ma *abi.MemberAssignment, t int32) { ma.Active = append(ma.Active, t) }, false)
	}
	for i := range out {
		for _, set := range [][]int32{out[i].Active, out[i].Standby, out[i].Warmup} {
			slices.Sort(set) // tasks are unique in a set
		}
	}
	return out
}

type splitter struct {
	req     *abi.AssignRequest
	out     []abi.MemberAssignment
	members []int // request indices, by member id
	load    []int // tasks given so far, per position in members
}

func (sp *splitter) pass(tasks []int32, give func(*abi.MemberAssignment, int32), stateful bool) {
	if len(tasks) == 0 {
		return
	}
	share := (len(tasks) + len(sp.members) - 1) / len(sp.members)
	taken := make([]bool, len(tasks))
	got := make([]int, len(sp.members))
	for k, mi := range sp.members {
		for i, t := range tasks {
			if !taken[i] && got[k] < share && heldBefore(&sp.req.Members[mi], t, stateful) {
				taken[i] = true
				got[k]++
				sp.load[k]++
				give(&sp.out[mi], t)
			}
		}
	}
	for i, t := range tasks {
		if taken[i] {
			continue
		}
		best := 0
		for k := range sp.members {
			if sp.load[k] < sp.load[best] {
				best = k
			}
		}
		sp.load[best]++
		give(&sp.out[sp.members[best]], t)
	}
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
	os := m.TaskOffsets
	lo, hi := 0, len(os) // sort.Search without a closure call per probe
	for lo < hi {
		if mid := int(uint(lo+hi) >> 1); os[mid].Task < t {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo < len(os) && os[lo].Task == t && os[lo].Offset >= 0
}

func mergeSorted(a, b []int32) []int32 {
	out := make([]int32, 0, len(a)+len(b))
	out = append(out, a...)
	out = append(out, b...)
	slices.Sort(out)
	return out
}
