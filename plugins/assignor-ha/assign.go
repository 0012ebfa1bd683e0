package ha

import (
	"errors"
	"sort"

	"github.com/coordhost/coordhost/abi"
)

// ProcessAssignment is the assignment of one process (Kafka's per-client
// result), before it is split over the process's members.
type ProcessAssignment struct {
	Process int32 // index into AssignRequest.Processes
	Active  []int32
	Standby []int32 // standbys that are not warm-ups
	Warmup  []int32
}

// Result is the process-level outcome of one run.
type Result struct {
	Processes []ProcessAssignment // processes with at least one member, in Kafka's order (processLess)
	// ProbingNeeded is Kafka's return value: some active or standby had to
	// move towards a more caught-up process, so a probing rebalance should
	// follow to finish the move once warm-ups catch up.
	ProbingNeeded bool
}

// AssignProcesses runs Kafka 4.4's HighAvailabilityTaskAssignor on req at
// process level: actives dealt round-robin and balanced, standbys (client
// tag aware with rack.aware.assignment.tags), then actives moved to
// caught-up processes with warm-ups left behind (at most
// num_warmup_replicas per run), standbys moved likewise, and stateless
// actives to the least active-loaded processes.
func AssignProcesses(req *abi.AssignRequest) (*Result, error) {
	if err := checkRequest(req); err != nil {
		return nil, err
	}
	s, subIDs, err := newState(req)
	if err != nil {
		return nil, err
	}
	s.assignStatefulActives()
	s.assignStandbys(int(req.Configs.NumStandbyReplicas), req.Configs.RackAwareAssignmentTags, subIDs)
	m := s.newMovements(int(req.Configs.NumWarmupReplicas))
	moves := m.activeMovements() + m.standbyMovements()
	s.assignStatelessActives()
	return s.result(m, moves > 0), nil
}

func newState(req *abi.AssignRequest) (*state, []string, error) {
	s := &state{lags: ComputeLags(req), total: req.NumTasks(), acceptable: req.Configs.AcceptableRecoveryLag}
	if s.acceptable < 0 {
		return nil, nil, errors.New("acceptable_recovery_lag is negative")
	}
	s.stateful = make([]bool, s.total)
	s.space = abi.NewTaskSpace(req.Subtopologies)
	space := s.space
	subIDs := make([]string, len(req.Subtopologies))
	for i, sub := range req.Subtopologies {
		subIDs[i] = sub.ID
		for p := int32(0); p < sub.Partitions; p++ {
			s.stateful[space.Task(int32(i), p)] = sub.Stateful
		}
	}
	index := make([]int, len(req.Processes)) // process -> client + 1
	first := make([]string, len(req.Processes))
	for i := range req.Members {
		m := &req.Members[i]
		if index[m.Process] == 0 {
			s.ids = append(s.ids, m.Process)
			s.clients = append(s.clients, client{})
			index[m.Process] = len(s.clients)
		}
		c := &s.clients[index[m.Process]-1]
		c.capacity++
		if first[m.Process] == "" || m.ID < first[m.Process] { // tags of the lowest member id
			first[m.Process], c.tags = m.ID, m.ClientTags
		}
	}
	sort.Sort(byProcess{s, req.Processes})
	s.loads = make([]float64, len(s.clients))
	s.fewer = make([]float64, len(s.clients))
	s.more = make([]float64, len(s.clients))
	for c := range s.clients {
		s.setLoad(c)
	}
	if len(s.clients) == 0 && s.total > 0 {
		return nil, nil, errors.New("no members to assign tasks to")
	}
	return s, subIDs, nil
}

// byProcess sorts the clients in Kafka's order of their process ids.
type byProcess struct {
	s     *state
	names []string // the request's process ids
}

func (b byProcess) Len() int { return len(b.s.ids) }
func (b byProcess) Less(i, j int) bool {
	return processLess(b.names[b.s.ids[i]], b.names[b.s.ids[j]])
}
func (b byProcess) Swap(i, j int) {
	b.s.ids[i], b.s.ids[j] = b.s.ids[j], b.s.ids[i]
	b.s.clients[i], b.s.clients[j] = b.s.clients[j], b.s.clients[i]
}

func (s *state) locate(t int32) (int32, int32) { return s.space.Locate(t) }

// assignStatefulActives deals stateful tasks round-robin over the clients
// in process order, ignoring previous owners, then balances them.
func (s *state) assignStatefulActives() {
	s.reserve(kindActive, int(s.total))
	c := 0
	for t := int32(0); t < s.total; t++ {
		if s.stateful[t] {
			s.assignActive(c, t)
			c = (c + 1) % len(s.clients)
		}
	}
	s.balance(kindActive, anyMove)
}

// assignStatelessActives gives each stateless task to the client with the
// lowest active load.
func (s *state) assignStatelessActives() {
	for t := int32(0); t < s.total; t++ {
		if !s.stateful[t] {
			s.assignActive(s.leastActiveLoaded(), t)
		}
	}
}

func (s *state) result(m *movements, probing bool) *Result {
	r := &Result{ProbingNeeded: probing, Processes: make([]ProcessAssignment, len(s.clients))}
	n := 0
	for c := range s.clients {
		n += len(s.clients[c].standby)
	}
	standbys := make([]int32, 0, n) // every process's standbys, one after the other
	for c := range s.clients {
		pa := ProcessAssignment{Process: s.ids[c], Active: s.clients[c].active}
		start := len(standbys)
		for _, t := range s.clients[c].standby {
			if m.isWarmup(c, t) {
				pa.Warmup = append(pa.Warmup, t)
			} else {
				standbys = append(standbys, t)
			}
		}
		pa.Standby = standbys[start:len(standbys):len(standbys)]
		r.Processes[c] = pa
	}
	return r
}
