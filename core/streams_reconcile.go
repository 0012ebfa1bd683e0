package core

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// Reconciliation (Kafka 4.4's streams/CurrentAssignmentBuilder): move a
// member from its current assignment toward its target, one safe step per
// heartbeat. A task leaves a member only through "pending revocation" and
// the member's acknowledgement (a later heartbeat whose owned tasks omit
// it); a task reaches a member only when no other process holds it (the
// ownership indexes, updated only when the previous owner's record is
// applied). In-place role changes (4.4): active→standby demotion grants the
// standby at once; standby↔warm-up needs no revocation; a standby or
// warm-up promoted to active stays until the active is granted.

// reconcile returns the member's next state given what it reported (nil:
// not reported), or FENCED_MEMBER_EPOCH for a member in an unknown state.
func (g *streamsGroup) reconcile(m *streamsMember, owned *ownedTasksReport) (*streamsMember, *kafkaError) {
	targetEpoch := g.assignmentEpoch
	switch m.state {
	case memberStable:
		if m.epoch == targetEpoch {
			return m, nil
		}
		return g.nextAssignment(m, m.epoch), nil
	case memberUnrevokedTasks:
		if owned == nil || owned.intersects(m.pending) {
			return m, nil
		}
		return g.nextAssignment(m, m.epoch+1), nil
	case memberUnreleasedTasks:
		return g.nextAssignment(m, m.epoch), nil
	default:
		if owned == nil || !owned.isEmpty() {
			return nil, errf(kerr.FencedMemberEpoch, "The streams group member is in a unknown state. The member must abandon all its tasks and rejoin.")
		}
		return g.nextAssignment(m, targetEpoch), nil
	}
}

func (o *ownedTasksReport) intersects(p ownedTasks) bool {
	for t := range p.active {
		if o.active.has(t) {
			return true
		}
	}
	for t := range p.standby {
		if o.standby.has(t) {
			return true
		}
	}
	for t := range p.warmup {
		if o.warmup.has(t) {
			return true
		}
	}
	return false
}

func (o *ownedTasksReport) isEmpty() bool {
	return len(o.active) == 0 && len(o.standby) == 0 && len(o.warmup) == 0
}

// step is the outcome of comparing a member's tasks with its target.
type step struct {
	now      ownedTasks // granted regardless of revocations
	later    ownedTasks // granted only once nothing is pending revocation
	pending  ownedTasks
	withheld bool
}

// nextAssignment is computeNextAssignment + buildNewMember.
func (g *streamsGroup) nextAssignment(m *streamsMember, revokeEpoch int32) *streamsMember {
	targetEpoch := g.assignmentEpoch
	target, ok := g.target[m.id]
	if !ok {
		target = emptyTuple()
	}
	s := step{now: emptyOwned(), later: emptyOwned(), pending: emptyOwned()}
	cur := m.assigned
	// Active tasks: keep, revoke, or grant when no process holds them.
	for t, e := range cur.active {
		if target.active.has(t) {
			s.now.active[t] = e
		} else {
			s.pending.active[t] = e
		}
	}
	for t := range target.active {
		if _, kept := cur.active[t]; kept {
			continue
		}
		if g.activeWithheld(m, t) {
			s.withheld = true
			continue
		}
		s.later.active[t] = targetEpoch
	}
	g.stepPassive(m, &s, cur.standby, target.standby, target.warmup, target.active, true)
	g.stepPassive(m, &s, cur.warmup, target.warmup, target.standby, target.active, false)

	u := m.clone()
	u.prevEpoch = m.epoch
	if !s.pending.isEmpty() {
		u.state, u.epoch = memberUnrevokedTasks, revokeEpoch
		u.assigned, u.pending = s.now, s.pending
		return u
	}
	u.assigned = mergeOwned(s.now, s.later)
	u.pending = emptyOwned()
	u.epoch = targetEpoch
	u.state = memberStable
	if s.withheld {
		u.state = memberUnreleasedTasks
	}
	return u
}

