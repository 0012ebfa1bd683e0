package ha

import "slices"

// taskKind selects the active or the standby list of a client in balance.
type taskKind int

const (
	kindActive taskKind = iota
	kindStandby
)

// balance is HighAvailabilityTaskAssignor.balanceTasksOverThreads: for
// every ordered pair of distinct clients (source, destination), walk the
// source's tasks of the kind in order and move each one the destination
// does not hold while shouldMove holds and allowed(source, destination);
// repeat until a full pass moves nothing.
//
// A source row is skipped whole when shouldMove fails for every
// destination: shouldMove needs fewer[src] >= more[dst], so a source with
// fewer[src] below the least more[] of all clients moves nothing (balanced
// clients: every row, so a pass that moves nothing costs one look per
// client instead of one per pair). The least is recomputed at the start
// of a row after any move, so the skip sees the loads the pairs would.
func (s *state) balance(kind taskKind, allowed func(src, dst int) bool) {
	for again := true; again; {
		again = false
		least, stale := 0.0, true
		for src := range s.clients {
			if stale {
				least, stale = slices.Min(s.more), false
			}
			if s.fewer[src] < least {
				continue
			}
			for dst := range s.clients {
				// shouldMove first: it reads three cached floats, and most
				// pairs fail it (src == dst too: no skew).
				if s.shouldMove(src, dst) && s.balancePair(kind, src, dst, allowed) {
					again, stale = true, true
				}
			}
		}
	}
}

// balancePair runs one (src, dst) pair of balance; the caller checked
// shouldMove for it.
func (s *state) balancePair(kind taskKind, src, dst int, allowed func(src, dst int) bool) bool {
	list := s.clients[src].active
	if kind == kindStandby {
		list = s.clients[src].standby
	}
	s.scratch = append(s.scratch[:0], list...) // the walk sees the list as it was
	moved := false
	for _, t := range s.scratch {
		if !s.shouldMove(src, dst) {
			break
		}
		if s.clients[dst].hasTask(t) || !allowed(src, dst) {
			continue
		}
		if kind == kindActive {
			s.unassignActive(src, t)
			s.assignActive(dst, t)
		} else {
			s.unassignStandby(src, t)
			s.assignStandby(dst, t)
		}
		moved = true
	}
	return moved
}

// shouldMove is HighAvailabilityTaskAssignor.shouldMoveATask: move one task
// from src to dst only if src is more loaded and the move strictly reduces
// the skew without inverting it.
func (s *state) shouldMove(src, dst int) bool {
	skew := s.loads[src] - s.loads[dst]
	if skew <= 0 {
		return false
	}
	proposed := s.fewer[src] - s.more[dst] // (count-1)/capacity - (count+1)/capacity
	return proposed >= 0 && proposed < skew
}

func anyMove(int, int) bool { return true }
