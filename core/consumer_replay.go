package core

import (
	"fmt"
	"slices"

	"github.com/coordhost/coordhost/core/records"
)

// Replay of consumer-group records (Kafka's GroupMetadataManager.replay
// overloads for types 3–8). The live path applies its own records through
// these functions, so live state and replayed state cannot diverge.

// consumerGroupForRecord returns the consumer group a record applies to,
// creating it when create is set; an empty group of another kind (an
// offsets-only classic group) is replaced, any other kind is an error.
func (c *Coordinator) consumerGroupForRecord(id string, create bool) (*consumerGroup, error) {
	switch g := c.groups[id].(type) {
	case *consumerGroup:
		return g, nil
	case nil:
		if !create {
			return nil, nil
		}
	default:
		if !create || !g.IsEmpty() {
			if !create {
				return nil, nil
			}
			return nil, fmt.Errorf("group %q is a %s group, not a consumer group", id, g.Kind())
		}
	}
	ng := newConsumerGroup(id)
	c.putGroup(id, ng)
	return ng, nil
}

// saveConsumerHeader makes the group's scalar fields undoable.
func (c *Coordinator) saveConsumerHeader(g *consumerGroup) {
	if c.replaying {
		return // nothing to undo, and the copy of the group would escape for nothing
	}
	h := *g
	c.onUndo(func() {
		g.groupEpoch, g.metadataHash, g.creationTimeMs = h.groupEpoch, h.metadataHash, h.creationTimeMs
		g.assignmentEpoch, g.assignmentTimestamp = h.assignmentEpoch, h.assignmentTimestamp
		g.updateState()
	})
}

func applyConsumerGroupMetadata(c *Coordinator, rec records.Record) error {
	id := rec.Key.Group()
	g, err := c.consumerGroupForRecord(id, rec.Value != nil)
	if err != nil || g == nil {
		return err
	}
	if rec.Value == nil {
		if len(g.members) > 0 {
			return fmt.Errorf("group %q: metadata tombstone while %d members remain", id, len(g.members))
		}
		if len(g.target) > 0 {
			return fmt.Errorf("group %q: metadata tombstone while %d member targets remain", id, len(g.target))
		}
		if len(g.regexes) > 0 {
			return fmt.Errorf("group %q: metadata tombstone while %d resolved regexes remain", id, len(g.regexes))
		}
		c.putGroup(id, nil)
		return nil
	}
	v := rec.Value.(records.ConsumerGroupMetadataValue)
	c.saveConsumerHeader(g)
	g.groupEpoch, g.metadataHash, g.creationTimeMs = v.Epoch, v.MetadataHash, v.CreationTimeMs
	g.updateState()
	return nil
}

func applyConsumerGroupMemberMetadata(c *Coordinator, rec records.Record) error {
	k := rec.Key.(records.ConsumerGroupMemberMetadataKey)
	g, err := c.consumerGroupForRecord(k.GroupID, rec.Value != nil)
	if err != nil || g == nil {
		return err
	}
	old := g.members[k.MemberID]
	if rec.Value == nil {
		if old == nil {
			return nil
		}
		if old.epoch != -1 {
			return fmt.Errorf("group %q member %q: metadata tombstone before the current-assignment tombstone", k.GroupID, k.MemberID)
		}
		if _, ok := g.target[k.MemberID]; ok {
			return fmt.Errorf("group %q member %q: metadata tombstone before the target-assignment tombstone", k.GroupID, k.MemberID)
		}
		c.removeConsumerMember(g, k.MemberID)
		g.updateState()
		return nil
	}
	v := rec.Value.(records.ConsumerGroupMemberMetadataValue)
	m := c.consumerMemberToChange(g, k.MemberID)
	m.instanceID, m.rackID = v.InstanceID, v.RackID
	m.clientID, m.clientHost = v.ClientID, v.ClientHost
	m.topics = normalizeTopics(v.SubscribedTopicNames)
	m.regex, m.rebalanceTimeoutMs, m.serverAssignor = v.SubscribedTopicRegex, v.RebalanceTimeoutMs, v.ServerAssignor
	m.classic = v.Classic
	c.putConsumerMember(g, m)
	g.updateState()
	return nil
}

func applyConsumerGroupTargetAssignmentMetadata(c *Coordinator, rec records.Record) error {
	g, err := c.consumerGroupForRecord(rec.Key.Group(), rec.Value != nil)
	if err != nil || g == nil {
		return err
	}
	c.saveConsumerHeader(g)
	if rec.Value == nil {
		if len(g.target) > 0 {
			return fmt.Errorf("group %q: target metadata tombstone while %d member targets remain", g.id, len(g.target))
		}
		g.assignmentEpoch, g.assignmentTimestamp = -1, 0
	} else {
		v := rec.Value.(records.ConsumerGroupTargetAssignmentMetadataValue)
		g.assignmentEpoch, g.assignmentTimestamp = v.AssignmentEpoch, v.AssignmentTimestamp
	}
	g.updateState()
	return nil
}

func applyConsumerGroupTargetAssignmentMember(c *Coordinator, rec records.Record) error {
	k := rec.Key.(records.ConsumerGroupTargetAssignmentMemberKey)
	g, err := c.consumerGroupForRecord(k.GroupID, rec.Value != nil)
	if err != nil || g == nil {
		return err
	}
	if rec.Value == nil {
		c.setConsumerTarget(g, k.MemberID, nil)
	} else {
		c.setConsumerTarget(g, k.MemberID, partSetOf(rec.Value.(records.ConsumerGroupTargetAssignmentMemberValue).TopicPartitions))
	}
	g.updateState()
	return nil
}

func applyConsumerGroupCurrentMemberAssignment(c *Coordinator, rec records.Record) error {
	k := rec.Key.(records.ConsumerGroupCurrentMemberAssignmentKey)
	g, err := c.consumerGroupForRecord(k.GroupID, rec.Value != nil)
	if err != nil || g == nil {
		return err
	}
	if rec.Value == nil && g.members[k.MemberID] == nil {
		return nil
	}
	m := c.consumerMemberToChange(g, k.MemberID)
	if rec.Value == nil {
		m.epoch, m.prevEpoch = -1, -1
		m.assigned, m.pending = partEpochs{}, partEpochs{}
	} else {
		v := rec.Value.(records.ConsumerGroupCurrentMemberAssignmentValue)
		m.epoch, m.prevEpoch, m.state = v.MemberEpoch, v.PreviousMemberEpoch, memberStateFromInt8(v.State)
		m.assigned = partEpochsOf(v.AssignedPartitions, v.MemberEpoch)
		m.pending = partEpochsOf(v.PartitionsPendingRevocation, v.MemberEpoch)
	}
	c.putConsumerMember(g, m)
	g.updateState()
	return nil
}

// normalizeTopics sorts and deduplicates subscribed topic names.
func normalizeTopics(names []string) []string {
	out := slices.Clone(names)
	if out == nil {
		out = []string{}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// consumerOnLoaded schedules the timers of a loaded consumer group: a
// session timeout for every member, and a rebalance timeout for members
// revoking partitions (Kafka's onLoaded). Its regexes are due for a
// resolution: topics may have come and gone while no one coordinated it.
func (c *Coordinator) consumerOnLoaded(g *consumerGroup) {
	g.regexTopicsChanged = len(g.regexes) > 0
	for _, id := range g.sortedMemberIDs() {
		m := g.members[id]
		c.scheduleConsumerSession(g, m)
		if m.state == memberUnrevokedTasks && m.classic == nil {
			c.scheduleConsumerRebalance(g, m)
		}
	}
}
