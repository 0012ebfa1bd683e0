package core

import (
	"bytes"
	"fmt"
	"sort"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Target assignment of consumer groups (Kafka's TargetAssignmentBuilder):
// the group's server assignor runs inline on the current members, and the
// members whose target changed get a TargetAssignmentMember record, then
// the group a TargetAssignmentMetadata record at the group epoch.

// preferredConsumerAssignor is the assignor most members name (ties: the
// earlier one in consumerAssignorNames); the default (first) when no
// member names a known one. A name that is no longer registered does not
// count.
func (c *Coordinator) preferredConsumerAssignor(g *consumerGroup) NamedPartitionAssignor {
	counts := map[string]int{}
	for _, m := range g.members {
		if m.serverAssignor != nil {
			counts[*m.serverAssignor]++
		}
	}
	best := c.cfg.Consumer.Assignors[0]
	bestN := 0
	for _, name := range c.consumerAssignorNames() {
		if counts[name] <= bestN {
			continue
		}
		if a, ok := c.consumerAssignor(name); ok {
			best, bestN = NamedPartitionAssignor{Name: name, Assignor: a}, counts[name]
		}
	}
	return best
}

// consumerAssignInput builds the assignor's input: existing subscribed
// topics ascending by id, members ascending by id with their current
// targets.
func (c *Coordinator) consumerAssignInput(g *consumerGroup) PartitionAssignInput {
	in := PartitionAssignInput{Group: g.id, Epoch: g.groupEpoch}
	for _, name := range g.subscribedTopics() {
		if t, ok := c.topics.byName[name]; ok {
			in.Topics = append(in.Topics, AssignTopic{ID: t.ID, Name: t.Name, Partitions: t.Partitions, Racks: t.Racks})
		}
	}
	sort.Slice(in.Topics, func(i, j int) bool { return bytes.Compare(in.Topics[i].ID[:], in.Topics[j].ID[:]) < 0 })
	byName := map[string]int32{}
	byID := map[[16]byte]int32{}
	for i, t := range in.Topics {
		byName[t.Name], byID[t.ID] = int32(i), int32(i)
	}
	for _, id := range g.sortedMemberIDs() {
		m := g.members[id]
		am := PartitionAssignMember{MemberID: id, InstanceID: deref0(m.instanceID), RackID: deref0(m.rackID), Subscribed: []int32{}}
		for _, name := range g.memberTopics(m) {
			if i, ok := byName[name]; ok {
				am.Subscribed = append(am.Subscribed, i)
			}
		}
		sort.Slice(am.Subscribed, func(i, j int) bool { return am.Subscribed[i] < am.Subscribed[j] })
		for _, tp := range g.target[id].toTopicPartitions() {
			ti, ok := byID[tp.TopicID]
			if !ok {
				continue
			}
			var ps []int32
			for _, p := range tp.Partitions {
				if p < in.Topics[ti].Partitions {
					ps = append(ps, p)
				}
			}
			if len(ps) > 0 {
				am.Assigned = append(am.Assigned, AssignedTopic{Topic: ti, Partitions: ps})
			}
		}
		sort.Slice(am.Assigned, func(i, j int) bool { return am.Assigned[i].Topic < am.Assigned[j].Topic })
		in.Members = append(in.Members, am)
		in.TableSeq = append(in.TableSeq, g.table.seqAt(id, c.entry()))
	}
	in.TablePeak = g.table.peakAt(c.entry())
	return in
}

// consumerTargetDue reports whether a heartbeat (or a classic member's
// JoinGroup) should compute a new target now: the group epoch is ahead of
// the assignment epoch and the assignment interval has passed since the
// last one (Kafka 4.4's canComputeNextTargetAssignment; a group that never
// had one computes at once). Meanwhile members reconcile toward the
// current target, and every change waits for one assignor run. A target
// that gives no one anything (its topics did not exist yet) does not hold
// the next one back: there is nothing to batch, and a topic created
// through coordhost is assigned at once (docs/CONSUMER.md).
func (c *Coordinator) consumerTargetDue(g *consumerGroup) bool {
	if g.groupEpoch <= g.assignmentEpoch {
		return false
	}
	interval := int64(c.consumerGroupConfig(g.id).AssignmentIntervalMs)
	return interval <= 0 || g.assignmentTimestamp == 0 || c.now >= g.assignmentTimestamp+interval || g.targetEmpty()
}

// targetEmpty reports whether the current target assigns no partition.
func (g *consumerGroup) targetEmpty() bool {
	for _, ps := range g.target {
		if len(ps) > 0 {
			return false
		}
	}
	return true
}

// updateConsumerTarget computes and stores the target at the group epoch.
func (c *Coordinator) updateConsumerTarget(g *consumerGroup) *kafkaError {
	asg := c.preferredConsumerAssignor(g)
	in := c.consumerAssignInput(g)
	out, err := asg.Assignor.AssignPartitions(in)
	if err == nil {
		err = checkAssignResult(in, out)
	}
	if err != nil {
		return errf(kerr.UnknownServerError, "Failed to compute a new target assignment for epoch %d: %v.", g.groupEpoch, err)
	}
	for i, am := range in.Members {
		next := partSet{}
		for _, at := range out[i] {
			for _, p := range at.Partitions {
				next[topicPart{in.Topics[at.Topic].ID, p}] = struct{}{}
			}
		}
		if old, ok := g.target[am.MemberID]; ok && old.equal(next) {
			continue
		}
		c.write(records.Record{Key: records.ConsumerGroupTargetAssignmentMemberKey{GroupID: g.id, MemberID: am.MemberID},
			Value: records.ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: next.toTopicPartitions()}})
	}
	c.write(records.Record{Key: records.ConsumerGroupTargetAssignmentMetadataKey{GroupID: g.id},
		Value: records.ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: g.groupEpoch, AssignmentTimestamp: c.now}})
	c.emit(Event{Kind: EventTargetAssigned, Group: g.id, Reason: ReasonAssignor, Epoch: g.assignmentEpoch})
	return nil
}

// checkAssignResult rejects an assignor result that does not fit its
// input: wrong member count, unknown topics, partitions out of range or
// given to two members.
func checkAssignResult(in PartitionAssignInput, out [][]AssignedTopic) error {
	if len(out) != len(in.Members) {
		return fmt.Errorf("%d member assignments for %d members", len(out), len(in.Members))
	}
	seen := map[topicPart]bool{}
	for _, ats := range out {
		for _, at := range ats {
			if at.Topic < 0 || int(at.Topic) >= len(in.Topics) {
				return fmt.Errorf("topic index %d out of range", at.Topic)
			}
			t := in.Topics[at.Topic]
			for _, p := range at.Partitions {
				tp := topicPart{t.ID, p}
				if p < 0 || p >= t.Partitions || seen[tp] {
					return fmt.Errorf("partition %s-%d out of range or assigned twice", t.Name, p)
				}
				seen[tp] = true
			}
		}
	}
	return nil
}
