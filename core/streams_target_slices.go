package core

import (
	"slices"
	"sort"
	"strings"
)

// An assignor result for a large group is written in slices: one step
// writes the targets of at most targetSliceSize members and a timer due at
// once (target-slice-<group>) continues in a later step, so the other
// groups of the partition are stepped between the slices. The records are
// those of writeTarget, in its order: every member's target that changed,
// then the target metadata with the new epoch, which Kafka also writes
// after the member records. Until that last record the run counts as in
// flight: a heartbeat of the group parks on it, as on the assignor run
// itself, and is answered with the whole new target (when the assignor
// wait expires meanwhile, right after the last slice); a heartbeat that
// does not park (no assignor wait, a delay or interval holding the
// assignment back) writes the rest of the result first. A heartbeat never
// reconciles against a part.

// defaultTargetSlice is how many members' targets one step writes.
const defaultTargetSlice = 32

// targetSlices is an assignor result being written.
type targetSlices struct {
	run     AssignorRun
	targets []tasksTuple   // each member's target, by its place in run.Input.Members
	index   map[string]int // member id -> its place in run.Input.Members; nil: that is sorted, searched instead
	ids     []string       // the group's members, sorted, when the result came
	next    int            // ids[next:] are still to write
	probe   int64          // the result's NextProbeMs
	// waited: the assignor wait expired meanwhile; the parked heartbeats
	// are answered after the last slice even if a new run is in flight.
	waited bool
}

func (c *Coordinator) targetSliceSize() int {
	if c.targetSlice > 0 {
		return c.targetSlice
	}
	return defaultTargetSlice
}

// startTargetWrite writes the target of run's result at once if the group
// is small (it reports true), or starts writing it in slices.
func (c *Coordinator) startTargetWrite(g *streamsGroup, run AssignorRun, res AssignResult, targets []tasksTuple) bool {
	if len(g.members) <= c.targetSliceSize() {
		c.writeTarget(g, run.Epoch, resultTargets(run, targets))
		return true
	}
	s := &targetSlices{run: run, targets: targets, probe: res.NextProbeMs}
	if slices.IsSortedFunc(run.Input.Members, compareMemberIDs) {
		s.ids = mergeMemberIDs(g, run.Input.Members) // without sorting every member again
	} else { // an input core did not build (assignInput sorts it)
		s.ids = g.sortedMemberIDs()
		s.index = make(map[string]int, len(run.Input.Members))
		for i, m := range run.Input.Members {
			s.index[m.MemberID] = i
		}
	}
	g.soft.slices, g.soft.inflight = s, &s.run
	// The members are written from the next step on: this one has sorted
	// and indexed them.
	c.setTimer(timer{key: targetSliceKey(g.id), deadline: c.now, kind: timerStreamsTargetSlice, group: g.id})
	return false
}

// writeTargetSlices writes the next slice of g's result (all of it when
// all is set); after the last member it writes the epoch and ends the run.
func (c *Coordinator) writeTargetSlices(g *streamsGroup, all bool) {
	s := g.soft.slices
	end := len(s.ids)
	if !all {
		end = min(end, s.next+c.targetSliceSize())
	}
	for _, id := range s.ids[s.next:end] {
		if g.members[id] != nil { // a member that left has no target
			c.writeMemberTarget(g, id, s.target(id))
		}
	}
	prev := s.next
	s.next = end
	c.onUndo(func() { s.next = prev })
	if end < len(s.ids) {
		c.emitGroup(EventTargetPart, g.id, ReasonAssignor, s.run.Epoch)
		c.setTimer(timer{key: targetSliceKey(g.id), deadline: c.now, kind: timerStreamsTargetSlice, group: g.id})
		return
	}
	// Members that joined while the result was written get what
	// writeTarget gives a member the run did not see: no tasks.
	var joined []string
	for id := range g.members {
		if i := sort.SearchStrings(s.ids, id); i == len(s.ids) || s.ids[i] != id {
			joined = append(joined, id)
		}
	}
	sort.Strings(joined)
	for _, id := range joined {
		c.writeMemberTarget(g, id, emptyTuple())
	}
	c.cancelTimer(targetSliceKey(g.id))
	c.writeTargetEpoch(g, s.run.Epoch)
	g.soft.slices = nil
	if g.soft.inflight == &s.run {
		g.soft.inflight = nil
	}
	c.onUndo(func() { g.soft.slices, g.soft.inflight = s, &s.run })
	c.targetWritten(g, s.run.Epoch, s.probe)
	c.afterTarget(g)
	if s.waited && g.soft.inflight != nil {
		c.releaseParked(g)
	}
}

// target is member id's target in the result (none if the run did not
// see it).
func (s *targetSlices) target(id string) tasksTuple {
	i, ok := s.index[id]
	if s.index == nil {
		i, ok = findMember(s.run.Input.Members, id)
	}
	if !ok {
		return emptyTuple()
	}
	return s.targets[i]
}

func compareMemberIDs(a, b AssignMember) int { return strings.Compare(a.MemberID, b.MemberID) }

// findMember is id's place in in, sorted by member id.
func findMember(in []AssignMember, id string) (int, bool) {
	return slices.BinarySearchFunc(in, id, func(m AssignMember, id string) int { return strings.Compare(m.MemberID, id) })
}

// mergeMemberIDs is g.sortedMemberIDs() for a group whose members were
// in (sorted by member id) when its run started: the members of in that
// are still there, merged with those that joined since. A large group's
// result starts its slices in one step; sorting ten thousand ids took
// most of it.
func mergeMemberIDs(g *streamsGroup, in []AssignMember) []string {
	kept := make([]string, 0, len(g.members))
	for _, m := range in {
		if g.members[m.MemberID] != nil {
			kept = append(kept, m.MemberID)
		}
	}
	if len(kept) == len(g.members) {
		return kept
	}
	var joined []string
	for id := range g.members {
		if _, ok := findMember(in, id); !ok {
			joined = append(joined, id)
		}
	}
	sort.Strings(joined)
	out := make([]string, 0, len(g.members))
	i, j := 0, 0
	for i < len(kept) && j < len(joined) {
		if kept[i] < joined[j] {
			out, i = append(out, kept[i]), i+1
		} else {
			out, j = append(out, joined[j]), j+1
		}
	}
	return append(append(out, kept[i:]...), joined[j:]...)
}

func init() {
	registerTimerKind(timerStreamsTargetSlice, func(c *Coordinator, t timer) {
		if g, ok := c.groups[t.group].(*streamsGroup); ok && g.soft.slices != nil {
			c.writeTargetSlices(g, false)
		}
	})
}
