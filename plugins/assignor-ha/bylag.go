package ha

import (
	"cmp"
	"slices"
)

// clientLag is one client's lag entry for a task.
type clientLag struct {
	c   int32
	lag int64
}

// lagIndex holds, per task, the clients that have a lag entry for it (a
// reported offset or a running active), ordered by (lag, client) as
// Kafka's tasksToClientByLag orders clients. Every other client's lag is
// the task's no-state lag (Lags.Lag). It has one element per lag entry,
// where a full order per task would have clients × tasks.
type lagIndex [][]clientLag

func (s *state) newLagIndex() lagIndex {
	// One backing array for every task's entries (counted first), not
	// one growing slice per task.
	idx := make(lagIndex, s.total)
	counts := make([]int32, s.total)
	n := 0
	for c := range s.clients {
		for _, e := range s.lags.procs[s.ids[c]] {
			counts[e.task]++
		}
		n += len(s.lags.procs[s.ids[c]])
	}
	all := make([]clientLag, n)
	at := 0
	for t, k := range counts {
		idx[t] = all[at : at : at+int(k)]
		at += int(k)
	}
	for c := range s.clients {
		for _, e := range s.lags.procs[s.ids[c]] {
			idx[e.task] = append(idx[e.task], clientLag{int32(c), e.lag})
		}
	}
	for _, es := range idx {
		sortByLag(es)
	}
	return idx
}

// sortByLag orders es by (lag, client). Most tasks have a few entries:
// those are sorted in place without a comparison call per step.
func sortByLag(es []clientLag) {
	if len(es) > 16 {
		slices.SortFunc(es, func(a, b clientLag) int {
			return cmp.Or(cmp.Compare(a.lag, b.lag), cmp.Compare(a.c, b.c))
		})
		return
	}
	for i := 1; i < len(es); i++ {
		x, j := es[i], i
		for ; j > 0 && (es[j-1].lag > x.lag || (es[j-1].lag == x.lag && es[j-1].c > x.c)); j-- {
			es[j] = es[j-1]
		}
		es[j] = x
	}
}

// has reports whether client c has a lag entry for t.
func (x lagIndex) has(t int32, c int) bool {
	for _, e := range x[t] {
		if int(e.c) == c {
			return true
		}
	}
	return false
}

// minLag is the least lag any client has for t.
func (x lagIndex) minLag(s *state, t int32) int64 {
	least := s.lags.end[t] // a client without an entry
	if len(x[t]) == len(s.clients) {
		least = x[t][0].lag
	} else if len(x[t]) > 0 {
		least = min(least, x[t][0].lag)
	}
	return least
}

// appendCaughtUp appends to out, ascending, the clients caught up on t
// (Lags.CaughtUp).
func (x lagIndex) appendCaughtUp(out []int, s *state, t int32) []int {
	start := len(out)
	if !s.lags.caughtUpAt(t, s.lags.end[t], s.acceptable) {
		for _, e := range x[t] { // only clients with an entry can be
			if s.lags.caughtUpAt(t, e.lag, s.acceptable) {
				out = append(out, int(e.c))
			}
		}
		slices.Sort(out[start:])
		return out
	}
	for c := range s.clients {
		if !x.has(t, c) || s.caughtUp(c, t) {
			out = append(out, c)
		}
	}
	return out
}
