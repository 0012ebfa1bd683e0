package sticky

import (
	"math"
	"sync"

	"github.com/coordhost/coordhost/abi"
)

// state is Kafka's LocalState and ProcessState on dense arrays. Members are
// identified by rank (position in member-id order), processes by their
// index in the request's process table, tasks by abi task index.
type state struct {
	req   *abi.AssignRequest
	parts []int32 // partitions per subtopology
	space abi.TaskSpace
	nt    int32 // tasks

	byRank []int32 // rank -> request member index
	proc   []int32 // rank -> process
	count  []int32 // rank -> tasks assigned (memberToTaskCounts)

	procCap   []int32   // members per process
	procTasks []int32   // tasks assigned per process
	procLoad  []float64 // procTasks / procCap
	procOrder []int32   // processIdToState iteration order
	// members of process p: memOrder[memStart[p]:memStart[p+1]], in the
	// iteration order of the process's memberToTaskCounts HashMap.
	memStart []int32
	memOrder []int32
	mheap    []memberHeap // membersByLoad; q == nil means "not built"

	prevActive []int32 // task -> rank of its previous active owner, or -1
	candStart  []int32 // task -> ranked previous standby candidates
	cand       []int32

	slots    int32   // holder slots per task
	holders  []int32 // task*slots + k -> process holding the task
	holdN    []int32 // task -> holders used
	activeOf []int32 // task -> rank
	standbys []int32 // (task, rank) pairs of assigned standbys

	numStandby                        int32
	totalActive, totalTasks           int32
	membersActiveCap, membersTasksCap int32
	activePerMember, tasksPerMember   int32

	// Scratch kept between runs (states are pooled): a run allocates
	// only its response. Allocation is what costs most in a Go guest.
	bFirst, bLeft                 []bool
	bBuckets                      bucketScratch
	bFill, bMheap, bOrder, bHeap  []int32
	bRemaining, bPolled, bNActive []int32
	bNStandby, bStart, bByTask    []int32
	bCands, bSorted               []candidate
	bKeys                         []uint64
	bMulti                        []int32
	bHashes                       []uint32
	pheap                         procHeap

	// The response of AssignReusing.
	resp                    abi.AssignResponse
	respMembers             []abi.MemberAssignment
	respActive, respStandby []int32
}

var states = sync.Pool{New: func() any { return new(state) }}

// reuse returns buf resized to n zero elements, reallocating only when its
// capacity is too small.
func reuse[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n, n+n/4)
	}
	*buf = (*buf)[:n]
	clear(*buf)
	return *buf
}

// reuseCap returns buf emptied with capacity for n elements.
func reuseCap(buf *[]int32, n int) []int32 {
	if cap(*buf) < n {
		*buf = make([]int32, 0, n+n/4)
	}
	return (*buf)[:0]
}

func fill(s []int32, v int32) {
	for i := range s {
		s[i] = v
	}
}

// reset prepares s for req, reusing its memory; idOrder, if not nil, is
// the members' id order.
func (s *state) reset(req *abi.AssignRequest, idOrder []int32) {
	s.req, s.space, s.numStandby = req, abi.NewTaskSpace(req.Subtopologies), req.Configs.NumStandbyReplicas
	s.nt = s.space.Total()
	s.totalTasks, s.totalActive = 0, 0
	s.standbys = s.standbys[:0]
	s.parts = reuse(&s.parts, len(req.Subtopologies))
	for i, sub := range req.Subtopologies {
		s.parts[i] = sub.Partitions
		s.totalTasks += sub.Partitions
		s.totalActive += sub.Partitions
		if sub.Stateful {
			s.totalTasks += sub.Partitions * s.numStandby
		}
	}
	m := int32(len(req.Members))
	s.membersActiveCap, s.membersTasksCap = m, m
	s.activePerMember = tasksPerMember(s.totalActive, m)
	s.tasksPerMember = tasksPerMember(s.totalTasks, m)
	s.rankMembers(idOrder)
	s.buildProcesses()
	s.buildPrevious()
	s.slots = min(s.numStandby+1, int32(len(req.Processes)))
	s.slots = max(s.slots, 1)
	reuse(&s.holders, int(s.nt)*int(s.slots))
	reuse(&s.holdN, int(s.nt))
	fill(reuse(&s.activeOf, int(s.nt)), -1)
}

// tasksPerMember is computeTasksPerMember: ceil(tasks / members), 0 without members.
func tasksPerMember(tasks, members int32) int32 {
	if members == 0 {
		return 0
	}
	n := tasks / members
	if tasks%members > 0 {
		n++
	}
	return n
}

