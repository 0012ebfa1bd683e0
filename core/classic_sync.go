package core

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// syncGroup handles a syncGroup request. The leader's syncGroup in
// CompletingRebalance stores the generation (a GroupMetadata record) and
// completes every parked syncGroup; followers' requests are parked until
// then.
func (c *Coordinator) syncGroup(now int64, id RequestID, req *kmsg.SyncGroupRequest) Output {
	c.begin(now)
	if resp := c.classicSync(id, req); resp != nil {
		resp.Version = req.Version
		c.respond(id, resp)
	}
	return c.end()
}

func syncError(code int16) *kmsg.SyncGroupResponse {
	r := kmsg.NewPtrSyncGroupResponse()
	r.ErrorCode, r.MemberAssignment = code, []byte{}
	return r
}

func inconsistent(got, have *string) bool { return got != nil && have != nil && *got != *have }

func (c *Coordinator) classicSync(id RequestID, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	if req.Group == "" {
		return syncError(errInvalidGroupID)
	}
	if sg, ok := c.streamsGroupForClassic(req.Group); ok {
		return c.bridgeSync(sg, req) // online migration
	}
	if g, ok := c.consumerGroupForClassic(req.Group); ok {
		return c.consumerBridgeSync(g, req) // online migration
	}
	g, ok := c.groups[req.Group].(*classicGroup)
	if !ok || g.IsEmpty() {
		return syncError(errUnknownMemberID)
	}
	c.snapshotClassic(g)
	switch {
	case g.state == classicDead:
		return syncError(errCoordinatorNotAvailable)
	case c.downgradedRejoin(g, req.MemberID, req.Generation):
		return syncError(errRebalanceInProgress)
	case g.validateMember(req.MemberID, req.InstanceID) != 0:
		return syncError(g.validateMember(req.MemberID, req.InstanceID))
	case req.Generation != g.generation:
		return syncError(errIllegalGeneration)
	case inconsistent(req.ProtocolType, g.protocolType) || inconsistent(req.Protocol, g.protocolName):
		return syncError(errInconsistentProtocol)
	}
	m := g.members[req.MemberID]
	switch g.state {
	case classicPreparingRebalance:
		return syncError(errRebalanceInProgress)
	case classicCompletingRebalance:
		c.parkClassic(&m.sync, id, req.Version)
		c.classicRemovePendingSync(g, m.id)
		if g.isLeader(m.id) {
			c.classicStoreAssignment(g, req)
		}
		return nil
	}
	// Stable: return the current assignment.
	c.classicRemovePendingSync(g, m.id)
	r := kmsg.NewPtrSyncGroupResponse()
	r.ProtocolType, r.Protocol, r.MemberAssignment = g.protocolType, g.protocolName, m.assignment
	if r.MemberAssignment == nil {
		r.MemberAssignment = []byte{}
	}
	return r
}

func (c *Coordinator) classicRemovePendingSync(g *classicGroup, memberID string) {
	delete(g.pendingSync, memberID)
	if len(g.pendingSync) == 0 {
		c.cancelTimer(classicSyncKey(g.id))
	}
}

// classicStoreAssignment writes the generation with the leader's
// assignment (members it left out get an empty one), then propagates it
// and moves to Stable. The responses go out once the record is durable; a
// failed append rolls all of it back.
func (c *Coordinator) classicStoreAssignment(g *classicGroup, req *kmsg.SyncGroupRequest) {
	assignment := map[string][]byte{}
	for _, a := range req.GroupAssignment {
		assignment[a.MemberID] = append([]byte{}, a.MemberAssignment...)
	}
	for _, m := range g.allMembers() {
		if _, ok := assignment[m.id]; !ok {
			assignment[m.id] = []byte{}
		}
	}
	c.write(groupMetadataRecord(g, assignment))
	c.emitGroup(EventGenerationStored, g.id, ReasonLeaderAssignment, g.generation)
	for _, m := range g.allMembers() {
		m.assignment = assignment[m.id]
	}
	c.classicPropagate(g, 0)
	g.transitionTo(classicStable, c.now)
}

// heartbeat handles a classic heartbeat request. A classic member's
// heartbeat in a streams group may wait for the assignor run it started
// (bridgeHeartbeat); it is then answered when the run's target is in.
func (c *Coordinator) heartbeat(now int64, id RequestID, req *kmsg.HeartbeatRequest) Output {
	c.begin(now)
	if code, waits := c.classicHeartbeat(id, req); !waits {
		c.respond(id, heartbeatResponse(req, code))
	}
	return c.end()
}

func heartbeatResponse(req *kmsg.HeartbeatRequest, code int16) *kmsg.HeartbeatResponse {
	r := kmsg.NewPtrHeartbeatResponse()
	r.Version = req.Version
	r.ErrorCode = code
	return r
}

func (c *Coordinator) classicHeartbeat(id RequestID, req *kmsg.HeartbeatRequest) (code int16, waits bool) {
	if req.Group == "" {
		return errInvalidGroupID, false
	}
	if sg, ok := c.streamsGroupForClassic(req.Group); ok {
		return c.bridgeHeartbeat(sg, id, req) // online migration
	}
	return c.plainClassicHeartbeat(req), false
}

