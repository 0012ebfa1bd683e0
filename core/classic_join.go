package core

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// joinGroup handles a joinGroup request (v0-9) for a classic group, as
// Kafka 4.4's GroupCoordinatorService.joinGroup and
// GroupMetadataManager.classicGroupJoin do. The response may be withheld
// (parked) until the join phase completes: it then comes out of a later
// entry point (another joinGroup, a LeaveGroup or a Tick). An empty streams
// group with the same id is deleted first (offline conversion); a
// non-empty one gets INCONSISTENT_GROUP_PROTOCOL.
func (c *Coordinator) joinGroup(now int64, id RequestID, client ClientInfo, req *kmsg.JoinGroupRequest) Output {
	c.begin(now)
	if resp := c.classicJoin(id, client, req); resp != nil {
		resp.Version = req.Version
		c.respond(id, resp)
	}
	return c.end()
}

func classicProtocolsOf(req *kmsg.JoinGroupRequest) []classicProtocol {
	out := make([]classicProtocol, len(req.Protocols))
	for i, p := range req.Protocols {
		out[i] = classicProtocol{name: p.Name, metadata: append([]byte{}, p.Metadata...)}
	}
	return out
}

// classicJoin returns the response to send now, or nil if it is parked or
// already released.
func (c *Coordinator) classicJoin(id RequestID, client ClientInfo, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	if req.Group == "" {
		return classicJoinError(req.MemberID, errInvalidGroupID)
	}
	cc := c.classicConfig(req.Group)
	if req.SessionTimeoutMillis < cc.MinSessionTimeoutMs || req.SessionTimeoutMillis > cc.MaxSessionTimeoutMs {
		return classicJoinError(req.MemberID, errInvalidSessionTimeout)
	}
	if req.Version == 0 {
		r := *req // v0 has no rebalance timeout: Kafka uses the session timeout
		r.RebalanceTimeoutMillis = r.SessionTimeoutMillis
		req = &r
	}
	existing, had := c.groups[req.Group]
	if sg, ok := c.streamsGroupForClassic(req.Group); ok {
		return c.bridgeJoin(sg, id, client, req) // online migration
	}
	if g, ok := c.consumerGroupForClassic(req.Group); ok {
		return c.consumerBridgeJoin(g, client, req) // online migration
	}
	if had && existing.Kind() != GroupKindClassic {
		if !existing.IsEmpty() || groupDeleters[existing.Kind()] == nil {
			return classicJoinError("", errInconsistentProtocol)
		}
		groupDeleters[existing.Kind()](c, existing) // offline conversion (Kafka 4.2+)
		c.emitGroup(EventGroupConverted, req.Group, ReasonOfflineToClassic, 0)
		for _, key := range c.timerKeysOfGroup(req.Group) {
			c.cancelTimer(key)
		}
		had = false
	}
	unknown := req.MemberID == ""
	var g *classicGroup
	if had {
		g = existing.(*classicGroup)
		c.snapshotClassic(g)
	} else {
		if !unknown {
			return classicJoinError(req.MemberID, errUnknownMemberID)
		}
		if e := c.groupCapReached(req.Group); e != nil {
			return classicJoinError("", e.code)
		}
		g = newClassicGroup(req.Group)
		g.stateTime = c.now
		c.putGroup(req.Group, g)
		c.emitGroup(EventGroupCreated, req.Group, "", 0)
	}
	before := len(c.out.Records)
	resp := c.joinClassicGroup(g, id, client, req, unknown)
	if !had && len(c.out.Records) == before {
		// A new group is committed by writing its empty metadata.
		c.write(emptyGroupMetadataRecord(g))
	}
	return resp
}

func (c *Coordinator) joinClassicGroup(g *classicGroup, id RequestID, client ClientInfo, req *kmsg.JoinGroupRequest, unknown bool) *kmsg.JoinGroupResponse {
	if !c.classicAcceptJoining(g, req.MemberID) {
		g.remove(req.MemberID)
		return classicJoinError("", errGroupMaxSizeReached)
	}
	if unknown {
		return c.classicJoinNew(g, id, client, req)
	}
	return c.classicJoinExisting(g, id, client, req)
}

// acceptJoiningMember enforces group.max.size.
func (c *Coordinator) classicAcceptJoining(g *classicGroup, memberID string) bool {
	max := int(c.classicConfig(g.id).MaxSize)
	m, known := g.members[memberID]
	switch g.state {
	case classicPreparingRebalance:
		return (known && m.join.waiting) || g.numAwaitingJoin() < max
	case classicCompletingRebalance, classicStable:
		return known || len(g.members) < max
	}
	return true
}

