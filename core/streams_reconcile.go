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
		return g.nextAssignment(m, m.epoch, owned), nil
	case memberUnrevokedTasks:
		if owned == nil || owned.intersects(m.pending) {
			return m, nil
		}
		return g.nextAssignment(m, m.epoch+1, owned), nil
	case memberUnreleasedTasks:
		return g.nextAssignment(m, m.epoch, owned), nil
	default:
		if owned == nil || !owned.isEmpty() {
			return nil, errf(kerr.FencedMemberEpoch, "The streams group member is in a unknown state. The member must abandon all its tasks and rejoin.")
		}
		return g.nextAssignment(m, targetEpoch, owned), nil
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

// nextAssignment is Kafka 4.4's computeNextAssignment + buildNewMember:
// per role, kept = current ∩ target, revoke = current − kept, assign =
// target − kept minus withheld tasks; then the in-place role changes; then
// either revocation (UNREVOKED_TASKS at revokeEpoch, only while the member
// has not already reported the revoked tasks gone) or the new assignment at
// the target epoch.
func (g *streamsGroup) nextAssignment(m *streamsMember, revokeEpoch int32, owned *ownedTasksReport) *streamsMember {
	targetEpoch := g.assignmentEpoch
	target, ok := g.target[m.id]
	if !ok {
		target = emptyTuple()
	}
	cur := m.assigned
	kept, revoke, assign := emptyOwned(), emptyOwned(), emptyOwned()
	withheld := false
	for t, e := range cur.active {
		if target.active.has(t) {
			kept.active[t] = e
		} else {
			revoke.active[t] = e
		}
	}
	for t := range target.active {
		if _, k := cur.active[t]; k {
			continue
		}
		if g.activeWithheld(m, t) {
			withheld = true
		} else {
			assign.active[t] = targetEpoch
		}
	}
	withheld = diffRole(cur.standby, target.standby, kept.standby, revoke.standby, assign.standby,
		func(t TaskID) bool { return g.standbyWithheld(m, t) }) || withheld
	withheld = diffRole(cur.warmup, target.warmup, kept.warmup, revoke.warmup, assign.warmup,
		func(t TaskID) bool { return g.warmupWithheld(m, t) }) || withheld

	// Demotion: an active task that becomes a standby keeps its state; the
	// standby is granted at once (the active still goes through revocation).
	for t := range cur.active {
		grantNow(assign.standby, kept.standby, t)
	}
	// Standby <-> warm-up changes need no revocation.
	for t := range cur.standby {
		if grantNow(assign.warmup, kept.warmup, t) {
			delete(revoke.standby, t)
		}
	}
	for t := range cur.warmup {
		if grantNow(assign.standby, kept.standby, t) {
			delete(revoke.warmup, t)
		}
	}
	// Promotion: a standby or warm-up that becomes active is never revoked;
	// it is kept until the active is granted.
	for t := range cur.standby {
		if target.active.has(t) {
			delete(revoke.standby, t)
		}
	}
	for t := range cur.warmup {
		if target.active.has(t) {
			delete(revoke.warmup, t)
		}
	}
	revoking := !revoke.isEmpty() && owned.notReleased(revoke)
	for _, roles := range [][2]taskSet{{cur.standby, kept.standby}, {cur.warmup, kept.warmup}} {
		for t := range roles[0] {
			if !target.active.has(t) {
				continue
			}
			if _, granted := assign.active[t]; revoking || !granted {
				roles[1][t] = struct{}{}
			}
		}
	}

	u := m.clone()
	u.prevEpoch = m.epoch
	u.pending = emptyOwned()
	switch {
	case revoking:
		u.state, u.epoch, u.assigned, u.pending = memberUnrevokedTasks, revokeEpoch, kept, revoke
	case !assign.isEmpty():
		u.state, u.epoch, u.assigned = memberStable, targetEpoch, mergeOwned(kept, assign)
		if withheld {
			u.state = memberUnreleasedTasks
		}
	case withheld:
		u.state, u.epoch, u.assigned = memberUnreleasedTasks, targetEpoch, kept
	default:
		u.state, u.epoch, u.assigned = memberStable, targetEpoch, kept
	}
	return u
}

// diffRole splits one role's tasks into kept, revoke and assign; it reports
// whether a target task was withheld.
func diffRole(cur, target, kept, revoke, assign taskSet, withheldFn func(TaskID) bool) bool {
	withheld := false
	for t := range cur {
		if target.has(t) {
			kept[t] = struct{}{}
		} else {
			revoke[t] = struct{}{}
		}
	}
	for t := range target {
		if cur.has(t) {
			continue
		}
		if withheldFn(t) {
			withheld = true
		} else {
			assign[t] = struct{}{}
		}
	}
	return withheld
}

// grantNow moves t from a pending grant to the kept set, if it is pending.
func grantNow(assign, kept taskSet, t TaskID) bool {
	if !assign.has(t) {
		return false
	}
	delete(assign, t)
	kept[t] = struct{}{}
	return true
}

// notReleased reports whether the member may still own some of the tasks
// in p: it did not report its tasks, or reported one of them.
func (o *ownedTasksReport) notReleased(p ownedTasks) bool {
	return o == nil || o.intersects(p)
}

func mergeOwned(a, b ownedTasks) ownedTasks {
	out := emptyOwned()
	for _, x := range []ownedTasks{a, b} {
		for t, e := range x.active {
			out.active[t] = e
		}
		for t := range x.standby {
			out.standby[t] = struct{}{}
		}
		for t := range x.warmup {
			out.warmup[t] = struct{}{}
		}
	}
	return out
}

// The withholding predicates (Kafka 4.4's isUnreleased*Task). They look at
// the ownership indexes, which hold every member's assigned and pending
// tasks by process, and at the member's own assigned tasks to tell "another
// member on this process" from the member itself.

// onProcess reports whether m's process holds t in idx.
func onProcess(idx ownerIndex, m *streamsMember, t TaskID) bool {
	return idx[t].count(m.processID) > 0
}

// runByAnotherOnProcess: t runs active on m's process, not on m itself.
func (g *streamsGroup) runByAnotherOnProcess(m *streamsMember, t TaskID) bool {
	p, ok := g.activeOwner[t]
	_, self := m.assigned.active[t]
	return ok && p == m.processID && !self
}

// activeWithheld: any process holds t active, or another member of m's
// process holds it as standby or warm-up.
func (g *streamsGroup) activeWithheld(m *streamsMember, t TaskID) bool {
	if _, ok := g.activeOwner[t]; ok {
		return true
	}
	return onProcess(g.standbyOwners, m, t) && !m.assigned.standby.has(t) ||
		onProcess(g.warmupOwners, m, t) && !m.assigned.warmup.has(t)
}

// standbyWithheld: another member of m's process runs t active, m's process
// already has it as standby, or another member of m's process has it as a
// warm-up.
func (g *streamsGroup) standbyWithheld(m *streamsMember, t TaskID) bool {
	return g.runByAnotherOnProcess(m, t) || onProcess(g.standbyOwners, m, t) ||
		onProcess(g.warmupOwners, m, t) && !m.assigned.warmup.has(t)
}

// warmupWithheld: m's process runs t active (m included), another member of
// m's process has it as standby, or m's process already has it as warm-up.
func (g *streamsGroup) warmupWithheld(m *streamsMember, t TaskID) bool {
	p, ok := g.activeOwner[t]
	return ok && p == m.processID ||
		onProcess(g.standbyOwners, m, t) && !m.assigned.standby.has(t) ||
		onProcess(g.warmupOwners, m, t)
}
