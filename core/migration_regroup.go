package core

// Regrouping a restarted process (online migration): when the same-process
// rule fences k members of process P that a restarted instance of P
// replaces (docs/MIGRATION.md, "Same process, new protocol"), P's new
// members are its k stream threads joining one after the other, within
// moments of each other. A target computed at the first one's join sees P
// with one thread: it gives P part of its old tasks and the rest to other
// processes, and the next target — one assignment interval later — takes
// tasks back from those processes for P's other threads: a second
// revocation round, and tasks moved twice. So the target waits, at most
// one assignment interval (the delay streams.assignment.interval.ms
// allows already) and half the assignor wait, until P has k members on
// its new protocol, and P's
// joins wait for it (as a join waits for an assignor run) and get their
// tasks in their own responses. A downgrade's last step (the joins leave
// only classic members) waits the same way before converting the group,
// so the classic group rebalances once with all of the process's threads
// instead of once per thread. Soft state: a fail-over forgets it and the
// next heartbeat computes the target as before.

// processRegroup is a restarted process whose replacement members are
// still joining.
type processRegroup struct {
	process  string
	classic  bool  // the new members speak the classic protocol (downgrade)
	expected int   // members fenced: the process's threads before the restart
	deadline int64 // the target waits no longer than this
}

// awaitRegroup starts waiting for process's remaining members after the
// same-process rule fenced fenced of its members for a join on protocol
// classic (true: a classic JoinGroup). One thread needs no wait, nor does
// a group configured to assign at once (assignment interval 0). The wait
// ends by half of the assignor wait, so a join that waits with it still
// has the other half for the assignor's answer.
func (c *Coordinator) awaitRegroup(g *streamsGroup, process string, classic bool, fenced int) {
	wait := int64(c.streamsConfig(g.id).AssignmentIntervalMs)
	if c.cfg.AssignorWaitMs > 0 {
		wait = min(wait, c.cfg.AssignorWaitMs/2)
	}
	if fenced < 2 || wait <= 0 {
		return
	}
	old := g.soft.regroup
	g.soft.regroup = &processRegroup{process: process, classic: classic, expected: fenced, deadline: c.now + wait}
	c.onUndo(func() { g.soft.regroup = old })
	c.setTimer(timer{key: regroupKey(g.id), deadline: g.soft.regroup.deadline, kind: timerStreamsRegroup, group: g.id})
}

// regroupHeld reports whether a restarted process's members are still
// joining, and which process; it ends the wait once they have all joined
// or the deadline has passed.
func (c *Coordinator) regroupHeld(g *streamsGroup) (string, bool) {
	r := g.soft.regroup
	if r == nil {
		return "", false
	}
	n := 0
	for _, m := range g.members {
		if m.processID == r.process && (m.classic != nil) == r.classic {
			n++
		}
	}
	if n < r.expected && c.now < r.deadline {
		return r.process, true
	}
	c.endRegroup(g)
	return "", false
}

func (c *Coordinator) endRegroup(g *streamsGroup) {
	old := g.soft.regroup
	g.soft.regroup = nil
	c.onUndo(func() { g.soft.regroup = old })
	c.cancelTimer(regroupKey(g.id))
}

// startAssignmentIfDue requests an assignor run when the group epoch is
// ahead of the assignment epoch and nothing holds the target back: the
// initial rebalance delay, the assignment interval, a regrouping process.
func (c *Coordinator) startAssignmentIfDue(g *streamsGroup) {
	if g.groupEpoch > g.assignmentEpoch && len(g.members) > 0 && !c.hasTimer(initialDelayKey(g.id)) &&
		c.intervalElapsed(g, c.streamsConfig(g.id)) {
		if _, held := c.regroupHeld(g); !held {
			c.startAssignment(g)
		}
	}
}

func init() {
	registerTimerKind(timerStreamsRegroup, func(c *Coordinator, t timer) {
		g, ok := c.groups[t.group].(*streamsGroup)
		if !ok || g.soft.regroup == nil {
			return
		}
		c.endRegroup(g)
		// The configured topology is soft state too: without it (a group
		// restored by a fail-over) the next heartbeat computes the target.
		if g.soft.configured != nil {
			c.startAssignmentIfDue(g)
		}
	})
}
