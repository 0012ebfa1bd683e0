package core

import (
	"maps"
	"slices"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Consumer timer kinds (streams take 1–15, classic 16–31, migration 32–35).
const (
	timerConsumerSession   timerKind = 40 // consumer-session-<group>-<member>: fence on expiry
	timerConsumerRebalance timerKind = 41 // consumer-rebalance-<group>-<member>: fence if still revoking
)

func init() {
	registerTimerKind(timerConsumerSession, func(c *Coordinator, t timer) {
		if g, ok := c.groups[t.group].(*consumerGroup); ok && g.members[t.member] != nil {
			c.fenceConsumerMember(g, t.member, EventMemberFenced, ReasonSessionTimeout)
		}
	})
	registerTimerKind(timerConsumerRebalance, func(c *Coordinator, t timer) {
		// Kafka fences the member only if it is still at the epoch the
		// timer was set for: it did not revoke in time.
		if g, ok := c.groups[t.group].(*consumerGroup); ok {
			if m := g.members[t.member]; m != nil && m.epoch == t.epoch {
				c.fenceConsumerMember(g, t.member, EventMemberFenced, ReasonRebalanceTimeout)
			}
		}
	})
	groupDeleters[GroupKindConsumer] = func(c *Coordinator, g Group) {
		cg := g.(*consumerGroup)
		for _, id := range cg.sortedMemberIDs() {
			c.writeConsumerMemberTombstones(cg, id)
		}
		for _, r := range slices.Sorted(maps.Keys(cg.regexes)) {
			c.write(records.Record{Key: records.ConsumerGroupRegularExpressionKey{GroupID: cg.id, RegularExpression: r}})
		}
		// A target left without its member (a log replayed out of order).
		var orphans []string
		for id := range cg.target {
			orphans = append(orphans, id)
		}
		sortStrings(orphans)
		for _, id := range orphans {
			c.write(records.Record{Key: records.ConsumerGroupTargetAssignmentMemberKey{GroupID: cg.id, MemberID: id}})
		}
		c.write(records.Record{Key: records.ConsumerGroupTargetAssignmentMetadataKey{GroupID: cg.id}})
		c.write(records.Record{Key: records.ConsumerGroupPartitionMetadataKey{GroupID: cg.id}})
		c.write(records.Record{Key: records.ConsumerGroupMetadataKey{GroupID: cg.id}})
	}
}

// scheduleConsumerSession (re)starts a member's session timer: its own
// JoinGroup session timeout for a classic member, the group's otherwise.
func (c *Coordinator) scheduleConsumerSession(g *consumerGroup, m *consumerMember) {
	ms := c.consumerGroupConfig(g.id).SessionTimeoutMs
	if m.classic != nil {
		ms = m.classic.SessionTimeoutMs
	}
	c.setTimer(timer{key: consumerSessionKey(g.id, m.id), deadline: c.now + int64(ms),
		kind: timerConsumerSession, group: g.id, member: m.id})
}

// scheduleConsumerRebalance gives a revoking member its rebalance timeout.
func (c *Coordinator) scheduleConsumerRebalance(g *consumerGroup, m *consumerMember) {
	c.setTimer(timer{key: consumerRebalanceKey(g.id, m.id), deadline: c.now + int64(m.rebalanceTimeoutMs),
		kind: timerConsumerRebalance, group: g.id, member: m.id, epoch: m.epoch})
}

// consumerLeave handles a heartbeat with epoch -1 (leave) or -2 (static
// leave), as Kafka's consumerGroupLeave.
func (c *Coordinator) consumerLeave(req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, *kafkaError) {
	g, ok := c.groups[req.Group].(*consumerGroup)
	if !ok {
		if _, exists := c.groups[req.Group]; exists {
			return nil, errf(kerr.GroupIDNotFound, "Group %s is not a consumer group.", req.Group)
		}
		return nil, errf(kerr.GroupIDNotFound, "Group %s not found.", req.Group)
	}
	memberID := req.MemberID
	if req.InstanceID == nil {
		if g.members[memberID] == nil {
			return nil, errf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", memberID, g.id)
		}
	} else {
		id, exists := g.staticMembers[*req.InstanceID]
		if !exists {
			return nil, errf(kerr.UnknownMemberID, "Instance id %s is unknown.", *req.InstanceID)
		}
		if id != memberID {
			return nil, errf(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", memberID, *req.InstanceID, id)
		}
	}
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version = req.Version
	resp.MemberID = &memberID
	resp.MemberEpoch = req.MemberEpoch
	if req.MemberEpoch == staticLeaveEpoch {
		// The static member keeps its place and assignment until its
		// session expires or it rejoins under a new member id.
		m := g.members[memberID].clone()
		m.prevEpoch, m.epoch = m.epoch, staticLeaveEpoch
		c.write(consumerAssignmentRecord(g.id, m))
		c.cancelTimer(consumerRebalanceKey(g.id, memberID))
		c.emit(Event{Kind: EventMemberLeft, Group: g.id, Member: memberID, Reason: ReasonStaticLeave, Epoch: g.groupEpoch, MemberEpoch: staticLeaveEpoch})
		return resp, nil
	}
	c.fenceConsumerMember(g, memberID, EventMemberLeft, ReasonLeave)
	return resp, nil
}

// fenceConsumerMember removes a member (Kafka's consumerGroupFenceMember).
func (c *Coordinator) fenceConsumerMember(g *consumerGroup, id string, kind EventKind, reason EventReason) {
	c.fenceConsumerMembers(g, []string{id}, kind, reason)
}

// fenceConsumerMembers removes members (Kafka's consumerGroupFenceMembers):
// when only classic members would remain and the policy allows it, the
// group is downgraded to a classic group instead; otherwise their
// tombstones, then one group epoch bump with the metadata hash of the
// remaining subscriptions. When no member remains, the assignment epoch
// follows the group epoch with a zero timestamp, as for a new group, so
// that the assignment interval does not hold back the next member's
// target. Their timers are cancelled.
func (c *Coordinator) fenceConsumerMembers(g *consumerGroup, ids []string, kind EventKind, reason EventReason) {
	for _, id := range ids {
		c.emit(Event{Kind: kind, Group: g.id, Member: id, Reason: reason, Epoch: g.groupEpoch, MemberEpoch: leaveEpoch})
	}
	if c.maybeDowngradeConsumer(g, ids, false) {
		return
	}
	for _, id := range ids {
		m := g.members[id]
		c.writeConsumerMemberTombstones(g, id)
		c.dropUnusedConsumerRegex(g, m)
		c.cancelConsumerMemberTimers(g.id, id)
	}
	epoch := g.groupEpoch + 1
	c.write(records.Record{Key: records.ConsumerGroupMetadataKey{GroupID: g.id}, Value: records.ConsumerGroupMetadataValue{
		Epoch: epoch, MetadataHash: c.groupMetadataHash(g.subscribedTopics()), CreationTimeMs: g.creationTimeMs}})
	if len(g.members) == 0 {
		c.write(records.Record{Key: records.ConsumerGroupTargetAssignmentMetadataKey{GroupID: g.id},
			Value: records.ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: epoch}})
	}
	c.emit(Event{Kind: EventEpochBumped, Group: g.id, Reason: ReasonMemberLeft, Epoch: g.groupEpoch})
}

// cancelConsumerMemberTimers cancels every timer of a member.
func (c *Coordinator) cancelConsumerMemberTimers(group, id string) {
	for _, key := range []TimerKey{consumerSessionKey(group, id), consumerRebalanceKey(group, id),
		consumerJoinKey(group, id), consumerSyncKey(group, id)} {
		c.cancelTimer(key)
	}
}
