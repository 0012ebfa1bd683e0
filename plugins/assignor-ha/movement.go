package ha

import (
	"math"
	"sort"
)

// movement is Kafka's TaskMovement: task should leave client dst (which is
// not caught up on it) for a more caught-up client.
type movement struct {
	// key is the TaskMovement queue order in one integer: the number of
	// caught-up clients for the task in the high half, the task in the
	// low half (both non-negative), so fewest caught-up clients first,
	// then by task, with one comparison (the heap's hot path).
	key uint64
	dst int32
}

func newMovement(t int32, dst, caughtUp int) movement {
	return movement{key: uint64(caughtUp)<<32 | uint64(uint32(t)), dst: int32(dst)}
}

func (m movement) task() int32 { return int32(uint32(m.key)) }

// movementQueue reproduces java.util.PriorityQueue (a binary heap with
// siftUp on add and siftDown on poll): movements of the same task compare
// equal, and the heap decides their order exactly as Kafka's queue does.
type movementQueue []movement

func (q *movementQueue) add(m movement) {
	h := append(*q, m)
	k := len(h) - 1
	for k > 0 {
		parent := (k - 1) / 2
		if m.key >= h[parent].key {
			break
		}
		h[k] = h[parent]
		k = parent
	}
	h[k] = m
	*q = h
}

func (q *movementQueue) poll() movement {
	h := *q
	top := h[0]
	n := len(h) - 1
	x := h[n]
	h = h[:n]
	if n > 0 {
		k := 0
		for half := n / 2; k < half; {
			child := 2*k + 1
			if right := child + 1; right < n && h[child].key > h[right].key {
				child = right
			}
			if x.key <= h[child].key {
				break
			}
			h[k] = h[child]
			k = child
		}
		h[k] = x
	}
	*q = h
	return top
}

// movements carries what both movement phases share.
type movements struct {
	*state
	budget int // remaining warm-up replicas (may go negative, like Kafka's AtomicInteger)
	// warmups[c] lists, ascending, the tasks client c was told to keep
	// as warm-up (added to only, like the map Kafka keeps; at most
	// num_warmup_replicas in all, so most lists are empty).
	warmups   [][]int32
	caughtUpN []int // per task: number of caught-up clients
	// caughtUpBy lists each stateful task's caught-up clients, ascending
	// (nil when acceptable.recovery.lag is unbounded: every client is).
	caughtUpBy [][]int
	byLag      lagIndex
	queue      movementQueue // the queue's memory, reused by the second phase
}

func (s *state) newMovements(maxWarmups int) *movements {
	m := &movements{state: s, budget: maxWarmups, warmups: make([][]int32, len(s.clients)),
		caughtUpN: make([]int, s.total), byLag: s.newLagIndex()}
	if s.acceptable == math.MaxInt64 {
		for t := int32(0); t < s.total; t++ {
			if s.stateful[t] {
				m.caughtUpN[t] = len(s.clients)
			}
		}
		return m
	}
	m.caughtUpBy = make([][]int, s.total)
	var all []int // every task's list, one after the other
	for t := int32(0); t < s.total; t++ {
		if s.stateful[t] {
			start := len(all)
			all = m.byLag.appendCaughtUp(all, s, t)
			m.caughtUpBy[t] = all[start:len(all):len(all)]
			m.caughtUpN[t] = len(m.caughtUpBy[t])
		}
	}
	return m
}

// needsMove is taskIsNotCaughtUpOnClientAndOtherMoreCaughtUpClientsExist.
func (m *movements) needsMove(t int32, c int) bool {
	if m.isCaughtUp(c, t) {
		return false
	}
	return m.byLag.minLag(m.state, t) < m.lag(c, t)
}

func (m *movements) isCaughtUp(c int, t int32) bool {
	if m.caughtUpBy == nil {
		return true
	}
	cs := m.caughtUpBy[t]
	i := sort.SearchInts(cs, c)
	return i < len(cs) && cs[i] == c
}

// want is what a movement asks of the client a task goes to (Kafka's
// predicates, as a value so the hot loops test it without a call).
type want int

const (
	wantAny     want = iota // any client
	wantStandby             // a client holding a standby of the task
	wantFree                // a client not holding the task at all
)

// accepts reports whether client c is what w asks for, for task t.
func (m *movements) accepts(w want, c int, t int32) bool {
	switch w {
	case wantStandby:
		return m.clients[c].hasStandby(t)
	case wantFree:
		return !m.clients[c].hasTask(t)
	}
	return true
}

