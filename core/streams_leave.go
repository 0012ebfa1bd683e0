package core

import (
	"slices"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Leaving and fencing (Kafka's streamsGroupLeave, streamsGroupFenceMember)
// and the session and rebalance timers.

// streamsLeave handles epoch -1 (leave) and -2 (static member leaves for now).
func (c *Coordinator) streamsLeave(req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, *kafkaError) {
	g, ok := c.groups[req.Group].(*streamsGroup)
	if !ok {
		return nil, errf(kerr.GroupIDNotFound, "Streams group %s not found.", req.Group)
	}
	var m *streamsMember
	if req.InstanceID != nil {
		id, exists := g.staticMembers[*req.InstanceID]
		if !exists {
			return nil, errf(kerr.UnknownMemberID, "Member with instance id %s is not a member of group %s.", *req.InstanceID, g.id)
		}
		if id != req.MemberID {
			return nil, errf(kerr.FencedInstanceID, "Static member %s with instance id %s is fenced by member %s.", req.MemberID, *req.InstanceID, id)
		}
		m = g.members[id]
	} else if m = g.members[req.MemberID]; m == nil {
		return nil, errf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, g.id)
	}
	if req.ShutdownApplication {
		g.soft.shutdownBy = m.id
	}
	if req.MemberEpoch == staticLeaveEpoch {
		c.staticLeave(g, m)
	} else {
		c.noteDeparture(g.id, m.processID)
		c.fenceMember(g, m.id, EventMemberLeft, ReasonLeave)
		c.departFromProcess(g, m.processID)
	}
	resp := &kmsg.StreamsGroupHeartbeatResponse{Version: req.Version}
	resp.Default()
	resp.MemberID, resp.MemberEpoch = req.MemberID, req.MemberEpoch
	resp.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{}
	return resp, nil
}

// staticLeave keeps a static member's tasks for its return: epoch -2,
// nothing pending, active assignment epochs reset to 0 (fencing commits of
// the old incarnation); previous epoch and state are kept, as in Kafka. The
// group epoch does not move.
func (c *Coordinator) staticLeave(g *streamsGroup, m *streamsMember) {
	u := m.clone()
	u.epoch = staticLeaveEpoch
	u.pending = emptyOwned()
	u.assigned.active = taskEpochs{}
	for t := range m.assigned.active {
		u.assigned.active[t] = 0
	}
	c.write(currentAssignmentRecord(g.id, u))
	c.emit(Event{Kind: EventMemberLeft, Group: g.id, Member: m.id, Reason: ReasonStaticLeave, Epoch: g.groupEpoch, MemberEpoch: staticLeaveEpoch})
	c.cancelTimer(rebalanceTimerKey(g.id, m.id))
	c.noteRollDeparture(g)
}

// fenceMember removes a member: its three tombstones in replay order, a
// group epoch bump, and for the last member the target metadata at the new
// epoch so the empty group is not left Assigning. kind (EventMemberLeft or
// EventMemberFenced) and reason say why, in the batch's events.
func (c *Coordinator) fenceMember(g *streamsGroup, id string, kind EventKind, reason EventReason) {
	// Room for what it writes, in one allocation each rather than the
	// appends' doubling: a mass expiry fences thousands, one a step.
	c.out.Records = slices.Grow(c.out.Records, 5)
	c.out.Events = slices.Grow(c.out.Events, 2)
	c.out.Timers = slices.Grow(c.out.Timers, 2)
	c.writeMemberTombstones(g, id)
	c.bumpGroupEpoch(g, g.metadataHash, g.validatedTopologyEpoch, g.lastAssignmentConfigs)
	c.emit(Event{Kind: kind, Group: g.id, Member: id, Reason: reason, Epoch: g.groupEpoch, MemberEpoch: leaveEpoch})
	c.emitEpochBumped(g, ReasonMemberLeft)
	if len(g.members) == 0 {
		c.write(records.Record{Key: records.StreamsGroupTargetAssignmentMetadataKey{GroupID: g.id},
			Value: records.StreamsGroupTargetAssignmentMetadataValue{AssignmentEpoch: g.groupEpoch}})
	}
	c.cancelTimer(sessionTimerKey(g.id, id))
	c.cancelTimer(rebalanceTimerKey(g.id, id))
	delete(g.soft.taskOffsets, id)
	c.noteRollDeparture(g)
	c.afterFence(g, id) // online migration: classic timers, downgrade
}

// scheduleSession (re)starts a member's session timer.
func (c *Coordinator) scheduleSession(g *streamsGroup, member string) {
	if m := g.members[member]; m != nil {
		member = m.id // the timer's key keeps the member's string, not a request's copy
	}
	c.setTimer(timer{key: sessionTimerKey(g.id, member), deadline: c.now + int64(c.sessionTimeoutOf(g, member)),
		kind: timerStreamsSession, group: g.id, member: member})
}

func init() {
	registerTimerKind(timerStreamsSession, func(c *Coordinator, t timer) {
		if g, ok := c.groups[t.group].(*streamsGroup); ok && g.members[t.member] != nil {
			c.fenceMember(g, t.member, EventMemberFenced, ReasonSessionTimeout)
		}
	})
	registerTimerKind(timerStreamsRebalance, func(c *Coordinator, t timer) {
		g, ok := c.groups[t.group].(*streamsGroup)
		if !ok {
			return
		}
		if m := g.members[t.member]; m != nil && m.epoch == t.epoch {
			c.fenceMember(g, t.member, EventMemberFenced, ReasonRebalanceTimeout)
		}
	})
	groupDeleters[GroupKindStreams] = func(c *Coordinator, gr Group) { c.deleteStreamsGroup(gr.(*streamsGroup)) }
}

// deleteStreamsGroup writes the tombstones of an empty streams group in
// Kafka's order (createGroupTombstoneRecords).
func (c *Coordinator) deleteStreamsGroup(g *streamsGroup) {
	ids := g.sortedMemberIDs()
	for _, id := range ids {
		c.write(records.Record{Key: records.StreamsGroupCurrentMemberAssignmentKey{GroupID: g.id, MemberID: id}})
	}
	// Targets of ids without a member can exist after replaying an odd log.
	targets := make([]string, 0, len(g.target))
	for id := range g.target {
		targets = append(targets, id)
	}
	sortStrings(targets)
	for _, id := range targets {
		c.write(records.Record{Key: records.StreamsGroupTargetAssignmentMemberKey{GroupID: g.id, MemberID: id}})
	}
	c.write(records.Record{Key: records.StreamsGroupTargetAssignmentMetadataKey{GroupID: g.id}})
	for _, id := range ids {
		c.write(records.Record{Key: records.StreamsGroupMemberMetadataKey{GroupID: g.id, MemberID: id}})
	}
	c.write(records.Record{Key: g.metadataKey()})
	c.write(records.Record{Key: records.StreamsGroupTopologyKey{GroupID: g.id}})
}

// streamsOnLoaded schedules a loaded group's timers and requests an
// assignor run if its group epoch is ahead of its assignment epoch.
func (c *Coordinator) streamsOnLoaded(g *streamsGroup) {
	for _, id := range g.sortedMemberIDs() {
		m := g.members[id]
		c.scheduleSession(g, id)
		if m.state == memberUnrevokedTasks && m.classic != nil {
			c.setJoinTimerIfAbsent(g, m) // online migration: classic members confirm by rejoining
		} else if m.classic != nil {
			// Online migration: it may have been between JoinGroup and
			// SyncGroup (nothing in the log says); fence it if it never
			// comes back (docs/MIGRATION.md, persistence).
			c.setTimer(timer{key: migrationSyncKey(g.id, id), deadline: c.now + int64(m.rebalanceTimeoutMs),
				kind: timerMigrationSyncRestored, group: g.id, member: id})
		} else if m.state == memberUnrevokedTasks {
			c.setTimer(timer{key: rebalanceTimerKey(g.id, id), deadline: c.now + int64(m.rebalanceTimeoutMs),
				kind: timerStreamsRebalance, group: g.id, member: id, epoch: m.epoch})
		}
	}
	if g.topology != nil {
		g.soft.configured = c.configureTopology(g.id, g.topology)
	}
	if len(g.members) > 0 && g.groupEpoch > g.assignmentEpoch && g.soft.configured.ready() &&
		g.validatedTopologyEpoch == g.topology.Epoch {
		c.startAssignment(g)
	}
	c.armProbeOnLoaded(g)
}
