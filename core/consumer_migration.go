package core

import (
	"sort"

	"github.com/coordhost/coordhost/core/records"
	"github.com/coordhost/coordhost/core/userdata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Online migration between classic and KIP-848 consumer groups, as Kafka
// 4.4's GroupMetadataManager does it (validateOnlineUpgrade,
// convertToConsumerGroup, validateOnlineDowngradeWithFencedMembers,
// convertToClassicGroup; docs/CONSUMER.md): the first consumer-protocol
// join on a non-empty classic group converts it into a consumer group whose
// classic members keep their partitions and are bridged
// (consumer_migration_bridge.go); when the last consumer-protocol member
// leaves, the group becomes a classic group again and rebalances.

// setConsumerMigrationPolicy sets (or with nil clears) a group's
// group.consumer.migration.policy override of
// Config.ConsumerMigrationPolicy.
func (c *Coordinator) setConsumerMigrationPolicy(group string, p *MigrationPolicy) {
	setPolicyOverride(&c.migration.consumerOverrides, group, p)
}

// consumerMigrationPolicy is the group's effective consumer policy.
func (c *Coordinator) consumerMigrationPolicy(group string) MigrationPolicy {
	if p, ok := c.migration.consumerOverrides[group]; ok {
		return p
	}
	return c.cfg.ConsumerMigrationPolicy
}

// upgradeToConsumerGroup validates and converts a non-empty classic group
// for a consumer-protocol join. Every refusal is GROUP_ID_NOT_FOUND, as in
// Kafka. The caller continues the heartbeat on the new group.
func (c *Coordinator) upgradeToConsumerGroup(cg *classicGroup) (*consumerGroup, *kafkaError) {
	notConsumer := errf(kerr.GroupIDNotFound, "Group %s is not a consumer group.", cg.id)
	if !c.consumerMigrationPolicy(cg.id).allowsUpgrade() || deref0(cg.protocolType) != consumerProtocolType ||
		int32(len(cg.members)) > c.consumerConfig().MaxSize {
		return nil, notConsumer
	}
	members, e := c.upgradedConsumerMembers(cg)
	if e != nil {
		return nil, e
	}
	c.retireClassicGroup(cg)
	// Kafka's createConsumerGroupRecords order.
	topics := map[string]struct{}{}
	for _, m := range members {
		c.write(records.Record{Key: records.ConsumerGroupMemberMetadataKey{GroupID: cg.id, MemberID: m.id}, Value: consumerMetadataValue(m)})
		for _, t := range m.topics {
			topics[t] = struct{}{}
		}
	}
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	sort.Strings(names)
	c.write(records.Record{Key: records.ConsumerGroupMetadataKey{GroupID: cg.id}, Value: records.ConsumerGroupMetadataValue{
		Epoch: cg.generation, MetadataHash: c.groupMetadataHash(names), CreationTimeMs: -1}})
	for _, m := range members {
		c.write(records.Record{Key: records.ConsumerGroupTargetAssignmentMemberKey{GroupID: cg.id, MemberID: m.id},
			Value: records.ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: m.assigned.set().toTopicPartitions()}})
	}
	c.write(records.Record{Key: records.ConsumerGroupTargetAssignmentMetadataKey{GroupID: cg.id},
		Value: records.ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: cg.generation}})
	for _, m := range members {
		c.write(consumerAssignmentRecord(cg.id, m))
	}
	c.emitGroup(EventGroupConverted, cg.id, ReasonOnlineToConsumer, cg.generation)
	g := c.groups[cg.id].(*consumerGroup)
	for _, m := range members {
		c.scheduleConsumerSession(g, g.members[m.id])
	}
	return g, nil
}

