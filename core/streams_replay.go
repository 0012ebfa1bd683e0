package core

import (
	"fmt"

	"github.com/coordhost/coordhost/core/records"
)

// Replay of streams records (Kafka's GroupMetadataManager.replay overloads).
// The live path applies its own records through these functions, so live
// state and replayed state cannot diverge. Every mutation is undoable.

// streamsGroupForRecord returns the streams group a record applies to,
// creating it when create is set. A group of another kind under the id is
// an error (Kafka: IllegalStateException), except that an empty group of
// another kind may be replaced (KAFKA-20254: an offsets-only classic group).
func (c *Coordinator) streamsGroupForRecord(id string, create bool) (*streamsGroup, error) {
	switch g := c.groups[id].(type) {
	case *streamsGroup:
		return g, nil
	case nil:
		if !create {
			return nil, nil
		}
		ng := newStreamsGroup(id)
		c.putGroup(id, ng)
		return ng, nil
	default:
		if create && g.IsEmpty() {
			ng := newStreamsGroup(id)
			c.putGroup(id, ng)
			return ng, nil
		}
		return nil, fmt.Errorf("group %q is a %s group, not a streams group", id, g.Kind())
	}
}

// streamsHeader is what saveHeader keeps of a group: the fields its undo
// restores, not a copy of the whole group (a fenced member's epoch bump
// saved one, 420 bytes, for four int32s).
type streamsHeader struct {
	groupEpoch, validatedTopologyEpoch, storedDescEpoch, failedDescEpoch, assignmentEpoch int32
	metadataHash, assignmentTimestamp                                                     int64
	lastAssignmentConfigs                                                                 []records.KeyValue
	topology                                                                              *records.StreamsGroupTopologyValue
}

// saveHeader makes the group's scalar fields undoable before a change.
func (c *Coordinator) saveHeader(g *streamsGroup) {
	if c.replaying {
		return // nothing to undo, and the copy would escape for nothing
	}
	h := streamsHeader{
		groupEpoch: g.groupEpoch, validatedTopologyEpoch: g.validatedTopologyEpoch, storedDescEpoch: g.storedDescEpoch,
		failedDescEpoch: g.failedDescEpoch, assignmentEpoch: g.assignmentEpoch, metadataHash: g.metadataHash,
		assignmentTimestamp: g.assignmentTimestamp, lastAssignmentConfigs: g.lastAssignmentConfigs, topology: g.topology,
	}
	c.onUndo(func() {
		g.groupEpoch, g.metadataHash, g.validatedTopologyEpoch = h.groupEpoch, h.metadataHash, h.validatedTopologyEpoch
		g.lastAssignmentConfigs, g.storedDescEpoch, g.failedDescEpoch = h.lastAssignmentConfigs, h.storedDescEpoch, h.failedDescEpoch
		g.assignmentEpoch, g.assignmentTimestamp, g.topology = h.assignmentEpoch, h.assignmentTimestamp, h.topology
		g.updateState()
	})
}

func applyStreamsGroupMetadata(c *Coordinator, rec records.Record) error {
	id := rec.Key.Group()
	g, err := c.streamsGroupForRecord(id, rec.Value != nil)
	if err != nil || g == nil {
		return err
	}
	if rec.Value == nil {
		if len(g.members) > 0 {
			return fmt.Errorf("group %q: metadata tombstone while %d members remain", id, len(g.members))
		}
		if g.assignmentEpoch != -1 {
			return fmt.Errorf("group %q: metadata tombstone before the target assignment metadata tombstone", id)
		}
		c.putGroup(id, nil)
		return nil
	}
	v := rec.Value.(records.StreamsGroupMetadataValue)
	c.saveHeader(g)
	g.groupEpoch = v.Epoch
	g.metadataHash = v.MetadataHash
	g.validatedTopologyEpoch = v.ValidatedTopologyEpoch
	g.lastAssignmentConfigs = v.LastAssignmentConfigs
	if g.lastAssignmentConfigs == nil {
		g.lastAssignmentConfigs = []records.KeyValue{}
	}
	g.storedDescEpoch = v.StoredDescriptionTopologyEpoch
	g.failedDescEpoch = v.FailedDescriptionTopologyEpoch
	g.updateState()
	return nil
}

func applyStreamsGroupMemberMetadata(c *Coordinator, rec records.Record) error {
	k := rec.Key.(records.StreamsGroupMemberMetadataKey)
	g, err := c.streamsGroupForRecord(k.GroupID, rec.Value != nil)
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
		c.removeMember(g, k.MemberID)
		c.orphanParked(g, k.MemberID)
		g.updateState()
		return nil
	}
	v := rec.Value.(records.StreamsGroupMemberMetadataValue)
	if old != nil && old.processID == v.ProcessID {
		// The record leaves the task sets alone, and the process id is the
		// same: the ownership indexes stay as they are.
		m, oldInstance := old, old.instanceID
		if !c.replaying { // while replaying no undo needs old's fields
			m = old.clone()
		}
		setStreamsMemberMetadata(c, m, v)
		c.putMemberMetadata(g, old, oldInstance, m)
	} else {
		m := c.memberToChange(g, k.MemberID)
		setStreamsMemberMetadata(c, m, v)
		c.putMember(g, m)
	}
	g.updateState()
	return nil
}

