package core

import "github.com/coordhost/coordhost/core/records"

// Downgrade: once only classic members remain in a streams group, the
// group converts back to a classic group whose members keep their current
// assignment (Kafka's convertToClassicGroup, for streams;
// docs/MIGRATION.md). Unlike Kafka, which converts at the last
// streams-protocol member's leave and then rebalances so that a classic
// leader assigns, coordhost converts only when the group has settled — a
// target without the departed members, every member reconciled to it —
// and no process that left on its own is expected back (a rolling
// restart's instance that closed with a leave): the classic group then
// starts Stable and needs no rebalance. Until then the bridge serves the
// classic members as in any mixed group. A Kafka Streams leader's
// HighAvailabilityTaskAssignor places tasks round-robin over the
// processes, not where they run, so each classic rebalance of a rolling
// downgrade's last step moved tasks between the surviving instances that
// the next one moved back.

// afterFence runs after fenceMember removed a member: it cancels the
// member's classic timers and downgrades the group when it may.
func (c *Coordinator) afterFence(g *streamsGroup, id string) {
	c.cancelTimer(migrationJoinKey(g.id, id))
	c.cancelTimer(migrationSyncKey(g.id, id))
	c.maybeDowngrade(g)
}

// downgradable says whether maybeDowngrade would convert g now.
func (c *Coordinator) downgradable(g *streamsGroup) bool {
	if c.migration.noDowngrade || len(g.members) == 0 || c.replaying {
		return false
	}
	if !c.migrationPolicy(g.id).allowsDowngrade() || int32(len(g.members)) > c.classicConfig(g.id).MaxSize {
		return false
	}
	for _, m := range g.members {
		if m.classic == nil {
			return false
		}
	}
	return true
}

// settled says whether g's target includes every member and every member
// has reconciled to it: nothing to assign, revoke or hand over.
func (g *streamsGroup) settled() bool {
	if g.groupEpoch != g.assignmentEpoch {
		return false
	}
	for _, m := range g.members {
		if m.state != memberStable || m.epoch != g.assignmentEpoch {
			return false
		}
	}
	return true
}

// awaitingReturn says whether a process that left g on its own within a
// session timeout has no member in g: an instance of a rolling restart
// that closed with a leave, expected back. Its return then gets its tasks
// from coordhost's target (the regroup wait) instead of a classic leader's
// reassignment of the whole group.
func (c *Coordinator) awaitingReturn(g *streamsGroup) bool {
	window := int64(c.streamsConfig(g.id).SessionTimeoutMs)
	for process, d := range c.migration.departed[g.id] {
		if c.now-d.at <= window && c.processMembers(g, process, nil, 1) == 0 {
			return true
		}
	}
	return false
}

// maybeDowngrade converts g back to classic when every remaining member is
// classic, the policy allows it, the classic max size fits, g has settled
// and no process that left is expected back. It is asked after every
// change that can bring that about: a member removed, a classic member's
// JoinGroup (it reconciles) or Heartbeat (it may start the target).
func (c *Coordinator) maybeDowngrade(g *streamsGroup) {
	if !c.downgradable(g) || !g.settled() || c.awaitingReturn(g) {
		return
	}
	ids := g.sortedMemberIDs()
	assignments := map[string][]byte{}
	epochs := map[string]int32{}
	cg := newClassicGroup(g.id)
	pt, pn := consumerProtocolType, streamProtocolName
	cg.protocolType, cg.protocolName, cg.generation, cg.stateTime = &pt, &pn, g.groupEpoch, c.now
	for _, id := range ids {
		m := g.members[id]
		b, err := c.classicAssignment(g, m)
		if err != nil {
			b = []byte{}
		}
		assignments[id] = b
		epochs[id] = m.epoch
		protos := make([]classicProtocol, len(m.classic.SupportedProtocols))
		for i, p := range m.classic.SupportedProtocols {
			protos[i] = classicProtocol{name: p.Name, metadata: p.Metadata}
		}
		cm := &classicMember{id: id, instanceID: m.instanceID, clientID: m.clientID, clientHost: m.clientHost,
			rebalanceTimeoutMs: m.rebalanceTimeoutMs, sessionTimeoutMs: m.classic.SessionTimeoutMs,
			protocolType: consumerProtocolType, protocols: protos}
		cg.members[id] = cm
		cg.order = append(cg.order, id)
	}
	// Like Kafka's ClassicGroup.add, the first member becomes leader until
	// the rebalance elects one among the members that rejoin.
	leader := ids[0]
	cg.leader = &leader
	c.releaseParkedAtConversion(g)
	for _, key := range c.timerKeysOfGroup(g.id) {
		c.cancelTimer(key)
	}
	c.deleteStreamsGroup(g)
	rec := groupMetadataRecord(cg, assignments)
	v := rec.Value.(records.GroupMetadataValue)
	v.Version = 4 // flexible: carries each member's last epoch (tag 1000)
	for i := range v.Members {
		e := epochs[v.Members[i].MemberID]
		v.Members[i].MigrationEpoch = &e
	}
	rec.Value = v
	c.write(rec)
	c.emitGroup(EventGroupConverted, g.id, ReasonOnlineToClassic, cg.generation)
	live := c.groups[g.id].(*classicGroup)
	c.snapshotClassic(live)
	// Settled: every member's generation is the group's and its
	// assignment the tasks it runs, so the group stays Stable — the
	// state a replay of the record rebuilds — and nobody rejoins.
	for _, m := range live.allMembers() {
		c.scheduleClassicHeartbeat(live, m, m.sessionTimeoutMs)
	}
}

// releaseParkedAtConversion answers g's parked requests before g becomes
// a classic group: a classic member's JoinGroup with its last epoch (its
// SyncGroup then finds the classic group rebalancing), a heartbeat as
// releaseParked does (its member is gone: every member left is classic).
func (c *Coordinator) releaseParkedAtConversion(g *streamsGroup) {
	for _, p := range g.soft.parked {
		if p.join != nil {
			p.join.converted = true
		}
	}
	c.releaseParked(g)
}

// downgradedRejoin is the sharp edge of a downgrade: a classic member whose
// generation is still its last member epoch in the streams group gets
// REBALANCE_IN_PROGRESS on Heartbeat and SyncGroup — never
// ILLEGAL_GENERATION, which a Java client treats as losing all its tasks.
//
// The epochs are persisted in the downgrade's GroupMetadata record (v4,
// member tag 1000), so a coordinator that replayed the log mid-downgrade
// answers the same; the rule holds until the classic group completes a new
// generation.
func (c *Coordinator) downgradedRejoin(g *classicGroup, memberID string, generation int32) bool {
	d := g.durable
	if d == nil || d.Generation != g.generation || generation == g.generation || g.members[memberID] == nil {
		return false
	}
	for _, m := range d.Members {
		if m.MemberID == memberID && m.MigrationEpoch != nil {
			return *m.MigrationEpoch == generation
		}
	}
	return false
}

// streamsGroupForClassic routes classic requests for a non-empty streams
// group to the bridge; it reports false for groups the classic path owns.
func (c *Coordinator) streamsGroupForClassic(group string) (*streamsGroup, bool) {
	g, ok := c.groups[group].(*streamsGroup)
	return g, ok && !g.IsEmpty()
}
