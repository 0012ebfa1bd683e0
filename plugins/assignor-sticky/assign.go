package sticky

import (
	"fmt"

	"github.com/coordhost/coordhost/abi"
)

// TaskAssignorError is Kafka's TaskAssignorException: no valid assignment
// exists. Message is Kafka's own text.
type TaskAssignorError struct{ Message string }

func (e *TaskAssignorError) Error() string { return e.Message }

// Name is the assignor's name, as Kafka's StickyTaskAssignor.name().
const Name = "sticky"

// Assign computes the target assignment of Kafka 4.4's StickyTaskAssignor
// for req. Members are considered in member-id order, so the result does
// not depend on the order of req.Members. It never assigns warm-up tasks
// (Kafka 4.4 does not).
func Assign(req *abi.AssignRequest) (*abi.AssignResponse, error) {
	s := states.Get().(*state)
	defer func() {
		s.req = nil
		states.Put(s)
	}()
	return s.assign(req, nil, false)
}

// single is the state of AssignReusing.
var single state

// AssignReusing is Assign for a caller that makes one call at a time and
// is done with each response before its next call, as the wasm guest is
// (the SDK encodes the response at once): the response lives in memory
// reused by the next call, so a run allocates nothing once the memory has
// grown to the group's size. Not safe for concurrent use.
//
// idOrder, when not nil, is the request's members in ascending id order
// (abi.MemberIDOrder; the wasm guest gets it from the SDK, whose decoder
// sorted them already), saving the sort; it must be a permutation of the
// member indices in that order.
func AssignReusing(req *abi.AssignRequest, idOrder []int32) (*abi.AssignResponse, error) {
	defer func() { single.req = nil }()
	if idOrder != nil && !inRange(idOrder, len(req.Members)) {
		return nil, fmt.Errorf("sticky: member order of %d entries for %d members", len(idOrder), len(req.Members))
	}
	return single.assign(req, idOrder, true)
}

// inRange reports whether order has n entries, each in [0, n).
func inRange(order []int32, n int) bool {
	if len(order) != n {
		return false
	}
	for _, i := range order {
		if uint32(i) >= uint32(n) {
			return false
		}
	}
	return true
}

func (s *state) assign(req *abi.AssignRequest, idOrder []int32, reuseResponse bool) (*abi.AssignResponse, error) {
	s.reset(req, idOrder)
	if err := s.assignActive(); err != nil {
		return nil, err
	}
	if s.numStandby > 0 {
		s.assignStandby()
	}
	return s.response(reuseResponse), nil
}

// activeOrder lists all tasks sorted by (partition, subtopology).
func (s *state) byPartitionThenSubtopology(statefulOnly bool) []int32 {
	var maxP int32
	for _, p := range s.parts {
		maxP = max(maxP, p)
	}
	out := reuse(&s.bOrder, int(s.nt))[:0]
	for p := int32(0); p < maxP; p++ {
		for sub, n := range s.parts {
			if p < n && (!statefulOnly || s.req.Subtopologies[sub].Stateful) {
				out = append(out, s.space.Task(int32(sub), p))
			}
		}
	}
	return out
}

func (s *state) assignActive() error {
	tasks := s.byPartitionThenSubtopology(false)
	// 1. back to the previous active owner, within the active quota
	rest := tasks[:0]
	for _, t := range tasks {
		if r := s.prevActive[t]; r >= 0 && s.count[r] < s.activePerMember {
			s.addActive(r, t)
			continue
		}
		rest = append(rest, t)
	}
	// 2. to the least-loaded previous standby holder
	tasks, rest = rest, rest[:0]
	for _, t := range tasks {
		if r := s.findPrevMemberWithLeastLoad(s.candidates(t), -1); r >= 0 && s.count[r] < s.activePerMember {
			s.addActive(r, t)
			continue
		}
		rest = append(rest, t)
	}
	// 3. the rest, by (subtopology, partition) = task index, to the
	// least-loaded process
	left := reuse(&s.bLeft, int(s.nt))
	for _, t := range rest {
		left[t] = true
	}
	h := s.processHeap()
	for t := int32(0); t < s.nt; t++ {
		if !left[t] {
			continue
		}
		p := h.poll()
		if p < 0 {
			return &TaskAssignorError{Message: fmt.Sprintf("No process available to assign active task %s.", s.taskName(t))}
		}
		n := s.addToLeastLoadedMember(p, t, true)
		if n == -1 {
			return &TaskAssignorError{Message: fmt.Sprintf("No member available to assign active task %s.", s.taskName(t))}
		}
		s.maybeUpdateActivePerMember(n)
		s.maybeUpdateTasksPerMember(n)
		h.offer(p)
	}
	return nil
}

func (s *state) addActive(r, t int32) {
	n := s.add(r, t, true)
	s.maybeUpdateActivePerMember(n)
	s.maybeUpdateTasksPerMember(n)
}

func (s *state) processHeap() *procHeap {
	h := &s.pheap
	*h = procHeap{q: reuse(&s.bHeap, len(s.procOrder))[:0], load: s.procLoad}
	for _, p := range s.procOrder {
		h.offer(p)
	}
	return h
}

// taskName is Kafka's TaskId.toString: subtopology_partition.
func (s *state) taskName(t int32) string {
	sub, p := s.space.Locate(t)
	return fmt.Sprintf("%s_%d", s.req.Subtopologies[sub].ID, p)
}