// upgradedConsumerMembers builds the consumer members of a classic group
// (Kafka's ConsumerGroup.fromClassicGroup): STABLE at the generation, with
// the topics and rack of their subscription and the partitions of their
// last assignment. coordhost also counts the partitions a member reported
// owning in its latest JoinGroup and, when a rebalance cleared its
// assignment, those of the last stored generation: a member holds them
// until it learns otherwise. A partition claimed twice stays with the
// first member in join order.
func (c *Coordinator) upgradedConsumerMembers(cg *classicGroup) ([]*consumerMember, *kafkaError) {
	malformed := errf(kerr.GroupIDNotFound, "Cannot upgrade the classic group %s to consumer group because the embedded consumer protocol is malformed.", cg.id)
	claimed := partSet{}
	var out []*consumerMember
	for _, cm := range cg.allMembers() {
		proto := deref0(cg.protocolName)
		if cm.metadata(proto) == nil && len(cm.protocols) > 0 {
			proto = cm.protocols[0].name
		}
		sub, err := userdata.DecodeSubscription(cm.metadata(proto))
		if err != nil {
			return nil, malformed
		}
		assignment := cm.assignment
		if len(assignment) == 0 {
			assignment = cg.storedAssignment(cm.id)
		}
		held := c.partitionsByName(sub.OwnedPartitions)
		if len(assignment) > 0 {
			asg, err := userdata.DecodeAssignment(assignment)
			if err != nil {
				return nil, malformed
			}
			if len(asg.UserData) > 0 {
				return nil, errf(kerr.GroupIDNotFound, "Cannot upgrade classic group %s to consumer group because an unsupported custom assignor is in use. Please refer to the documentation or switch to a default assignor before re-attempting the upgrade.", cg.id)
			}
			for tp := range c.assignedPartitionsByName(asg.Topics) {
				held[tp] = struct{}{}
			}
		}
		m := newConsumerMember(cm.id)
		m.epoch, m.prevEpoch, m.state = cg.generation, cg.generation, memberStable
		m.instanceID, m.rackID = cm.instanceID, sub.Rack
		m.rebalanceTimeoutMs, m.clientID, m.clientHost = cm.rebalanceTimeoutMs, cm.clientID, cm.clientHost
		m.topics = normalizeTopics(sub.Topics)
		m.classic = classicMetadataOf(cm.sessionTimeoutMs, cm.protocols)
		for tp := range held {
			if _, dup := claimed[tp]; !dup {
				m.assigned[tp] = cg.generation
				claimed[tp] = struct{}{}
			}
		}
		out = append(out, m)
	}
	return out, nil
}

// classicMetadataOf is a member's ClassicMemberMetadata from its JoinGroup.
func classicMetadataOf(sessionTimeoutMs int32, protocols []classicProtocol) *records.ClassicMemberMetadata {
	cm := &records.ClassicMemberMetadata{SessionTimeoutMs: sessionTimeoutMs, SupportedProtocols: make([]records.ClassicProtocol, len(protocols))}
	for i, p := range protocols {
		cm.SupportedProtocols[i] = records.ClassicProtocol{Name: p.name, Metadata: append([]byte{}, p.metadata...)}
	}
	return cm
}

// partitionsByName maps ConsumerProtocol owned partitions to partitions of
// existing topics (unknown topics are left out, as Kafka does).
func (c *Coordinator) partitionsByName(owned []kmsg.ConsumerMemberMetadataOwnedPartition) partSet {
	s := partSet{}
	for _, t := range owned {
		if meta, ok := c.topics.byName[t.Topic]; ok {
			for _, p := range t.Partitions {
				s[topicPart{meta.ID, p}] = struct{}{}
			}
		}
	}
	return s
}

// assignedPartitionsByName maps ConsumerProtocol assigned partitions.
func (c *Coordinator) assignedPartitionsByName(topics []kmsg.ConsumerMemberAssignmentTopic) partSet {
	owned := make([]kmsg.ConsumerMemberMetadataOwnedPartition, len(topics))
	for i, t := range topics {
		owned[i] = kmsg.ConsumerMemberMetadataOwnedPartition(t)
	}
	return c.partitionsByName(owned)
}

// maybeDowngradeConsumer converts g into a classic group when the members
// leaving go (or, with replaced, when a classic static member has just
// taken a consumer-protocol member's place) and every member that stays
// uses the classic protocol, at least one stays, the policy allows a
// downgrade and the classic max size fits (Kafka's
// validateOnlineDowngradeWith*). It reports whether it did.
func (c *Coordinator) maybeDowngradeConsumer(g *consumerGroup, leaving []string, replaced bool) bool {
	if c.replaying || !c.consumerMigrationPolicy(g.id).allowsDowngrade() {
		return false
	}
	gone := map[string]bool{}
	for _, id := range leaving {
		gone[id] = true
	}
	var stay []*consumerMember
	for _, id := range g.sortedMemberIDs() {
		if m := g.members[id]; !gone[id] {
			if m.classic == nil {
				return false
			}
			stay = append(stay, m)
		}
	}
	if len(stay) == 0 || int32(len(stay)) > c.classicConfig(g.id).MaxSize {
		return false
	}
	c.convertToClassicGroup(g, stay, replaced)
	return true
}