func (c *Coordinator) classicJoinNew(g *classicGroup, id RequestID, client ClientInfo, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	ps := classicProtocolsOf(req)
	if g.state == classicDead {
		return classicJoinError("", errCoordinatorNotAvailable)
	}
	if !g.supportsProtocols(req.ProtocolType, ps) {
		return classicJoinError("", errInconsistentProtocol)
	}
	newID := c.classicMemberID(g, client.ClientID, req.InstanceID)
	if req.InstanceID != nil {
		if old, ok := g.static[*req.InstanceID]; ok {
			return c.classicReplaceStatic(g, id, req, old, newID)
		}
		c.classicAddAndRebalance(g, id, client, req, newID)
		return nil
	}
	if req.Version >= 4 {
		// MEMBER_ID_REQUIRED: remember the id as pending; the client
		// must rejoin with it within the session timeout.
		g.pendingJoin[newID] = true
		c.setTimer(timer{key: classicHeartbeatKey(g.id, newID), deadline: c.now + int64(req.SessionTimeoutMillis),
			kind: timerClassicHeartbeat, group: g.id, member: newID})
		return classicJoinError(newID, errMemberIDRequired)
	}
	c.classicAddAndRebalance(g, id, client, req, newID)
	return nil
}

func (c *Coordinator) classicJoinExisting(g *classicGroup, id RequestID, client ClientInfo, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	ps := classicProtocolsOf(req)
	switch {
	case g.state == classicDead:
		return classicJoinError(req.MemberID, errCoordinatorNotAvailable)
	case !g.supportsProtocols(req.ProtocolType, ps):
		return classicJoinError(req.MemberID, errInconsistentProtocol)
	case g.pendingJoin[req.MemberID]:
		if req.InstanceID != nil {
			return classicJoinError(req.MemberID, errUnknownMemberID) // Kafka: IllegalStateException
		}
		c.classicAddAndRebalance(g, id, client, req, req.MemberID)
		return nil
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return classicJoinError(req.MemberID, code)
	}
	m := g.members[req.MemberID]
	switch g.state {
	case classicPreparingRebalance:
		c.classicUpdateAndRebalance(g, m, id, req)
		return nil
	case classicCompletingRebalance:
		if m.matches(ps) {
			// Lost JoinGroup response: answer with the current generation.
			return g.joinResponse(m, g.isLeader(m.id))
		}
		c.classicUpdateAndRebalance(g, m, id, req)
		return nil
	case classicStable:
		if g.isLeader(m.id) || !m.matches(ps) {
			c.classicUpdateAndRebalance(g, m, id, req)
			return nil
		}
		return g.joinResponse(m, false)
	}
	return classicJoinError(req.MemberID, errUnknownMemberID) // unexpected Empty state
}

// updateMember replaces a member's protocols and timeouts and parks its
// JoinGroup (ClassicGroup.updateMember).
func (c *Coordinator) classicUpdateMember(g *classicGroup, m *classicMember, req *kmsg.JoinGroupRequest, id RequestID) {
	m.protocols = classicProtocolsOf(req)
	m.rebalanceTimeoutMs, m.sessionTimeoutMs = req.RebalanceTimeoutMillis, req.SessionTimeoutMillis
	if m.join.waiting {
		// A newer JoinGroup replaces the parked one, which Kafka's future
		// would never complete; answer it so the client is not stuck.
		c.releaseClassic(g, &m.join, classicJoinError(m.id, errUnknownMemberID))
	}
	c.parkClassic(&m.join, id, req.Version)
}

func (c *Coordinator) classicUpdateAndRebalance(g *classicGroup, m *classicMember, id RequestID, req *kmsg.JoinGroupRequest) {
	c.classicUpdateMember(g, m, req, id)
	c.classicMaybeRebalance(g)
}