// rankMembers orders members by id: the port iterates members in that
// order (the parity harness hands Kafka's assignor a sorted member map).
func (s *state) rankMembers(idOrder []int32) {
	ms := s.req.Members
	if idOrder != nil {
		s.byRank = append(s.byRank[:0], idOrder...)
	} else {
		s.byRank = abi.MemberIDOrder(s.byRank, ms, &s.bKeys)
	}
	reuse(&s.proc, len(ms))
	for r, i := range s.byRank {
		s.proc[r] = ms[i].Process
	}
	reuse(&s.count, len(ms))
}

func (s *state) buildProcesses() {
	np := len(s.req.Processes)
	reuse(&s.procCap, np)
	reuse(&s.procTasks, np)
	reuse(&s.procLoad, np)
	first := reuse(&s.bFirst, np)
	seen := s.procOrder[:0] // processes in order of their first member
	for _, p := range s.proc {
		if !first[p] {
			first[p] = true
			seen = append(seen, p)
		}
		s.procCap[p]++
	}
	for p := range s.procLoad {
		s.procLoad[p] = computeLoad(0, s.procCap[p])
	}
	scratch := &s.bBuckets
	scratch.buckets = reuse(&scratch.buckets, max(len(seen), len(s.proc)))[:0]
	s.procOrder = seen
	hashes := reuse(&s.bHashes, max(np, len(s.proc)))
	for _, p := range s.procOrder {
		hashes[p] = javaHashMapSpread(javaStringHash(s.req.Processes[p]))
	}
	hashMapOrder(s.procOrder, hashes, len(s.req.Members), true, scratch)
	// Members per process, in rank order, then in their map's order.
	reuse(&s.memStart, np+1)
	for _, p := range s.proc {
		s.memStart[p+1]++
	}
	for p := 1; p <= np; p++ {
		s.memStart[p] += s.memStart[p-1]
	}
	reuse(&s.memOrder, len(s.proc))
	next := reuse(&s.bFill, np)
	copy(next, s.memStart[:np])
	for r, p := range s.proc {
		s.memOrder[next[p]] = int32(r)
		next[p]++
	}
	// Then by rank: only processes with two or more members need the ids'
	// hashes (no closure per key: an indirect call costs a wasm guest).
	for p := 0; p < np; p++ {
		members := s.memOrder[s.memStart[p]:s.memStart[p+1]]
		if len(members) < 2 {
			continue
		}
		for _, r := range members {
			hashes[r] = javaHashMapSpread(javaStringHash(s.req.Members[s.byRank[r]].ID))
		}
		hashMapOrder(members, hashes, 0, false, scratch)
	}
	reuse(&s.mheap, np)
	reuse(&s.bMheap, len(s.proc))
}

// computeLoad is ProcessState.computeLoad.
func computeLoad(tasks, capacity int32) float64 {
	if capacity <= 0 {
		return -1
	}
	return float64(tasks) / float64(capacity)
}

type candidate struct {
	task, rank  int32
	prevStandby bool
	offset      int64
}

// buildPrevious records previous active owners (a later member in id order
// overwrites an earlier one, as HashMap.put does) and ranks previous
// standby candidates: members currently holding the standby first, then
// members reporting offsets for the task (state on disk, including the
// active owner's own); within each group the highest offset sum first, then
// member order.
func (s *state) buildPrevious() {
	// Slices live in locals throughout: a store through one slice may
	// alias any other's header as far as the compiler knows, so fields
	// would be reloaded at every element (costly in a wasm guest).
	prevActive := reuse(&s.prevActive, int(s.nt))
	fill(prevActive, -1)
	members := s.req.Members
	n := 0
	for i := range members {
		n += len(members[i].Standby) + len(members[i].TaskOffsets)
	}
	cs := reuse(&s.bCands, n)[:0]
	for r, mi := range s.byRank {
		m := &members[mi]
		active, standby, offs := m.Active, m.Standby, m.TaskOffsets
		for _, t := range active {
			prevActive[t] = int32(r)
		}
		// Standby and offset lists are both ascending: merge them.
		j := 0
		for _, t := range standby {
			for j < len(offs) && offs[j].Task < t {
				j++
			}
			var off int64
			if j < len(offs) && offs[j].Task == t {
				off = offs[j].Offset
			}
			cs = append(cs, candidate{task: t, rank: int32(r), prevStandby: true, offset: off})
		}
		j = 0
		for _, o := range offs {
			for j < len(standby) && standby[j] < o.Task {
				j++
			}
			if j == len(standby) || standby[j] != o.Task {
				cs = append(cs, candidate{task: o.Task, rank: int32(r), offset: o.Offset})
			}
		}
	}
	// Group by task with a counting sort that keeps member order, writing
	// the ranks and their sort keys straight into place, then rank the
	// few tasks with more than one candidate: previous standbys first,
	// then by offset sum, highest first; ties keep member order (Java's
	// stable List.sort). Only those tasks are visited again: a loop over
	// every task was a quarter of a small group's run in the wasm guest.
	start := reuse(&s.candStart, int(s.nt)+1)
	multi := s.bMulti[:0]
	for i := range cs {
		t := cs[i].task
		if start[t]++; start[t] == 2 {
			multi = append(multi, t)
		}
	}
	s.bMulti = multi
	for t := 1; t < len(start)-1; t++ { // start[t]: end of task t's group
		start[t] += start[t-1]
	}
	start[len(start)-1] = int32(len(cs))
	cand := reuse(&s.cand, len(cs))
	keys := reuse(&s.bSorted, len(cs))
	for i := len(cs) - 1; i >= 0; i-- { // backwards: start[t] ends at the group's first slot
		c := &cs[i]
		start[c.task]--
		at := start[c.task]
		cand[at], keys[at] = c.rank, *c
	}
	for _, t := range multi {
		lo, hi := start[t], start[t+1]
		for i := lo + 1; i < hi; i++ {
			for j := i; j > lo && ranksBefore(&keys[j], &keys[j-1]); j-- {
				keys[j], keys[j-1] = keys[j-1], keys[j]
				cand[j], cand[j-1] = cand[j-1], cand[j]
			}
		}
	}
}

