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
// only classic members) waits the same way; the group converts once all
// of them have reconciled (migration_downgrade.go). Soft state: a fail-over forgets it and the
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
// still joining, or (leaving) a closing process whose other members are
// still leaving.
type processRegroup struct {
	process  string
	classic  bool  // the new members speak the classic protocol (downgrade)
	expected int   // members fenced: the process's threads before the restart
	leaving  bool  // wait for the process's last member to leave instead
	deadline int64 // the target waits no longer than this
}

// regroupWait is how long a target may wait for a process's threads: at
// most one assignment interval (0: the group assigns at once, no wait),
// and at most half of the assignor wait, so a join that waits with it
// still has the other half for the assignor's answer.
func (c *Coordinator) regroupWait(g *streamsGroup) int64 {
	wait := int64(c.streamsConfig(g.id).AssignmentIntervalMs)
	if c.cfg.AssignorWaitMs > 0 {
		wait = min(wait, c.cfg.AssignorWaitMs/2)
	}
	return wait
}

// awaitRegroup starts waiting for process's remaining members after the
// same-process rule fenced fenced of its members for a join on protocol
// classic (true: a classic JoinGroup). One thread needs no wait.
func (c *Coordinator) awaitRegroup(g *streamsGroup, process string, classic bool, fenced int) {
	if fenced < 2 {
		return
	}
	c.holdTarget(g, &processRegroup{process: process, classic: classic, expected: fenced})
}

// holdTarget makes g's next target wait for r's process, for
// regroupWait at most (no wait when that is 0), with a timer that starts
// the target at the deadline.
func (c *Coordinator) holdTarget(g *streamsGroup, r *processRegroup) {
	wait := c.regroupWait(g)
	if wait <= 0 {
		return
	}
	r.deadline = c.now + wait
	old := g.soft.regroup
	g.soft.regroup = r
	c.onUndo(func() { g.soft.regroup = old })
	c.setTimer(timer{key: regroupKey(g.id), deadline: r.deadline, kind: timerStreamsRegroup, group: g.id})
}

// Departing together: Kafka Streams' leave-group close makes each stream
// thread leave on its own, moments apart. A target computed between two
// of them (any other member's heartbeat in between) frees the first
// thread's tasks only, and the assignment interval then holds back the
// next target: the other threads' tasks have no owner for one interval.
// So after a member of process P leaves while P still has members, the
// target waits until P's last member has left (or for regroupWait); the
// next heartbeat then computes it, as in Kafka.

// departFromProcess follows the leave of one of process's members from g
// (a leave heartbeat or a LeaveGroup; not a fence, whose siblings are
// fenced apart): it holds the target while process has members left, and
// ends the hold once the process's last member has left. A join's wait
// for a restarted process is not replaced.
func (c *Coordinator) departFromProcess(g *streamsGroup, process string) {
	if process == "" || c.groups[g.id] != g { // converted back to classic
		return
	}
	r := g.soft.regroup
	if r != nil && !(r.leaving && r.process == process) {
		return
	}
	left := c.processMembers(g, process, nil, 1) == 0
	switch {
	case r != nil && left:
		c.endRegroup(g)
	case r == nil && !left:
		c.holdTarget(g, &processRegroup{process: process, leaving: true})
	}
}

// processMembers counts g's members of process, of one protocol when
// classic is set (true: classic members), up to atMost: a leave in a
// large group asks only whether one is left.
func (c *Coordinator) processMembers(g *streamsGroup, process string, classic *bool, atMost int) int {
	n := 0
	for _, m := range g.members {
		if m.processID == process && (classic == nil || (m.classic != nil) == *classic) {
			if n++; n >= atMost {
				break
			}
		}
	}
	return n
}

// regroupHeld reports the wait for a process's members (joining, or
// leaving) while it holds the target back; it ends the wait once they
// have all joined or left, or the deadline has passed.
func (c *Coordinator) regroupHeld(g *streamsGroup) (*processRegroup, bool) {
	r := g.soft.regroup
	if r == nil {
		return nil, false
	}
	var waiting bool
	if r.leaving {
		waiting = c.processMembers(g, r.process, nil, 1) > 0
	} else {
		waiting = c.processMembers(g, r.process, &r.classic, r.expected) < r.expected
	}
	if waiting && c.now < r.deadline {
		return r, true
	}
	c.endRegroup(g)
	return nil, false
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