// convertToClassicGroup writes the consumer group's tombstones (Kafka's
// createGroupTombstoneRecords order) and the classic group's
// GroupMetadata: generation = group epoch, protocol type consumer, the
// selected protocol, each member's target assignment serialized at its
// subscription's version. Then the classic group prepares a rebalance, so
// its members rejoin and a leader assigns — after a static replacement
// only if the target was behind the group epoch, as in Kafka.
func (c *Coordinator) convertToClassicGroup(g *consumerGroup, stay []*consumerMember, replaced bool) {
	ids := g.sortedMemberIDs()
	epoch, behind := g.groupEpoch, g.assignmentEpoch < g.groupEpoch
	targets := map[string]partSet{}
	for _, m := range stay {
		targets[m.id] = g.target[m.id]
	}
	for _, id := range ids {
		c.write(records.Record{Key: records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: g.id, MemberID: id}})
	}
	for _, id := range ids {
		c.write(records.Record{Key: records.ConsumerGroupTargetAssignmentMemberKey{GroupID: g.id, MemberID: id}})
	}
	c.write(records.Record{Key: records.ConsumerGroupTargetAssignmentMetadataKey{GroupID: g.id}})
	for _, id := range ids {
		c.write(records.Record{Key: records.ConsumerGroupMemberMetadataKey{GroupID: g.id, MemberID: id}})
	}
	regexes := make([]string, 0, len(g.regexes))
	for r := range g.regexes {
		regexes = append(regexes, r)
	}
	sort.Strings(regexes)
	for _, r := range regexes {
		c.write(records.Record{Key: records.ConsumerGroupRegularExpressionKey{GroupID: g.id, RegularExpression: r}})
	}
	c.write(records.Record{Key: records.ConsumerGroupPartitionMetadataKey{GroupID: g.id}})
	c.write(records.Record{Key: records.ConsumerGroupMetadataKey{GroupID: g.id}})
	for _, id := range ids {
		c.cancelConsumerMemberTimers(g.id, id)
	}
	cg := newClassicGroup(g.id)
	cg.generation, cg.stateTime = epoch, c.now
	for _, m := range stay {
		protos := make([]classicProtocol, len(m.classic.SupportedProtocols))
		for i, p := range m.classic.SupportedProtocols {
			protos[i] = classicProtocol{name: p.Name, metadata: p.Metadata}
		}
		cg.add(&classicMember{id: m.id, instanceID: m.instanceID, clientID: m.clientID, clientHost: m.clientHost,
			rebalanceTimeoutMs: m.rebalanceTimeoutMs, sessionTimeoutMs: m.classic.SessionTimeoutMs,
			protocolType: consumerProtocolType, protocols: protos})
	}
	pn := cg.selectProtocol()
	cg.protocolName = &pn
	assignments := map[string][]byte{}
	for _, m := range cg.allMembers() {
		assignments[m.id] = c.consumerProtocolAssignment(targets[m.id], m.metadata(pn))
	}
	c.write(groupMetadataRecord(cg, assignments))
	c.emitGroup(EventGroupConverted, g.id, ReasonConsumerToClassic, epoch)
	live := c.groups[g.id].(*classicGroup)
	c.snapshotClassic(live)
	for _, m := range live.allMembers() {
		if src := cg.members[m.id]; src != nil {
			m.protocols = src.protocols
		}
		c.scheduleClassicHeartbeat(live, m, m.sessionTimeoutMs)
	}
	if !replaced || behind {
		c.classicPrepareRebalance(live)
	}
}

// consumerProtocolAssignment serializes partitions as a ConsumerProtocol
// assignment at the version of the member's subscription (topics and
// partitions ascending); topics no longer known are left out.
func (c *Coordinator) consumerProtocolAssignment(parts partSet, subscription []byte) []byte {
	names := map[[16]byte]string{}
	for name, t := range c.topics.byName {
		names[t.ID] = name
	}
	var tps []userdata.TopicPartition
	for tp := range parts {
		if name, ok := names[tp.topic]; ok {
			tps = append(tps, userdata.TopicPartition{Topic: name, Partition: tp.partition})
		}
	}
	userdata.SortPartitions(tps)
	version := int16(0)
	if len(subscription) >= 2 {
		version = int16(subscription[0])<<8 | int16(subscription[1])
	}
	b, err := userdata.EncodeAssignment(&kmsg.ConsumerMemberAssignment{Version: max(version, 0), Topics: userdata.AssignmentTopics(tps)})
	if err != nil {
		return []byte{}
	}
	return b
}