// addMemberAndRebalance adds a new member with a parked JoinGroup. Its
// heartbeat timer is the new-member join timeout.
func (c *Coordinator) classicAddAndRebalance(g *classicGroup, id RequestID, client ClientInfo, req *kmsg.JoinGroupRequest, memberID string) {
	m := &classicMember{id: memberID, instanceID: req.InstanceID, clientID: client.ClientID, clientHost: client.ClientHost,
		rebalanceTimeoutMs: req.RebalanceTimeoutMillis, sessionTimeoutMs: req.SessionTimeoutMillis,
		protocolType: req.ProtocolType, protocols: classicProtocolsOf(req), isNew: true}
	if g.state == classicPreparingRebalance && g.previousState == classicEmpty {
		g.newMemberAdd = true
	}
	g.add(m)
	c.emit(Event{Kind: EventMemberJoined, Group: g.id, Member: memberID, Epoch: g.generation, MemberEpoch: g.generation})
	c.parkClassic(&m.join, id, req.Version)
	c.scheduleClassicHeartbeat(g, m, c.cfg.Classic.NewMemberJoinTimeoutMs)
	c.classicMaybeRebalance(g)
}

// classicReplaceStatic handles a known group.instance.id joining with an
// unknown member id (updateStaticMemberThenRebalanceOrCompleteJoin): the
// old member id is fenced (its parked requests get FENCED_INSTANCE_ID) and
// the new id takes over its assignment. In a Stable group whose selected
// protocol does not change, no rebalance happens: the group's record is
// rewritten with the new member id and the member gets the current
// generation. A failed append rolls the replacement back.
func (c *Coordinator) classicReplaceStatic(g *classicGroup, id RequestID, req *kmsg.JoinGroupRequest, oldID, newID string) *kmsg.JoinGroupResponse {
	currentLeader := g.leader
	old := g.members[oldID]
	fj := kmsg.NewPtrJoinGroupResponse()
	fj.MemberID, fj.ErrorCode, fj.Members = oldID, errFencedInstanceID, []kmsg.JoinGroupResponseMember{}
	c.releaseClassic(g, &old.join, fj)
	fs := kmsg.NewPtrSyncGroupResponse()
	fs.ErrorCode, fs.MemberAssignment = errFencedInstanceID, []byte{}
	c.releaseClassic(g, &old.sync, fs)
	m := &classicMember{id: newID, instanceID: old.instanceID, clientID: old.clientID, clientHost: old.clientHost,
		rebalanceTimeoutMs: old.rebalanceTimeoutMs, sessionTimeoutMs: old.sessionTimeoutMs, protocolType: old.protocolType,
		protocols: old.protocols, assignment: old.assignment}
	delete(g.members, oldID)
	g.members[newID] = m
	c.emit(Event{Kind: EventMemberFenced, Group: g.id, Member: oldID, Reason: ReasonStaticReplacement, Epoch: g.generation, MemberEpoch: leaveEpoch})
	c.emit(Event{Kind: EventMemberJoined, Group: g.id, Member: newID, Reason: ReasonStaticReplacement, Epoch: g.generation, MemberEpoch: g.generation})
	for i, x := range g.order {
		if x == oldID {
			g.order[i] = newID
		}
	}
	if g.isLeader(oldID) {
		l := newID
		g.leader = &l
	}
	g.static[*req.InstanceID] = newID
	if g.pendingSync[oldID] {
		delete(g.pendingSync, oldID)
		g.pendingSync[newID] = true
	}
	c.cancelTimer(classicHeartbeatKey(g.id, oldID))
	c.scheduleClassicHeartbeat(g, m, m.sessionTimeoutMs)
	m.protocols = classicProtocolsOf(req)
	m.rebalanceTimeoutMs, m.sessionTimeoutMs = req.RebalanceTimeoutMillis, req.SessionTimeoutMillis
	switch g.state {
	case classicStable:
		if deref0(g.protocolName) == g.selectProtocol() {
			assignment := map[string][]byte{}
			for _, x := range g.allMembers() {
				assignment[x.id] = x.assignment
			}
			c.write(groupMetadataRecord(g, assignment))
			c.emitGroup(EventGenerationStored, g.id, ReasonStaticReplacement, g.generation)
			if req.Version >= 9 {
				r := g.joinResponse(m, g.isLeader(newID))
				r.SkipAssignment = g.isLeader(newID)
				return r
			}
			r := g.joinResponse(m, false)
			r.LeaderID = deref0(currentLeader)
			return r
		}
		c.parkClassic(&m.join, id, req.Version)
		c.classicMaybeRebalance(g)
	case classicCompletingRebalance:
		c.parkClassic(&m.join, id, req.Version)
		c.classicPrepareRebalance(g)
	default: // PreparingRebalance
		c.parkClassic(&m.join, id, req.Version)
		c.classicMaybeCompleteJoin(g)
	}
	return nil
}
