package core

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
)

// validateConsumerCommit decides whether a consumer-group member may commit
// offsets, as Kafka 4.4's ConsumerGroup.validateOffsetCommit: a negative
// epoch on an empty group is an admin commit; a transactional commit
// without a member comes from a producer outside the group; members of the
// consumer protocol must use OffsetCommit v9+; the epoch must be the
// member's, or an older one at which the member already held every
// committed partition, assigned or pending revocation (KIP-1251). Classic
// members get ILLEGAL_GENERATION where consumer-protocol members get
// STALE_MEMBER_EPOCH.
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
	classic := m.classic != nil
	if !txn && !classic && version < 9 {
		return kerr.UnsupportedVersion.Code, "OffsetCommit version 9 or above must be used by members using the consumer group protocol"
	}
	if epoch == m.epoch {
		return 0, ""
	}
	stale, what := kerr.StaleMemberEpoch, "member epoch"
	if classic {
		stale, what = kerr.IllegalGeneration, "generation id"
	}
	if epoch > m.epoch {
		e := errf(stale, "Received %s %d is newer than current member epoch %d.", what, epoch, m.epoch)
		return e.code, e.msg
	}
	for _, t := range topics {
		meta, known := c.topics.byName[t.Topic]
		for _, p := range t.Partitions {
			tp := topicPart{meta.ID, p}
			ep, held := m.assigned[tp]
			if !held {
				ep, held = m.pending[tp]
			}
			switch {
			case !known || !held:
				e := errf(stale, "Partition %s-%d is not assigned or pending revocation for member.", t.Topic, p)
				return e.code, e.msg
			case epoch < ep:
				e := errf(stale, "Received %s %d is older than assignment epoch %d for partition %s-%d.", what, epoch, ep, t.Topic, p)
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
		e := errf(kerr.StaleMemberEpoch, "The received member epoch %d does not match the expected member epoch %d.", epoch, m.epoch)
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