func (c *Coordinator) plainClassicHeartbeat(req *kmsg.HeartbeatRequest) int16 {
	if g, ok := c.consumerGroupForClassic(req.Group); ok {
		return c.consumerBridgeHeartbeat(g, req) // online migration
	}
	g, ok := c.groups[req.Group].(*classicGroup)
	if !ok {
		return errUnknownMemberID
	}
	c.snapshotClassic(g)
	if g.state == classicDead {
		return errCoordinatorNotAvailable
	}
	if c.downgradedRejoin(g, req.MemberID, req.Generation) {
		c.scheduleClassicHeartbeat(g, g.members[req.MemberID], g.members[req.MemberID].sessionTimeoutMs)
		return errRebalanceInProgress
	}
	if code := g.validateMember(req.MemberID, req.InstanceID); code != 0 {
		return code
	}
	if req.Generation != g.generation {
		return errIllegalGeneration
	}
	m := g.members[req.MemberID]
	switch g.state {
	case classicPreparingRebalance:
		c.scheduleClassicHeartbeat(g, m, m.sessionTimeoutMs)
		return errRebalanceInProgress
	case classicCompletingRebalance, classicStable:
		c.scheduleClassicHeartbeat(g, m, m.sessionTimeoutMs)
		return 0
	}
	return errUnknownMemberID
}

// leaveGroup handles a leaveGroup request: v0-2 name one member, v3+ a
// batch of members, each by member id and/or group.instance.id (an admin
// removal gives only the instance id).
func (c *Coordinator) leaveGroup(now int64, id RequestID, req *kmsg.LeaveGroupRequest) Output {
	c.begin(now)
	resp := c.classicLeave(req)
	resp.Version = req.Version
	if req.Version < 3 {
		if resp.ErrorCode == 0 && len(resp.Members) > 0 {
			resp.ErrorCode = resp.Members[0].ErrorCode
		}
		resp.Members = nil
	}
	c.respond(id, resp)
	return c.end()
}

func (c *Coordinator) classicLeave(req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := kmsg.NewPtrLeaveGroupResponse()
	members := req.Members
	if req.Version < 3 {
		members = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	if req.Group == "" {
		resp.ErrorCode = errInvalidGroupID
		return resp
	}
	if sg, ok := c.streamsGroupForClassic(req.Group); ok {
		return c.bridgeLeave(sg, req) // online migration
	}
	if g, ok := c.consumerGroupForClassic(req.Group); ok {
		return c.consumerBridgeLeave(g, req) // online migration
	}
	g, ok := c.groups[req.Group].(*classicGroup)
	if !ok {
		resp.ErrorCode = errUnknownMemberID
		return resp
	}
	c.snapshotClassic(g)
	if g.state == classicDead {
		resp.ErrorCode = errCoordinatorNotAvailable
		return resp
	}
	left := 0
	for _, lm := range members {
		code := c.classicLeaveOne(g, lm)
		resp.Members = append(resp.Members, kmsg.LeaveGroupResponseMember{MemberID: lm.MemberID, InstanceID: lm.InstanceID, ErrorCode: code})
		if code == 0 {
			left++
		}
	}
	if left > 0 {
		switch g.state {
		case classicStable, classicCompletingRebalance:
			c.classicMaybeRebalance(g)
		case classicPreparingRebalance:
			c.classicMaybeCompleteJoin(g)
		}
	}
	return resp
}

func (c *Coordinator) classicLeaveOne(g *classicGroup, lm kmsg.LeaveGroupRequestMember) int16 {
	switch {
	case lm.MemberID == "":
		if lm.InstanceID == nil {
			return errUnknownMemberID
		}
		mid, ok := g.static[*lm.InstanceID]
		if !ok {
			return errUnknownMemberID
		}
		c.classicRemoveCurrent(g, mid)
	case g.pendingJoin[lm.MemberID]:
		g.remove(lm.MemberID)
		c.cancelTimer(classicHeartbeatKey(g.id, lm.MemberID))
	default:
		if code := g.validateMember(lm.MemberID, lm.InstanceID); code != 0 {
			return code
		}
		c.classicRemoveCurrent(g, lm.MemberID)
	}
	return 0
}

// classicRemoveCurrent removes a member that left, answering its parked
// JoinGroup with UNKNOWN_MEMBER_ID. A parked SyncGroup of the member gets
// UNKNOWN_MEMBER_ID too, where Kafka leaves it to time out: a host should
// not hold a request nobody will answer.
func (c *Coordinator) classicRemoveCurrent(g *classicGroup, memberID string) {
	c.cancelTimer(classicHeartbeatKey(g.id, memberID))
	m := g.members[memberID]
	c.noteClassicDeparture(g, m)
	c.releaseClassic(g, &m.join, classicJoinError("", errUnknownMemberID))
	c.releaseClassic(g, &m.sync, syncError(errUnknownMemberID))
	g.remove(memberID)
	c.emit(Event{Kind: EventMemberLeft, Group: g.id, Member: memberID, Reason: ReasonLeave, Epoch: g.generation, MemberEpoch: leaveEpoch})
}