// mostCaughtUp is mostCaughtUpEligibleClient: walking the clients in
// Kafka's tasksToClientByLag order (lag, then process), the first that w
// accepts, looking only at clients before dst; -1 if none. The order is not
// built (it would hold clients × tasks entries): the answer is the lesser
// of the first accepted client with a lag entry (byLag, already in that
// order) and the lowest accepted client without one (all at the task's
// no-state lag).
func (m *movements) mostCaughtUp(t int32, dst int, w want) int {
	dstLag := m.lag(dst, t)
	before := func(lag int64, c int) bool { return lag < dstLag || (lag == dstLag && c < dst) }
	best, bestLag := -1, int64(0)
	for _, e := range m.byLag[t] {
		if !before(e.lag, int(e.c)) {
			break
		}
		if m.accepts(w, int(e.c), t) {
			best, bestLag = int(e.c), e.lag
			break
		}
	}
	noState := m.lags.end[t]
	for c := range m.clients {
		if !before(noState, c) || (best >= 0 && (noState > bestLag || (noState == bestLag && c > best))) {
			break
		}
		if !m.byLag.has(t, c) && m.accepts(w, c, t) {
			return c
		}
	}
	return best
}

// caughtUpLeastLoaded is the caught-up ConstrainedPrioritySet's poll: the
// least-loaded caught-up client w accepts, ties to the lower process.
func (m *movements) caughtUpLeastLoaded(t int32, w want) int {
	if m.caughtUpBy == nil {
		return m.leastLoaded(func(c int) bool { return m.accepts(w, c, t) })
	}
	best, bestW := -1, 0.0
	for _, c := range m.caughtUpBy[t] {
		if l := m.loads[c]; (best < 0 || l < bestW) && m.accepts(w, c, t) {
			best, bestW = c, l
		}
	}
	return best
}

// activeMovements is TaskMovement.assignActiveTaskMovements: every active
// on a client that is not caught up, while a more caught-up client exists,
// goes to a caught-up client holding a standby (swap), else to the
// least-loaded caught-up client, else to the most caught-up client before
// it in lag order; the old holder keeps a warm-up while the budget lasts.
// It returns the number of movements.
func (m *movements) activeMovements() int {
	q := m.queue[:0]
	for c := range m.clients {
		for _, t := range m.clients[c].active {
			if m.needsMove(t, c) {
				q.add(newMovement(t, c, m.caughtUpN[t]))
			}
		}
	}
	n := len(q)
	defer func() { m.queue = q }() // its memory, for standbyMovements
	for len(q) > 0 {
		mv := q.poll()
		t, dst := mv.task(), int(mv.dst)
		if src := m.caughtUpLeastLoaded(t, wantStandby); src >= 0 {
			m.swap(t, src, dst)
			continue
		}
		if src := m.caughtUpLeastLoaded(t, wantAny); src >= 0 {
			m.moveActive(t, src, dst)
			continue
		}
		src := m.mostCaughtUp(t, dst, wantAny)
		if src < 0 {
			panic("ha: a scheduled movement found no more caught-up client") // Kafka: IllegalStateException
		}
		if m.clients[src].hasStandby(t) {
			m.swap(t, src, dst)
		} else {
			m.moveActive(t, src, dst)
		}
	}
	return n
}

// swap is swapStandbyAndActive: src's standby becomes the active, dst keeps
// a standby.
func (m *movements) swap(t int32, src, dst int) {
	m.unassignStandby(src, t)
	m.assignActive(src, t)
	m.unassignActive(dst, t)
	m.assignStandby(dst, t)
}

// moveActive is moveActiveAndTryToWarmUp.
func (m *movements) moveActive(t int32, src, dst int) {
	m.assignActive(src, t)
	m.unassignActive(dst, t)
	if m.takeWarmup() {
		m.assignStandby(dst, t)
		m.setWarmup(dst, t)
	}
}

func (m *movements) isWarmup(c int, t int32) bool { return has(m.warmups[c], t) }

func (m *movements) setWarmup(c int, t int32) {
	if !m.isWarmup(c, t) {
		m.warmups[c] = insert(m.warmups[c], t)
	}
}

func (m *movements) takeWarmup() bool {
	ok := m.budget > 0
	m.budget--
	return ok
}

// standbyMovements is TaskMovement.assignStandbyTaskMovements: a standby
// (not a warm-up) on a client that is not caught up, while a more
// caught-up client exists, gets a copy on a caught-up client not holding
// the task (least loaded), else on the most caught-up such client before
// it; the old holder keeps it as a warm-up while the budget lasts.
func (m *movements) standbyMovements() int {
	q := m.queue[:0]
	for c := range m.clients {
		for _, t := range m.clients[c].standby {
			if !m.isWarmup(c, t) && m.needsMove(t, c) {
				q.add(newMovement(t, c, m.caughtUpN[t]))
			}
		}
	}
	n := 0
	for len(q) > 0 {
		mv := q.poll()
		t, dst := mv.task(), int(mv.dst)
		src := m.caughtUpLeastLoaded(t, wantFree)
		if src < 0 {
			src = m.mostCaughtUp(t, dst, wantFree)
		}
		if src < 0 {
			continue // every more caught-up client already holds the task
		}
		m.assignStandby(src, t)
		if m.takeWarmup() {
			m.setWarmup(dst, t)
		} else {
			m.unassignStandby(dst, t)
		}
		n++
	}
	return n
}