// stepPassive handles standby (isStandby) or warm-up tasks: cur are the
// member's tasks of that role, want its target of that role, other the
// target of the other passive role, active the target actives.
func (g *streamsGroup) stepPassive(m *streamsMember, s *step, cur, want, other, active taskSet, isStandby bool) {
	now, later, pending := &s.now.standby, &s.later.standby, &s.pending.standby
	nowOther := &s.now.warmup
	if !isStandby {
		now, later, pending = &s.now.warmup, &s.later.warmup, &s.pending.warmup
		nowOther = &s.now.standby
	}
	for t := range cur {
		switch {
		case want.has(t):
			(*now)[t] = struct{}{}
		case other.has(t):
			(*nowOther)[t] = struct{}{} // in-place standby↔warm-up change
		case active.has(t):
			// Promoted to active: keep it until the active is granted;
			// mergeOwned drops it once the task is active.
			(*now)[t] = struct{}{}
		default:
			(*pending)[t] = struct{}{}
		}
	}
	for t := range want {
		if cur.has(t) || (isStandby && m.assigned.warmup.has(t)) || (!isStandby && m.assigned.standby.has(t)) {
			continue
		}
		if g.passiveWithheld(m, t, isStandby) {
			s.withheld = true
			continue
		}
		if _, demoted := m.assigned.active[t]; demoted {
			(*now)[t] = struct{}{} // active→passive: granted at once
			continue
		}
		(*later)[t] = struct{}{}
	}
}

func mergeOwned(a, b ownedTasks) ownedTasks {
	out := emptyOwned()
	for t, e := range a.active {
		out.active[t] = e
	}
	for t, e := range b.active {
		out.active[t] = e
	}
	for _, x := range []ownedTasks{a, b} {
		for t := range x.standby {
			out.standby[t] = struct{}{}
		}
		for t := range x.warmup {
			out.warmup[t] = struct{}{}
		}
	}
	// A promoted task leaves its passive role once it is active.
	for t := range out.active {
		delete(out.standby, t)
		delete(out.warmup, t)
	}
	return out
}

// holds reports which roles member m itself has for t (assigned or pending).
func (m *streamsMember) holds(t TaskID) (active, standby, warmup bool) {
	_, a1 := m.assigned.active[t]
	_, a2 := m.pending.active[t]
	return a1 || a2, m.assigned.standby.has(t) || m.pending.standby.has(t), m.assigned.warmup.has(t) || m.pending.warmup.has(t)
}

// othersOnProcess counts holders of t on m's process in idx, minus m.
func othersOnProcess(idx map[TaskID]map[string]int, m *streamsMember, t TaskID, self bool) int {
	n := idx[t][m.processID]
	if self {
		n--
	}
	return n
}

// activeWithheld: any process holds t active, or another member of m's
// process holds it as standby or warm-up.
func (g *streamsGroup) activeWithheld(m *streamsMember, t TaskID) bool {
	if _, ok := g.activeOwner[t]; ok {
		return true
	}
	_, sb, wu := m.holds(t)
	return othersOnProcess(g.standbyOwners, m, t, sb) > 0 || othersOnProcess(g.warmupOwners, m, t, wu) > 0
}

// passiveWithheld: another member of m's process runs t active, or m's
// process already has it in the same role, or another member of m's
// process has it in the other passive role.
func (g *streamsGroup) passiveWithheld(m *streamsMember, t TaskID, isStandby bool) bool {
	act, sb, wu := m.holds(t)
	if p, ok := g.activeOwner[t]; ok && p == m.processID && !act {
		return true
	}
	same, other := g.standbyOwners, g.warmupOwners
	selfOther := wu
	if !isStandby {
		same, other = g.warmupOwners, g.standbyOwners
		selfOther = sb
	}
	return same[t][m.processID] > 0 || othersOnProcess(other, m, t, selfOther) > 0
}
