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

// The same holds when the process's members left on their own first (a
// leave-group close): nothing is fenced at the restarted instance's first
// join, but the group remembers, for one session timeout, how many members
// of the process left; a join of that process while none of its members is
// in the group waits the same way for that many.

// departure counts the members of a process that left the group on their
// own, the last at at.
type departure struct {
	members int
	at      int64
}

// departuresKept bounds the departures remembered, per group and the
// groups with any: past it new ones are not remembered (their restarts
// then get a target per thread, as in Kafka) until old ones expire.
const departuresKept = 1024

// noteDeparture remembers that a member of process left group on its own
// (a leave heartbeat or a LeaveGroup), for one streams session timeout.
func (c *Coordinator) noteDeparture(group, process string) {
	if process == "" {
		return
	}
	window := int64(c.streamsConfig(group).SessionTimeoutMs)
	all := c.migration.departed
	byProcess := all[group]
	old, had := byProcess[process]
	d := departure{members: 1, at: c.now}
	if had && c.now-old.at <= window {
		d.members = old.members + 1
	}
	full := func() bool {
		return len(byProcess) >= departuresKept || byProcess == nil && len(all) >= departuresKept
	}
	if !had && full() {
		c.expireDepartures()
		byProcess = all[group]
		if full() {
			return
		}
	}
	if c.migration.departed == nil {
		c.migration.departed = map[string]map[string]departure{}
	}
	if byProcess == nil {
		byProcess = map[string]departure{}
		c.migration.departed[group] = byProcess
	}
	byProcess[process] = d
	c.onUndo(func() {
		if had {
			byProcess[process] = old
		} else {
			delete(byProcess, process)
		}
	})
}

// noteClassicDeparture notes the departure of a Kafka Streams member of a
// classic group (its process id is in its subscription), which an online
// upgrade may turn into a streams group before the process returns.
func (c *Coordinator) noteClassicDeparture(g *classicGroup, m *classicMember) {
	if deref0(g.protocolName) != streamProtocolName {
		return
	}
	sub, err := decodeClassicSubscription(m.metadata(streamProtocolName))
	if err != nil {
		return
	}
	c.noteDeparture(g.id, processIDString(sub.info.ProcessID))
}

// expireDepartures drops the departures older than their group's session
// timeout. They can no longer shorten anything, so dropping them needs no
// undo.
func (c *Coordinator) expireDepartures() {
	for group, byProcess := range c.migration.departed {
		window := int64(c.streamsConfig(group).SessionTimeoutMs)
		for p, d := range byProcess {
			if c.now-d.at > window {
				delete(byProcess, p)
			}
		}
		if len(byProcess) == 0 {
			delete(c.migration.departed, group)
		}
	}
}

// returningMembers is how many members process had when they left g
// within a session timeout, if none of its members other than except is
// in g now: its restarted instance's first join. The departure is used
// up.
func (c *Coordinator) returningMembers(g *streamsGroup, process, except string) int {
	byProcess := c.migration.departed[g.id]
	d, ok := byProcess[process]
	if !ok {
		return 0
	}
	for id, m := range g.members {
		if m.processID == process && id != except {
			return 0
		}
	}
	delete(byProcess, process)
	c.onUndo(func() { byProcess[process] = d })
	if c.now-d.at > int64(c.streamsConfig(g.id).SessionTimeoutMs) {
		return 0
	}
	return d.members
}

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
