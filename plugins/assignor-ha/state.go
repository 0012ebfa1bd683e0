package ha

import (
	"sort"

	"github.com/coordhost/coordhost/abi"
)

// client is one process (Kafka's ClientState): its capacity (members, the
// "stream threads") and the tasks the assignor has placed on it so far.
// Task lists are kept ascending, like Kafka's TreeSets.
type client struct {
	capacity int
	active   []int32
	standby  []int32
	tags     []abi.KV // client tags, ascending by key
}

func (c *client) count() int { return len(c.active) + len(c.standby) }

// load is ClientState.assignedTaskLoad; computed in float64 as Java does,
// so equal-looking loads compare equal in both.
func (c *client) load() float64 { return float64(c.count()) / float64(c.capacity) }

func (c *client) activeLoad() float64 { return float64(len(c.active)) / float64(c.capacity) }

func (c *client) hasActive(t int32) bool  { return has(c.active, t) }
func (c *client) hasStandby(t int32) bool { return has(c.standby, t) }
func (c *client) hasTask(t int32) bool    { return c.hasActive(t) || c.hasStandby(t) }

func (c *client) tag(key string) (string, bool) {
	i := sort.Search(len(c.tags), func(i int) bool { return c.tags[i].Key >= key })
	if i < len(c.tags) && c.tags[i].Key == key {
		return c.tags[i].Value, true
	}
	return "", false
}

func has(set []int32, t int32) bool {
	i := searchTasks(set, t)
	return i < len(set) && set[i] == t
}

// searchTasks is sort.Search for the first element >= t, without the
// closure call per probe (the hot path of a WebAssembly build).
func searchTasks(set []int32, t int32) int {
	lo, hi := 0, len(set)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if set[mid] < t {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

func insert(set []int32, t int32) []int32 {
	i := searchTasks(set, t)
	set = append(set, 0)
	copy(set[i+1:], set[i:])
	set[i] = t
	return set
}

func remove(set []int32, t int32) []int32 {
	i := searchTasks(set, t)
	if i == len(set) || set[i] != t {
		panic("ha: removing a task the client does not hold") // an internal invariant
	}
	return append(set[:i], set[i+1:]...)
}

// state is the assignor's working state: the clients in process order (the
// order of Kafka's TreeMap<ProcessId, ClientState>), the lags, and the
// task table.
type state struct {
	clients    []client
	ids        []int32 // ids[i] = process index of clients[i]
	lags       *Lags
	space      abi.TaskSpace
	stateful   []bool
	total      int32
	acceptable int64
	scratch    []int32 // balancePair's copy of a task list, reused
	// loads[c] is clients[c].load(), kept up to date by every assign and
	// unassign: the least-loaded searches and the balancing pairs read one
	// float per client instead of dividing per client per question.
	loads []float64
	// fewer[c] and more[c] are client c's load with one task less and one
	// more, as shouldMoveATask computes them, kept with loads.
	fewer, more []float64
	// tree orders the clients by (load, index) once a search needs it
	// (nil before); kept up to date with loads.
	tree *loadTree
	skip []int32 // leastLoadedWithout's excluded clients, reused
}

// reserve gives every client's task list of the kind room for its share
// of n tasks by capacity and a few more, all in one array, so that dealing
// and balancing do not grow each list step by step (a list that outgrows
// its room is copied as append does).
func (s *state) reserve(kind taskKind, n int) {
	capacity := 0
	for c := range s.clients {
		capacity += s.clients[c].capacity
	}
	if capacity == 0 {
		return
	}
	room := func(c int) int { return (n*s.clients[c].capacity+capacity-1)/capacity + 4 }
	sum := 0
	for c := range s.clients {
		sum += room(c)
	}
	all := make([]int32, sum)
	for c := range s.clients {
		k := room(c)
		list := &s.clients[c].active
		if kind == kindStandby {
			list = &s.clients[c].standby
		}
		*list = append(all[:0:k], *list...)
		all = all[k:]
	}
}

// setLoad refreshes the cached load of client c after its lists changed.
func (s *state) setLoad(c int) {
	cl := &s.clients[c]
	s.loads[c] = cl.load()
	s.fewer[c] = (float64(cl.count()) - 1.0) / float64(cl.capacity)
	s.more[c] = (float64(cl.count()) + 1.0) / float64(cl.capacity)
	if s.tree != nil {
		s.tree.fix(c, s.loads)
	}
}

func (s *state) lag(c int, t int32) int64 { return s.lags.Lag(s.ids[c], t) }

func (s *state) caughtUp(c int, t int32) bool {
	return s.lags.CaughtUp(s.ids[c], t, s.acceptable)
}

func (s *state) assignActive(c int, t int32) {
	s.mustNotHold(c, t)
	s.clients[c].active = insert(s.clients[c].active, t)
	s.setLoad(c)
}

func (s *state) assignStandby(c int, t int32) {
	s.mustNotHold(c, t)
	s.clients[c].standby = insert(s.clients[c].standby, t)
	s.setLoad(c)
}

func (s *state) unassignActive(c int, t int32) {
	s.clients[c].active = remove(s.clients[c].active, t)
	s.setLoad(c)
}

func (s *state) unassignStandby(c int, t int32) {
	s.clients[c].standby = remove(s.clients[c].standby, t)
	s.setLoad(c)
}

// mustNotHold is ClientState.assertNotAssigned.
func (s *state) mustNotHold(c int, t int32) {
	if s.clients[c].hasTask(t) {
		panic("ha: a process would hold a task twice") // an internal invariant
	}
}

// leastLoaded is ConstrainedPrioritySet.poll over every client: the client
// with the lowest load, ties to the lower process, among those ok accepts;
// -1 if none. (Kafka's set always holds every client at poll time, and its
// heap orders by the same total order.) ok, a pure predicate, is asked only
// of a client that would win on load.
func (s *state) leastLoaded(ok func(c int) bool) int {
	best, bestW := -1, 0.0
	for c, w := range s.loads {
		if (best < 0 || w < bestW) && ok(c) {
			best, bestW = c, w
		}
	}
	return best
}

// leastActiveLoaded is leastLoaded by active load, over every client.
func (s *state) leastActiveLoaded() int {
	best, bestW := -1, 0.0
	for c := range s.clients {
		if w := s.clients[c].activeLoad(); best < 0 || w < bestW {
			best, bestW = c, w
		}
	}
	return best
}

// leastLoadedWithout is leastLoaded for the clients that do not hold t:
// the tree's least client, passing over (at most 1 + standbys) holders of
// t, which are taken out of the tree for the search and put back after.
func (s *state) leastLoadedWithout(t int32) int {
	if s.tree == nil {
		s.tree = newLoadTree(s.loads)
	}
	tr := s.tree
	best := -1
	for {
		c := tr.least()
		if c < 0 || !s.clients[c].hasTask(t) {
			best = c
			break
		}
		tr.out(c, s.loads)
		s.skip = append(s.skip, int32(c))
	}
	for _, c := range s.skip {
		tr.fix(int(c), s.loads)
	}
	s.skip = s.skip[:0]
	return best
}
