package core

import (
	"slices"

	"github.com/coordhost/coordhost/core/records"
	"github.com/coordhost/coordhost/core/userdata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Bridging: JoinGroup / SyncGroup / Heartbeat / LeaveGroup from classic
// members of a KIP-848 consumer group, as Kafka 4.4's
// classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup,
// classicGroupHeartbeatToConsumerGroup and classicGroupLeaveToConsumerGroup.
// The coordinator's server assignor computes the assignment; every classic
// member is a follower. See docs/CONSUMER.md.

// Consumer timer kinds of classic members (consumer_leave.go has 40–41).
const (
	timerConsumerJoin timerKind = 42 // consumer-join-<group>-<member>: fence if no JoinGroup in time
	timerConsumerSync timerKind = 43 // consumer-sync-<group>-<member>: fence if no SyncGroup in time
)

func init() {
	fence := func(c *Coordinator, t timer) {
		if g, ok := c.groups[t.group].(*consumerGroup); ok && g.members[t.member] != nil {
			c.fenceConsumerMember(g, t.member, EventMemberFenced, ReasonJoinTimeout)
		}
	}
	registerTimerKind(timerConsumerJoin, fence)
	registerTimerKind(timerConsumerSync, fence)
}

// consumerGroupForClassic routes classic requests for a non-empty consumer
// group to the bridge; empty ones are the classic path's (offline
// conversion).
func (c *Coordinator) consumerGroupForClassic(group string) (*consumerGroup, bool) {
	g, ok := c.groups[group].(*consumerGroup)
	return g, ok && !g.IsEmpty()
}

// consumerBridgeJoin handles a JoinGroup for a non-empty consumer group.
func (c *Coordinator) consumerBridgeJoin(g *consumerGroup, client ClientInfo, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	if c.consumerMigrationPolicy(g.id) == MigrationDisabled || !g.supportsClassicProtocols(req) {
		return classicJoinError(req.MemberID, errInconsistentProtocol)
	}
	sub, err := userdata.DecodeSubscription(req.Protocols[0].Metadata)
	if err != nil {
		return classicJoinError(req.MemberID, errInconsistentProtocol)
	}
	id, refused := c.bridgeJoinIdentity(g.id, client, req, g.staticMembers, g.sortedMemberIDs(), func(id string) (bool, bool) {
		m := g.members[id]
		return m != nil, m != nil && m.classic != nil
	}, c.consumerConfig().MaxSize)
	if refused != nil {
		return refused
	}
	var m *consumerMember
	replaced := id.replaces != "" && g.members[id.replaces].classic == nil
	switch {
	case id.replaces != "":
		m = c.replaceConsumerStaticMember(g, g.members[id.replaces], id.id)
	case g.members[id.id] == nil:
		m = newConsumerMember(id.id)
	default:
		m = g.members[id.id]
	}
	u := m.updated(req.InstanceID, sub.Rack, req.RebalanceTimeoutMillis)
	u.topics = normalizeTopics(sub.Topics)
	u.clientID, u.clientHost = client.ClientID, client.ClientHost
	protos := classicProtocolsOf(req)
	u.classic = classicMetadataOf(req.SessionTimeoutMillis, protos)
	c.consumerBridgeStore(g, m, u)
	if c.consumerTargetDue(g) {
		if e := c.updateConsumerTarget(g); e != nil {
			return classicJoinError(id.id, e.code)
		}
	}
	final := c.reconcileConsumer(g, g.members[id.id], c.partitionsByName(sub.OwnedPartitions), false)
	r := kmsg.NewPtrJoinGroupResponse()
	pt, pn := consumerProtocolType, req.Protocols[0].Name
	r.MemberID, r.Generation, r.ProtocolType, r.Protocol = final.id, final.epoch, &pt, &pn
	r.Members = []kmsg.JoinGroupResponseMember{}
	c.cancelTimer(consumerJoinKey(g.id, final.id))
	if replaced && c.maybeDowngradeConsumer(g, nil, true) {
		return r // the classic group now holds the member
	}
	c.scheduleConsumerSession(g, final)
	c.setTimer(timer{key: consumerSyncKey(g.id, final.id), deadline: c.now + int64(req.RebalanceTimeoutMillis),
		kind: timerConsumerSync, group: g.id, member: final.id})
	return r
}

// consumerBridgeStore writes the member's metadata if it is new or
// changed, and bumps the group epoch when its subscription changed or the
// subscribed topics' metadata did (as a heartbeat does).
func (c *Coordinator) consumerBridgeStore(g *consumerGroup, m, u *consumerMember) {
	_, exists := g.members[u.id]
	subChanged := !slices.Equal(u.topics, m.topics)
	if !exists || !consumerMetadataEqual(consumerMetadataValue(m), consumerMetadataValue(u)) {
		c.write(records.Record{Key: records.ConsumerGroupMemberMetadataKey{GroupID: g.id, MemberID: u.id}, Value: consumerMetadataValue(u)})
		kind := EventMemberUpdated
		if !exists {
			kind = EventMemberJoined
		}
		c.emit(Event{Kind: kind, Group: g.id, Member: u.id, Epoch: g.groupEpoch, MemberEpoch: m.epoch})
	}
	c.maybeBumpConsumerEpoch(g, subChanged)
}

// supportsClassicProtocols is ConsumerGroup.supportsClassicProtocols: the
// protocol type is "consumer" and one of the member's protocols is
// supported by every classic member.
func (g *consumerGroup) supportsClassicProtocols(req *kmsg.JoinGroupRequest) bool {
	if req.ProtocolType != consumerProtocolType || len(req.Protocols) == 0 {
		return false
	}
	for _, p := range req.Protocols {
		all := true
		for _, m := range g.members {
			if m.classic != nil && !m.classic.Supports(p.Name) {
				all = false
				break
			}
		}
		if all {
			return true
		}
	}
	return false
}

// consumerBridgeMember is Kafka's validateConsumerGroupMember plus
// throwIfMemberDoesNotUseClassicProtocol and throwIfGenerationIdUnmatched.
func consumerBridgeMember(g *consumerGroup, memberID string, instanceID *string, generation int32) (*consumerMember, int16) {
	id := memberID
	if instanceID != nil {
		sid, ok := g.staticMembers[*instanceID]
		if !ok {
			return nil, errUnknownMemberID
		}
		if sid != memberID {
			return nil, errFencedInstanceID
		}
	}
	m := g.members[id]
	switch {
	case m == nil || m.classic == nil:
		return nil, errUnknownMemberID
	case generation != m.epoch:
		return nil, errIllegalGeneration
	}
	return m, 0
}

func (c *Coordinator) setConsumerJoinTimerIfAbsent(g *consumerGroup, m *consumerMember) {
	c.setTimerIfAbsent(timer{key: consumerJoinKey(g.id, m.id), deadline: c.now + int64(m.rebalanceTimeoutMs),
		kind: timerConsumerJoin, group: g.id, member: m.id})
}

// consumerBridgeSync handles a SyncGroup from a classic member: its
// current assignment, serialized at its subscription's version, unless a
// newer target assignment needs it to rejoin first (Kafka 4.4 compares
// the assignment epoch: a group epoch bump alone waits for the target).
func (c *Coordinator) consumerBridgeSync(g *consumerGroup, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	m, code := consumerBridgeMember(g, req.MemberID, req.InstanceID, req.Generation)
	if code != 0 {
		return syncError(code)
	}
	first := m.classic.SupportedProtocols[0]
	if (req.ProtocolType != nil && *req.ProtocolType != consumerProtocolType) || (req.Protocol != nil && *req.Protocol != first.Name) {
		return syncError(errInconsistentProtocol)
	}
	if g.assignmentEpoch > m.epoch && m.state != memberUnrevokedTasks {
		c.setConsumerJoinTimerIfAbsent(g, m)
		return syncError(errRebalanceInProgress)
	}
	c.cancelTimer(consumerSyncKey(g.id, m.id))
	c.scheduleConsumerSession(g, m)
	r := kmsg.NewPtrSyncGroupResponse()
	r.ProtocolType, r.Protocol = req.ProtocolType, req.Protocol
	r.MemberAssignment = c.consumerProtocolAssignment(m.assigned.set(), first.Metadata)
	return r
}

// consumerBridgeHeartbeat handles a Heartbeat from a classic member:
// REBALANCE_IN_PROGRESS (and a join timer) when it is behind the
// assignment epoch, must revoke, or waits for partitions that are now
// free, as Kafka 4.4. A new target that is due is computed by the next
// consumer-protocol heartbeat or JoinGroup, as in Kafka; in a group left
// with classic members only (no downgrade allowed), which sends neither,
// the heartbeat asks for a rejoin so that the JoinGroup computes it.
func (c *Coordinator) consumerBridgeHeartbeat(g *consumerGroup, req *kmsg.HeartbeatRequest) int16 {
	m, code := consumerBridgeMember(g, req.MemberID, req.InstanceID, req.Generation)
	if code != 0 {
		return code
	}
	c.scheduleConsumerSession(g, m)
	if m.epoch < g.assignmentEpoch || (c.consumerTargetDue(g) && !g.hasConsumerProtocolMember()) || m.state == memberUnrevokedTasks ||
		(m.state == memberUnreleasedTasks && !g.waitingOnUnreleased(m)) {
		c.setConsumerJoinTimerIfAbsent(g, m)
		return errRebalanceInProgress
	}
	return 0
}

// hasConsumerProtocolMember reports whether a member uses the consumer
// protocol (its heartbeats compute new targets).
func (g *consumerGroup) hasConsumerProtocolMember() bool {
	for _, m := range g.members {
		if m.classic == nil {
			return true
		}
	}
	return false
}

// waitingOnUnreleased reports whether a partition of m's target that it
// does not have yet is still held by another member.
func (g *consumerGroup) waitingOnUnreleased(m *consumerMember) bool {
	for tp := range g.target[m.id] {
		if _, has := m.assigned[tp]; has {
			continue
		}
		if owner, held := g.owner[tp]; held && owner != m.id {
			return true
		}
	}
	return false
}

// consumerBridgeLeave handles a LeaveGroup on a non-empty consumer group:
// each named classic member (by id, or by instance id) is fenced, all in
// one epoch bump; this may downgrade the group.
func (c *Coordinator) consumerBridgeLeave(g *consumerGroup, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := kmsg.NewPtrLeaveGroupResponse()
	members := req.Members
	if req.Version < 3 {
		members = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	var leaving []string
	for _, lm := range members {
		r := kmsg.LeaveGroupResponseMember{MemberID: lm.MemberID, InstanceID: lm.InstanceID}
		id, code := leavingMemberID(g.staticMembers, lm)
		r.ErrorCode = code
		if m := g.members[id]; r.ErrorCode == 0 && (m == nil || m.classic == nil) {
			r.ErrorCode = errUnknownMemberID
		}
		if r.ErrorCode == 0 {
			r.MemberID = id
			leaving = append(leaving, id)
		}
		resp.Members = append(resp.Members, r)
	}
	if len(leaving) > 0 {
		c.fenceConsumerMembers(g, leaving, EventMemberLeft, ReasonLeave)
	}
	return resp
}