// setStreamsMemberMetadata sets the fields of a member metadata record.
func setStreamsMemberMetadata(c *Coordinator, m *streamsMember, v records.StreamsGroupMemberMetadataValue) {
	m.instanceID, m.rackID = v.InstanceID, v.RackID
	// Client hosts repeat across members (one host runs many): members
	// keep one copy of each. (Process ids and client ids are not interned:
	// a Streams client's id names its thread, so most are a member's own,
	// and the table's slot would cost more than it saves.)
	m.clientID, m.clientHost = v.ClientID, c.tasks.str(v.ClientHost)
	m.rebalanceTimeoutMs, m.topologyEpoch = v.RebalanceTimeoutMs, v.TopologyEpoch
	m.processID, m.endpoint, m.clientTags = v.ProcessID, v.UserEndpoint, v.ClientTags
	m.classic = v.Classic
}

func applyStreamsGroupTargetAssignmentMetadata(c *Coordinator, rec records.Record) error {
	g, err := c.streamsGroupForRecord(rec.Key.Group(), rec.Value != nil)
	if err != nil || g == nil {
		return err
	}
	c.saveHeader(g)
	if rec.Value == nil {
		if len(g.target) > 0 {
			return fmt.Errorf("group %q: target metadata tombstone while %d member targets remain", g.id, len(g.target))
		}
		g.assignmentEpoch = -1
		g.assignmentTimestamp = 0
	} else {
		v := rec.Value.(records.StreamsGroupTargetAssignmentMetadataValue)
		g.assignmentEpoch, g.assignmentTimestamp = v.AssignmentEpoch, v.AssignmentTimestamp
	}
	g.updateState()
	return nil
}

func applyStreamsGroupTargetAssignmentMember(c *Coordinator, rec records.Record) error {
	k := rec.Key.(records.StreamsGroupTargetAssignmentMemberKey)
	g, err := c.streamsGroupForRecord(k.GroupID, rec.Value != nil)
	if err != nil || g == nil {
		return err
	}
	if rec.Value == nil {
		c.setTarget(g, k.MemberID, nil)
	} else {
		v := rec.Value.(records.StreamsGroupTargetAssignmentMemberValue)
		t := tasksTuple{active: c.tasks.fromTaskIDs(v.ActiveTasks), standby: c.tasks.fromTaskIDs(v.StandbyTasks), warmup: c.tasks.fromTaskIDs(v.WarmupTasks)}
		if m := g.members[k.MemberID]; m != nil {
			t.standby, t.warmup = shareSet(t.standby, m.assigned.standby), shareSet(t.warmup, m.assigned.warmup)
		}
		c.setTarget(g, k.MemberID, &t)
	}
	g.updateState()
	return nil
}

func applyStreamsGroupCurrentMemberAssignment(c *Coordinator, rec records.Record) error {
	k := rec.Key.(records.StreamsGroupCurrentMemberAssignmentKey)
	g, err := c.streamsGroupForRecord(k.GroupID, rec.Value != nil)
	if err != nil || g == nil {
		return err
	}
	old := g.members[k.MemberID]
	if rec.Value == nil {
		if old == nil {
			return nil
		}
		m := c.memberToChange(g, k.MemberID)
		m.epoch, m.prevEpoch = -1, -1
		m.assigned, m.pending = ownedTasks{}, ownedTasks{}
		c.putMember(g, m)
		g.updateState()
		return nil
	}
	v := rec.Value.(records.StreamsGroupCurrentMemberAssignmentValue)
	m := c.memberToChange(g, k.MemberID)
	m.epoch, m.prevEpoch, m.state = v.MemberEpoch, v.PreviousMemberEpoch, memberStateFromInt8(v.State)
	m.assigned = ownedTasks{
		active:  c.tasks.epochsFromTaskIDs(v.ActiveTasks, v.MemberEpoch),
		standby: c.tasks.fromTaskIDs(v.StandbyTasks), warmup: c.tasks.fromTaskIDs(v.WarmupTasks),
	}
	m.pending = ownedTasks{
		active:  c.tasks.epochsFromTaskIDs(v.ActiveTasksPendingRevocation, v.MemberEpoch),
		standby: c.tasks.fromTaskIDs(v.StandbyTasksPendingRevocation), warmup: c.tasks.fromTaskIDs(v.WarmupTasksPendingRevocation),
	}
	if t, ok := g.target[k.MemberID]; ok {
		m.assigned.standby, m.assigned.warmup = shareSet(m.assigned.standby, t.standby), shareSet(m.assigned.warmup, t.warmup)
	}
	c.putMember(g, m)
	g.updateState()
	return nil
}

func applyStreamsGroupTopology(c *Coordinator, rec records.Record) error {
	g, err := c.streamsGroupForRecord(rec.Key.Group(), rec.Value != nil)
	if err != nil || g == nil {
		return err
	}
	c.saveHeader(g)
	if rec.Value == nil {
		g.topology = nil
	} else {
		v := rec.Value.(records.StreamsGroupTopologyValue)
		g.topology = &v
	}
	g.soft.configured = nil
	g.updateState()
	return nil
}