func (s *state) assignStandby() {
	tasks := s.byPartitionThenSubtopology(true)
	// remaining[t]: standbys of task t left for the second pass (each task
	// is deferred at most once, so a direct write replaces a pending list).
	remaining := reuse(&s.bRemaining, int(s.nt))
	// Stateful tasks by (partition, subtopology), descending.
	for i := len(tasks) - 1; i >= 0; i-- {
		t := tasks[i]
		for k := int32(0); k < s.numStandby; k++ {
			if r := s.prevActive[t]; r >= 0 && !s.procHas(s.proc[r], t) && s.count[r] < s.tasksPerMember {
				s.maybeUpdateTasksPerMember(s.add(r, t, false))
				continue
			}
			if c := s.candidates(t); len(c) > 0 {
				if r := s.findPrevMemberWithLeastLoad(c, t); r >= 0 && s.count[r] < s.tasksPerMember {
					s.maybeUpdateTasksPerMember(s.add(r, t, false))
					continue
				}
			}
			remaining[t] = s.numStandby - k
			break
		}
	}
	// The rest by (subtopology, partition), descending, to the least-loaded
	// process not holding the task; without one, fewer standbys (Kafka logs
	// a warning).
	h := s.processHeap()
	polled := reuse(&s.bPolled, len(s.procOrder))[:0]
	for t := s.nt - 1; t >= 0; t-- {
		for k := int32(0); k < remaining[t]; k++ {
			if !s.standbyToLeastLoaded(h, t, polled) {
				break
			}
		}
	}
}

// standbyToLeastLoaded is assignStandbyToMemberWithLeastLoad without
// recursion: processes are polled until one does not hold the task, then
// offered back innermost first, as the recursive Java code does.
func (s *state) standbyToLeastLoaded(h *procHeap, t int32, polled []int32) bool {
	polled = polled[:0]
	found := false
	for {
		p := h.poll()
		if p < 0 {
			break
		}
		polled = append(polled, p)
		if !s.procHas(p, t) {
			if n := s.addToLeastLoadedMember(p, t, false); n != -1 {
				found = true
				s.maybeUpdateTasksPerMember(n)
			}
			break
		}
		if len(h.q) == 0 {
			break
		}
	}
	for i := len(polled) - 1; i >= 0; i-- {
		h.offer(polled[i])
	}
	return found
}

// response lays the result out per request member, task sets ascending,
// in fresh memory or, inPlace, in memory s keeps for its next run.
func (s *state) response(inPlace bool) *abi.AssignResponse {
	resp := &s.resp
	var activeAll, standbyAll []int32
	if inPlace {
		*resp = abi.AssignResponse{Members: reuse(&s.respMembers, len(s.req.Members)), NextProbeMs: -1}
		activeAll = reuseCap(&s.respActive, len(s.activeOf))
		standbyAll = reuseCap(&s.respStandby, len(s.standbys)/2)
	} else {
		resp = &abi.AssignResponse{Members: make([]abi.MemberAssignment, len(s.req.Members)), NextProbeMs: -1}
		// One backing array each for all actives and all standbys.
		activeAll = make([]int32, 0, len(s.activeOf))
		standbyAll = make([]int32, 0, len(s.standbys)/2)
	}
	// Each member's tasks take a contiguous range of the two backing
	// arrays, in rank order: count per rank, set each member's slices once,
	// turn the counts into cursors and place every task at its member's
	// cursor (not an append per task, which stores a slice header each
	// time).
	byRank, activeOf, standbys := s.byRank, s.activeOf, s.standbys
	curActive := reuse(&s.bNActive, len(byRank))
	curStandby := reuse(&s.bNStandby, len(byRank))
	for _, r := range activeOf {
		curActive[r]++
	}
	for i := 1; i < len(standbys); i += 2 {
		curStandby[standbys[i]]++
	}
	members := resp.Members
	activeAll, standbyAll = activeAll[:len(activeOf)], standbyAll[:len(standbys)/2]
	na, ns := int32(0), int32(0)
	for r, mi := range byRank {
		a, b := curActive[r], curStandby[r]
		members[mi].Active = activeAll[na : na+a : na+a]
		members[mi].Standby = standbyAll[ns : ns+b : ns+b]
		curActive[r], curStandby[r] = na, ns
		na, ns = na+a, ns+b
	}
	for t, r := range activeOf { // ascending tasks
		activeAll[curActive[r]] = int32(t)
		curActive[r]++
	}
	// Standbys were placed in no particular order: bucket them by task so
	// that each member's range fills in ascending task order.
	start := reuse(&s.bStart, int(s.nt)+1)
	for i := 0; i < len(standbys); i += 2 {
		start[standbys[i]+1]++
	}
	for t := 1; t < len(start); t++ {
		start[t] += start[t-1]
	}
	byTask := reuse(&s.bByTask, len(standbys)/2)
	for i := 0; i < len(standbys); i += 2 {
		t := standbys[i]
		byTask[start[t]] = standbys[i+1]
		start[t]++
	}
	t := int32(0)
	for i, r := range byTask {
		for start[t] <= int32(i) {
			t++
		}
		standbyAll[curStandby[r]] = t
		curStandby[r]++
	}
	return resp
}
