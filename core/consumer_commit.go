package core

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// validateConsumerCommit decides whether a consumer-group member may commit
// offsets, as Kafka 4.4's ConsumerGroup.validateOffsetCommit: a negative
// epoch on an empty group is an admin commit; a transactional commit
// without a member comes from a producer outside the group; members must
// use OffsetCommit v9+; the epoch must be the member's, or an older one at
// which the member already held every committed partition (KIP-1251).
func (c *Coordinator) validateConsumerCommit(g *consumerGroup, memberID string, epoch int32, version int16, txn bool, topics []OffsetCommitTopic) (int16, string) {
	if epoch < 0 && len(g.members) == 0 {
		return 0, ""
	}
	if txn && epoch == leaveEpoch && memberID == "" {
		return 0, ""
	}
	m := g.members[memberID]
	if m == nil {
		e := errf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", memberID, g.id)
		return e.code, e.msg
	}
	if m.classic != nil {
		// A classic member: any version, its generation (Kafka's
		// validateMemberEpoch answers ILLEGAL_GENERATION).
		if epoch != m.epoch {
			e := errf(kerr.IllegalGeneration, "The received generation id %d does not match the expected member epoch %d.", epoch, m.epoch)
			return e.code, e.msg
		}
		return 0, ""
	}
	if !txn && version < 9 {
		return kerr.UnsupportedVersion.Code, "OffsetCommit version 9 or above must be used by members using the modern group protocol"
	}
	if epoch == m.epoch {
		return 0, ""
	}
	if epoch > m.epoch || epoch < 0 {
		e := errf(kerr.StaleMemberEpoch, "Received member epoch %d does not match the current member epoch %d.", epoch, m.epoch)
		return e.code, e.msg
	}
	for _, t := range topics {
		meta, ok := c.topics.byName[t.Topic]
		for _, p := range t.Partitions {
			ep, held := m.assigned[topicPart{meta.ID, p}]
			if !ok || !held || ep > epoch {
				e := errf(kerr.StaleMemberEpoch, "Received member epoch %d is older than the assignment epoch of %s-%d.", epoch, t.Topic, p)
				return e.code, e.msg
			}
		}
	}
	return 0, ""
}

// validateConsumerFetch is ConsumerGroup.validateOffsetFetch: a request
// without member id and with a negative epoch (admin) is accepted; a
// member must exist and send its current epoch.
func validateConsumerFetch(g *consumerGroup, memberID *string, epoch int32) (int16, string) {
	if memberID == nil && epoch < 0 {
		return 0, ""
	}
	id := ""
	if memberID != nil {
		id = *memberID
	}
	m := g.members[id]
	if m == nil {
		e := errf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", id, g.id)
		return e.code, e.msg
	}
	if epoch != m.epoch && m.classic != nil {
		e := errf(kerr.IllegalGeneration, "The received generation id %d does not match the expected member epoch %d.", epoch, m.epoch)
		return e.code, e.msg
	}
	if epoch != m.epoch {
		e := errf(kerr.StaleMemberEpoch, "Received member epoch %d does not match the current member epoch %d.", epoch, m.epoch)
		return e.code, e.msg
	}
	return 0, ""
}

// subscribedTo reports whether the group's members
// subscribe to topic (OffsetDelete answers GROUP_SUBSCRIBED_TO_TOPIC).
func (g *consumerGroup) subscribedTo(topic string) bool {
	_, found := slices.BinarySearch(g.subscribedTopics(), topic)
	return found
}