// ranksBefore is STANDBY_CANDIDATE_ORDER: previous standbys first, then the
// higher offset sum.
func ranksBefore(x, y *candidate) bool {
	if x.prevStandby != y.prevStandby {
		return x.prevStandby
	}
	return x.offset > y.offset
}

func (s *state) candidates(t int32) []int32 { return s.cand[s.candStart[t]:s.candStart[t+1]] }

// procHas is ProcessState.hasTask.
func (s *state) procHas(p, t int32) bool {
	base := t * s.slots
	for k := int32(0); k < s.holdN[t]; k++ {
		if s.holders[base+k] == p {
			return true
		}
	}
	return false
}

// addInternal is ProcessState.addTaskInternal; it returns the member's new
// task count.
func (s *state) addInternal(r, t int32, active bool) int32 {
	p := s.proc[r]
	s.procTasks[p]++
	if !s.procHas(p, t) {
		s.holders[t*s.slots+s.holdN[t]] = p
		s.holdN[t]++
	}
	if active {
		s.activeOf[t] = r
	} else {
		s.standbys = append(s.standbys, t, r)
	}
	s.count[r]++
	s.procLoad[p] = computeLoad(s.procTasks[p], s.procCap[p])
	return s.count[r]
}

// add is ProcessState.addTask: it also drops the process's member heap.
func (s *state) add(r, t int32, active bool) int32 {
	n := s.addInternal(r, t, active)
	s.mheap[s.proc[r]].q = nil
	return n
}

// addToLeastLoadedMember is ProcessState.addTaskToLeastLoadedMember.
func (s *state) addToLeastLoadedMember(p, t int32, active bool) int32 {
	members := s.memOrder[s.memStart[p]:s.memStart[p+1]]
	switch len(members) {
	case 0:
		return -1
	case 1:
		return s.addInternal(members[0], t, active)
	}
	h := &s.mheap[p]
	if h.q == nil {
		h.count = s.count
		h.q = s.bMheap[s.memStart[p]:s.memStart[p]:s.memStart[p+1]]
		for _, r := range members {
			h.offer(r)
		}
	}
	r := h.poll()
	n := s.addInternal(r, t, active)
	h.offer(r)
	return n
}

// findPrevMemberWithLeastLoad: the first candidate, replaced only by one
// whose process load and member load are both strictly lower. With
// standbyTask >= 0, candidates whose process holds it are skipped.
func (s *state) findPrevMemberWithLeastLoad(cands []int32, standbyTask int32) int32 {
	best := int32(-1)
	bestProc, bestMember := math.MaxFloat64, math.MaxFloat64
	for _, r := range cands {
		p := s.proc[r]
		if standbyTask >= 0 && s.procHas(p, standbyTask) {
			continue
		}
		pl, ml := s.procLoad[p], float64(s.count[r])
		if best >= 0 && !(pl < bestProc && ml < bestMember) {
			continue
		}
		best, bestProc, bestMember = r, pl, ml
	}
	return best
}

func (s *state) maybeUpdateActivePerMember(n int32) {
	if n == s.activePerMember {
		s.membersActiveCap--
		s.totalActive -= n
		s.activePerMember = tasksPerMember(s.totalActive, s.membersActiveCap)
	}
}

func (s *state) maybeUpdateTasksPerMember(n int32) {
	if n == s.tasksPerMember {
		s.membersTasksCap--
		s.totalTasks -= n
		s.tasksPerMember = tasksPerMember(s.totalTasks, s.membersTasksCap)
	}
}
