package core

import (
	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Committed offsets are stored by the data plane's own offsets log, not by
// core: for OffsetCommit, TxnOffsetCommit, OffsetFetch and OffsetDelete the
// host asks core for a decision (Kafka's Group.validateOffsetCommit /
// validateOffsetFetch / validateOffsetDelete for classic and streams
// groups), then either answers every partition with the decision's error
// or forwards the request to the data plane as an admin request
// (generation -1, no member), so transactional commits and users' tools
// keep working. Decisions read committed state: call them between batches.

// OffsetDecision is core's verdict on one group's part of an offsets
// request.
type OffsetDecision struct {
	Group string
	// ErrorCode is 0 when the request may go to the data plane, else the
	// Kafka error to answer every partition with.
	ErrorCode int16
	// Message is Kafka's error message, where it has one.
	Message string
	// NotHeld says core holds no group with this id: the request concerns
	// an offsets-only ("simple") group of the data plane, or none.
	NotHeld bool
	// Subscribed (OffsetDelete only) lists requested topics the group is
	// subscribed to: their partitions get GROUP_SUBSCRIBED_TO_TOPIC; the
	// others may be deleted.
	Subscribed []string
}

// decideOffsetCommit decides an OffsetCommit. A classic member's valid
// commit in Stable or PreparingRebalance also restarts its session timer,
// as in Kafka, so the Output (timer changes only, no records or responses)
// must be handled like any other.
func (c *Coordinator) decideOffsetCommit(now int64, req *kmsg.OffsetCommitRequest) (OffsetDecision, Output) {
	c.begin(now)
	d := c.decideCommit(req.Group, req.MemberID, req.InstanceID, req.Generation, req.Version, false, c.commitTopics(req))
	if d.ErrorCode == 0 {
		if g, ok := c.groups[req.Group].(*classicGroup); ok && (g.state == classicStable || g.state == classicPreparingRebalance) {
			if m := g.members[req.MemberID]; m != nil {
				c.scheduleClassicHeartbeat(g, m, m.sessionTimeoutMs)
			}
		}
	}
	return d, c.end()
}

// decideTxnOffsetCommit decides a TxnOffsetCommit (no state changes).
func (c *Coordinator) decideTxnOffsetCommit(req *kmsg.TxnOffsetCommitRequest) OffsetDecision {
	var topics []OffsetCommitTopic
	for _, t := range req.Topics {
		ot := OffsetCommitTopic{Topic: c.topicName(t.Topic, t.TopicID)}
		for _, p := range t.Partitions {
			ot.Partitions = append(ot.Partitions, p.Partition)
		}
		topics = append(topics, ot)
	}
	d := c.decideCommit(req.Group, req.MemberID, req.InstanceID, req.Generation, req.Version, true, topics)
	if d.ErrorCode == errStaleMemberEpoch && req.Version < 6 {
		d.ErrorCode, d.Message = errIllegalGeneration, ""
	}
	return d
}

func (c *Coordinator) commitTopics(req *kmsg.OffsetCommitRequest) []OffsetCommitTopic {
	var topics []OffsetCommitTopic
	for _, t := range req.Topics {
		ot := OffsetCommitTopic{Topic: c.topicName(t.Topic, t.TopicID)}
		for _, p := range t.Partitions {
			ot.Partitions = append(ot.Partitions, p.Partition)
		}
		topics = append(topics, ot)
	}
	return topics
}

// topicName is name, or — for the versions that name topics by id
// (OffsetCommit v10+, TxnOffsetCommit v6+) — the name of topic id in the
// topic metadata, as Kafka resolves it from its metadata image; "" when
// unknown.
func (c *Coordinator) topicName(name string, id [16]byte) string {
	if name != "" || id == ([16]byte{}) {
		return name
	}
	for n, t := range c.topics.byName {
		if t.ID == id {
			return n
		}
	}
	return ""
}

// decideCommit is OffsetMetadataManager.validateOffsetCommit and
// validateTransactionalOffsetCommit.
func (c *Coordinator) decideCommit(group, memberID string, instanceID *string, generation int32, version int16, txn bool, topics []OffsetCommitTopic) OffsetDecision {
	d := OffsetDecision{Group: group}
	if group == "" {
		d.ErrorCode = errInvalidGroupID
		return d
	}
	g, ok := c.groups[group]
	if !ok {
		d.NotHeld = true
		switch {
		case generation < 0: // admin commit or a consumer without group management
		case (!txn && version >= 9) || (txn && version >= 6):
			d.ErrorCode, d.Message = errGroupIDNotFound, "Group "+group+" not found."
		default:
			d.ErrorCode = errIllegalGeneration
		}
		return d
	}
	switch x := g.(type) {
	case *classicGroup:
		if c.downgradedRejoin(x, memberID, generation) {
			// A member of a just-downgraded group still commits at its last
			// epoch in the streams group; Kafka's downgrade keeps that epoch
			// as the generation, so its commits stay valid until it rejoins
			// (docs/MIGRATION.md).
			generation = x.generation
		}
		d.ErrorCode = x.validateOffsetCommit(memberID, instanceID, generation, txn)
	case *streamsGroup:
		if txn && generation == -1 && memberID == "" && instanceID == nil {
			return d // Kafka 4.4: a transactional commit without a member
		}
		if generation < 0 && len(x.members) == 0 {
			return d // admin commit on an empty streams group
		}
		if m := x.members[memberID]; m != nil && m.classic != nil {
			d.ErrorCode = c.bridgeCommit(x, m, generation) // online migration
			return d
		}
		d.ErrorCode, d.Message = c.validateStreamsOffsetCommit(group, memberID, generation, version, txn, topics)
	case *consumerGroup:
		d.ErrorCode, d.Message = c.validateConsumerCommit(x, memberID, generation, version, txn, topics)
	}
	return d
}

// validateOffsetCommit is ClassicGroup.validateOffsetCommit.
func (g *classicGroup) validateOffsetCommit(memberID string, instanceID *string, generation int32, txn bool) int16 {
	if g.state == classicDead {
		return errCoordinatorNotAvailable
	}
	if generation < 0 && g.state == classicEmpty {
		return 0 // admin commit on an empty group
	}
	if generation >= 0 || memberID != "" || instanceID != nil {
		if code := g.validateMember(memberID, instanceID); code != 0 {
			return code
		}
		if generation != g.generation {
			return errIllegalGeneration
		}
	} else if !txn && g.state != classicEmpty {
		return errUnknownMemberID
	}
	if !txn && g.state == classicCompletingRebalance {
		return errRebalanceInProgress
	}
	return 0
}

// decideOffsetFetch decides each group of an OffsetFetch: v0-7 name one
// group, v8+ a list, optionally with a member id and epoch (v9+) that a
// streams group checks.
func (c *Coordinator) decideOffsetFetch(req *kmsg.OffsetFetchRequest) []OffsetDecision {
	if req.Version < 8 {
		return []OffsetDecision{c.decideFetch(req.Group, nil, -1)}
	}
	out := make([]OffsetDecision, 0, len(req.Groups))
	for _, g := range req.Groups {
		out = append(out, c.decideFetch(g.Group, g.MemberID, g.MemberEpoch))
	}
	return out
}

func (c *Coordinator) decideFetch(group string, memberID *string, epoch int32) OffsetDecision {
	d := OffsetDecision{Group: group}
	if group == "" {
		d.ErrorCode = errInvalidGroupID
		return d
	}
	g, ok := c.groups[group]
	if !ok {
		d.NotHeld = true
		return d
	}
	if cg, ok := g.(*consumerGroup); ok {
		d.ErrorCode, d.Message = validateConsumerFetch(cg, memberID, epoch)
		return d
	}
	if _, isStreams := g.(*streamsGroup); isStreams && !(memberID == nil && epoch < 0) {
		id := ""
		if memberID != nil {
			id = *memberID
		}
		d.ErrorCode, d.Message = c.validateStreamsOffsetFetch(group, id, epoch)
	}
	return d
}

// decideOffsetDelete is OffsetMetadataManager.deleteOffsets' validation.
func (c *Coordinator) decideOffsetDelete(req *kmsg.OffsetDeleteRequest) OffsetDecision {
	d := OffsetDecision{Group: req.Group}
	if req.Group == "" {
		d.ErrorCode = errInvalidGroupID
		return d
	}
	g, ok := c.groups[req.Group]
	if !ok {
		d.NotHeld = true
		return d
	}
	var subscribed func(string) bool
	switch x := g.(type) {
	case *classicGroup:
		if x.state != classicEmpty && deref0(x.protocolType) != consumerProtocolType {
			d.ErrorCode = errNonEmptyGroup
			return d
		}
		subscribed = x.isSubscribedToTopic
	case *consumerGroup:
		subscribed = x.subscribedTo
	case *streamsGroup:
		subscribed = func(topic string) bool {
			if x.IsEmpty() || x.topology == nil {
				return false
			}
			for _, s := range x.topology.Subtopologies {
				if streamsSourceTopic(s, topic) {
					return true
				}
			}
			return false
		}
	}
	for _, t := range req.Topics {
		if subscribed(t.Topic) {
			d.Subscribed = append(d.Subscribed, t.Topic)
		}
	}
	return d
}

// streamsSourceTopic reports whether topic is a source or repartition
// source topic of a subtopology (StreamsTopology.sourceTopicMap).
func streamsSourceTopic(s records.Subtopology, topic string) bool {
	for _, t := range s.SourceTopics {
		if t == topic {
			return true
		}
	}
	for _, t := range s.RepartitionSourceTopics {
		if t.Name == topic {
			return true
		}
	}
	return false
}
