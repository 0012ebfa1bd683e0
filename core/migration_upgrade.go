package core

import (
	"sort"

	"github.com/coordhost/coordhost/core/records"
	"github.com/coordhost/coordhost/core/userdata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Upgrade: a StreamsGroupHeartbeat join on a non-empty classic Kafka
// Streams group converts it into a streams group whose classic members keep
// their tasks (Kafka's validateOnlineUpgrade + convertToConsumerGroup, for
// streams; docs/MIGRATION.md).

// upgradedMember is one classic member as it enters the streams group.
type upgradedMember struct {
	m      *streamsMember
	active taskSet
	stand  taskSet
}

// upgradeClassicGroup validates and converts cg. Every refusal is
// GROUP_ID_NOT_FOUND with a message saying why (Kafka's choice for a
// refused online upgrade). The caller continues the heartbeat on the new
// streams group.
func (c *Coordinator) upgradeClassicGroup(cg *classicGroup) *kafkaError {
	if p := c.migrationPolicy(cg.id); !p.allowsUpgrade() {
		return errf(kerr.GroupIDNotFound, "Group %s is a classic group; online upgrade to a streams group is not allowed by streams.migration.policy=%s.", cg.id, p)
	}
	if deref0(cg.protocolType) != consumerProtocolType {
		return errf(kerr.GroupIDNotFound, "Group %s is a classic group of protocol type %q; only %q groups can be upgraded.", cg.id, deref0(cg.protocolType), consumerProtocolType)
	}
	if max := c.streamsConfig(cg.id).MaxSize; int32(len(cg.members)) > max {
		return errf(kerr.GroupIDNotFound, "Classic group %s has %d members, more than the streams group maximum of %d.", cg.id, len(cg.members), max)
	}
	members := make([]upgradedMember, 0, len(cg.members))
	claimed := taskSet{}
	for _, cm := range cg.allMembers() {
		um, e := upgradeMember(cg, cm)
		if e != nil {
			return e
		}
		// A task claimed twice (an assignment of an older generation) stays
		// with the first member in join order.
		for t := range um.active {
			if claimed.has(t) {
				delete(um.active, t)
			}
			claimed[t] = struct{}{}
		}
		members = append(members, um)
	}
	c.retireClassicGroup(cg)
	c.writeUpgradedGroup(cg.id, cg.generation, members)
	c.emitGroup(EventGroupConverted, cg.id, ReasonOnlineToStreams, cg.generation)
	g := c.groups[cg.id].(*streamsGroup)
	for _, um := range members {
		c.scheduleSession(g, um.m.id)
	}
	return nil
}

// retireClassicGroup ends a classic group that an upgrade converts: its
// parked JoinGroup and SyncGroup requests are answered
// REBALANCE_IN_PROGRESS (their members rejoin the new group), its timers
// cancelled, and its tombstone written.
func (c *Coordinator) retireClassicGroup(cg *classicGroup) {
	c.snapshotClassic(cg)
	for _, cm := range cg.allMembers() {
		c.releaseClassic(cg, &cm.join, classicJoinError(cm.id, errRebalanceInProgress))
		c.releaseClassic(cg, &cm.sync, syncError(errRebalanceInProgress))
	}
	for _, key := range c.timerKeysOfGroup(cg.id) {
		c.cancelTimer(key)
	}
	c.write(records.Record{Key: records.GroupMetadataKey{GroupID: cg.id}})
}

// upgradeMember builds one converted member from its JoinGroup metadata and
// last assignment.
func upgradeMember(cg *classicGroup, cm *classicMember) (upgradedMember, *kafkaError) {
	meta := cm.metadata(streamProtocolName)
	sub, err := decodeClassicSubscription(meta)
	if err != nil {
		return upgradedMember{}, errf(kerr.GroupIDNotFound, "Classic group %s cannot be upgraded: member %s has no readable %q subscription: %v.", cg.id, cm.id, streamProtocolName, err)
	}
	ep, err := parseEndpoint(sub.info.UserEndPoint)
	if err != nil {
		return upgradedMember{}, errf(kerr.GroupIDNotFound, "Classic group %s cannot be upgraded: member %s: %v.", cg.id, cm.id, err)
	}
	m := newStreamsMember(cm.id)
	m.instanceID, m.clientID, m.clientHost = cm.instanceID, cm.clientID, cm.clientHost
	m.rackID = sub.consumer.Rack
	m.rebalanceTimeoutMs = cm.rebalanceTimeoutMs
	m.processID, m.endpoint = processIDString(sub.info.ProcessID), ep
	for _, t := range sub.info.ClientTags {
		m.clientTags = append(m.clientTags, records.KeyValue{Key: t.Key, Value: t.Value})
	}
	protos := make([]records.ClassicProtocol, len(cm.protocols))
	for i, p := range cm.protocols {
		protos[i] = records.ClassicProtocol{Name: p.name, Metadata: append([]byte{}, p.metadata...)}
	}
	m.classic = &records.ClassicMemberMetadata{SessionTimeoutMs: cm.sessionTimeoutMs, SupportedProtocols: protos}
	um := upgradedMember{m: m, active: taskSet{}, stand: taskSet{}}
	// The tasks it reported running in its latest JoinGroup are its own
	// until it learns otherwise, whatever the stored assignments say.
	for t, sum := range sub.info.OffsetSums() {
		if sum == userdata.LatestOffset {
			um.active[classicTaskID(t)] = struct{}{}
		}
	}
	assignment := cm.assignment
	if len(assignment) == 0 {
		// A rebalance cleared it (resetAndPropagateAssignment): the member
		// still holds what the last stored generation gave it.
		assignment = cg.storedAssignment(cm.id)
	}
	if len(assignment) == 0 {
		return um, nil
	}
	asg, err := userdata.DecodeAssignment(assignment)
	var info *userdata.AssignmentInfo
	if err == nil {
		info, err = userdata.DecodeAssignmentInfo(asg.UserData)
	}
	if err != nil {
		return upgradedMember{}, errf(kerr.GroupIDNotFound, "Classic group %s cannot be upgraded: member %s has an unreadable Streams assignment: %v.", cg.id, cm.id, err)
	}
	if info.ErrorCode == userdata.ErrCodeNone {
		for _, t := range info.ActiveTasks {
			um.active[classicTaskID(t)] = struct{}{}
		}
		for _, s := range info.StandbyTasks {
			um.stand[classicTaskID(s.Task)] = struct{}{}
		}
	}
	for t := range um.active {
		delete(um.stand, t)
	}
	return um, nil
}

// storedAssignment is the member's assignment in the group's last stored
// generation (nil if it had none).
func (g *classicGroup) storedAssignment(member string) []byte {
	if g.durable == nil {
		return nil
	}
	for _, m := range g.durable.Members {
		if m.MemberID == member {
			return m.Assignment
		}
	}
	return nil
}

// writeUpgradedGroup writes the records of the converted streams group:
// member metadata, group metadata at the classic generation, targets equal
// to the current assignments, the target metadata, and the current
// assignments (Kafka's createConsumerGroupRecords order).
func (c *Coordinator) writeUpgradedGroup(id string, generation int32, members []upgradedMember) {
	for _, um := range members {
		c.write(records.Record{Key: records.StreamsGroupMemberMetadataKey{GroupID: id, MemberID: um.m.id}, Value: memberMetadataValue(um.m)})
	}
	c.write(records.Record{Key: records.StreamsGroupMetadataKey{GroupID: id}, Value: records.StreamsGroupMetadataValue{Epoch: generation,
		ValidatedTopologyEpoch: -1, StoredDescriptionTopologyEpoch: -1, FailedDescriptionTopologyEpoch: -1,
		LastAssignmentConfigs: c.assignmentConfigs(id)}})
	for _, um := range members {
		c.write(targetRecord(id, um.m.id, tasksTuple{active: um.active, standby: um.stand, warmup: taskSet{}}))
	}
	c.write(records.Record{Key: records.StreamsGroupTargetAssignmentMetadataKey{GroupID: id},
		Value: records.StreamsGroupTargetAssignmentMetadataValue{AssignmentEpoch: generation}})
	for _, um := range members {
		m := um.m.clone()
		m.epoch, m.prevEpoch, m.state = generation, generation, memberStable
		m.assigned = ownedTasks{active: taskEpochs{}, standby: um.stand, warmup: taskSet{}}
		for t := range um.active {
			m.assigned.active[t] = generation
		}
		m.pending = emptyOwned()
		c.write(currentAssignmentRecord(id, m))
	}
}

// fenceSameProcess is the same-process rule: a streams-protocol join with
// process id P fences every classic member of P at once, freeing its tasks
// (Kafka Streams' state-directory lock makes a process id single-process;
// docs/MIGRATION.md). It never downgrades the group.
//
// A join of a process whose members left on their own moments before (a
// leave-group close) waits for as many members as left
// (migration_regroup.go).
func (c *Coordinator) fenceSameProcess(g *streamsGroup, req *kmsg.StreamsGroupHeartbeatRequest) {
	if req.ProcessID == nil {
		return
	}
	fenced := 0
	if g.classicMembers > 0 {
		fenced = c.fenceProcessMembers(g, *req.ProcessID, req.MemberID, true, 0)
	}
	c.awaitRegroup(g, *req.ProcessID, false, max(fenced, c.returningMembers(g, *req.ProcessID, req.MemberID)))
}

// fenceProcessMembers fences every member of process other than except
// that speaks the other protocol (classic members when classic, else
// streams-protocol ones) and has not been heard from (its session last
// renewed; no session timer counts as heard) for more than silentMs (0:
// fence whatever it did), with
// ReasonProcessReplaced, and returns how many it fenced. It never
// downgrades the group: the joining member's own path decides that.
func (c *Coordinator) fenceProcessMembers(g *streamsGroup, process, except string, classic bool, silentMs int64) int {
	saved := c.migration.noDowngrade
	c.migration.noDowngrade = true
	defer func() { c.migration.noDowngrade = saved }()
	// Only the process's members are sorted: a join must not sort a
	// large group's every member id.
	var ids []string
	for id, m := range g.members {
		if (m.classic != nil) == classic && m.processID == process && id != except {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	fenced := 0
	for _, id := range ids {
		if silentMs > 0 {
			t, ok := c.timers[sessionTimerKey(g.id, id)]
			if !ok || c.now-(t.deadline-int64(c.sessionTimeoutOf(g, id))) <= silentMs {
				continue // still heartbeating (another instance with this process id), or unknown
			}
		}
		c.fenceMember(g, id, EventMemberFenced, ReasonProcessReplaced)
		fenced++
	}
	return fenced
}
