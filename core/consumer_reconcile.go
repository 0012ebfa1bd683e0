package core

import (
	"maps"

	"github.com/coordhost/coordhost/core/records"
)

// Reconciliation of a consumer member toward its target (Kafka 4.4's
// CurrentAssignmentBuilder). A member first revokes what it must give up
// (UNREVOKED_PARTITIONS, at its old epoch); then it moves to the target
// epoch and gets the target's partitions that no other member holds;
// partitions still held elsewhere wait (UNRELEASED_PARTITIONS) until their
// owner revoked them. So a partition never has two owners.

// reconcileConsumer moves m toward its target, writes its new current
// assignment if it changed, and returns the member as stored. owned is
// what the member reported (nil: not reported); subChanged says its
// subscribed topics changed in this heartbeat.
func (c *Coordinator) reconcileConsumer(g *consumerGroup, m *consumerMember, owned partSet, subChanged bool) *consumerMember {
	b := reconcileStep{g: g, m: m, owned: owned, topics: c.topics.byName}
	next := b.build(subChanged)
	if next == nil || sameConsumerAssignment(next, m) {
		return m
	}
	c.write(consumerAssignmentRecord(g.id, next))
	c.emit(Event{Kind: EventMemberReconciled, Group: g.id, Member: m.id, Epoch: g.groupEpoch, MemberEpoch: next.epoch})
	stored := g.members[m.id]
	switch {
	case stored.classic != nil: // classic members have join and sync timers instead
	case stored.state == memberUnrevokedTasks:
		c.scheduleConsumerRebalance(g, stored)
	default:
		c.cancelTimer(consumerRebalanceKey(g.id, m.id))
	}
	return stored
}

func sameConsumerAssignment(a, b *consumerMember) bool {
	return a.epoch == b.epoch && a.prevEpoch == b.prevEpoch && a.state == b.state &&
		maps.Equal(a.assigned, b.assigned) && maps.Equal(a.pending, b.pending)
}

// reconcileStep is one run of the builder for a member.
type reconcileStep struct {
	g      *consumerGroup
	m      *consumerMember
	owned  partSet
	topics map[string]TopicMetadata
}

// build returns the member's next state, or nil when it stays as it is.
func (b reconcileStep) build(subChanged bool) *consumerMember {
	m, target := b.m, b.g.assignmentEpoch
	switch m.state {
	case memberStable:
		if m.epoch != target {
			return b.computeNext(m.epoch)
		}
		if subChanged {
			return b.dropUnsubscribed()
		}
	case memberUnrevokedTasks:
		if b.ownsAny(m.pending.set()) {
			if subChanged {
				return b.dropUnsubscribed()
			}
			return nil
		}
		// At its own epoch, as Kafka 4.4 (3.x used epoch + 1): a member
		// that must revoke more for a newer target stays where it is.
		return b.computeNext(m.epoch)
	case memberUnreleasedTasks:
		return b.computeNext(m.epoch)
	default: // a state this version does not know: start over if the member owns nothing
		return b.computeNext(target)
	}
	return nil
}

// ownsAny reports whether the member still owns one of parts; an
// unreported owned set counts as owning them all.
func (b reconcileStep) ownsAny(parts partSet) bool {
	if b.owned == nil {
		return true
	}
	for tp := range parts {
		if _, ok := b.owned[tp]; ok {
			return true
		}
	}
	return false
}

// subscribed is the set of topic ids the member subscribes to.
func (b reconcileStep) subscribed() map[[16]byte]bool {
	out := map[[16]byte]bool{}
	for _, name := range b.g.memberTopics(b.m) {
		if t, ok := b.topics[name]; ok {
			out[t.ID] = true
		}
	}
	return out
}

// dropUnsubscribed is CurrentAssignmentBuilder.updateCurrentAssignment:
// partitions of topics the member no longer subscribes to leave its
// assignment at once, pending revocation if it still owns them.
func (b reconcileStep) dropUnsubscribed() *consumerMember {
	subs := b.subscribed()
	n := b.m.clone()
	n.assigned, n.pending = partEpochs{}, partEpochs{}
	for tp, ep := range b.m.pending {
		n.pending[tp] = ep
	}
	removed := false
	for tp, ep := range b.m.assigned {
		if subs[tp.topic] {
			n.assigned[tp] = ep
		} else {
			n.pending[tp] = ep
			removed = true
		}
	}
	if !removed {
		return nil
	}
	if len(n.pending) > 0 && b.ownsAny(n.pending.set()) {
		n.state = memberUnrevokedTasks
	} else {
		n.pending = b.m.pending
	}
	return n
}

// computeNext is CurrentAssignmentBuilder.computeNextAssignment.
func (b reconcileStep) computeNext(memberEpoch int32) *consumerMember {
	g, m := b.g, b.m
	subs := b.subscribed()
	target := g.target[m.id]
	kept, revoke := partEpochs{}, partEpochs{}
	for tp, ep := range m.assigned {
		if _, ok := target[tp]; ok && subs[tp.topic] {
			kept[tp] = ep
		} else {
			revoke[tp] = ep
		}
	}
	n := m.clone()
	if len(revoke) > 0 && b.ownsAny(revoke.set()) {
		n.prevEpoch, n.epoch = m.epoch, memberEpoch
		n.state, n.assigned, n.pending = memberUnrevokedTasks, kept, revoke
		return n
	}
	unreleased := false
	for tp := range target {
		if _, ok := kept[tp]; ok || !subs[tp.topic] {
			continue
		}
		if owner, held := g.owner[tp]; held {
			if _, mine := m.pending[tp]; !(owner == m.id && mine) {
				unreleased = true
				continue
			}
		}
		kept[tp] = g.assignmentEpoch
	}
	n.prevEpoch, n.epoch = m.epoch, g.assignmentEpoch
	n.assigned, n.pending = kept, partEpochs{}
	n.state = memberStable
	if unreleased {
		n.state = memberUnreleasedTasks
	}
	return n
}

// consumerAssignmentRecord is the member's current-assignment record.
func consumerAssignmentRecord(group string, m *consumerMember) records.Record {
	return records.Record{Key: records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: group, MemberID: m.id}, Value: records.ConsumerGroupCurrentMemberAssignmentValue{
		MemberEpoch: m.epoch, PreviousMemberEpoch: m.prevEpoch, State: int8(m.state),
		AssignedPartitions: m.assigned.toTopicPartitions(), PartitionsPendingRevocation: m.pending.toTopicPartitions()}}
}
