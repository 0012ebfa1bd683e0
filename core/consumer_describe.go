package core

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumerGroupDescribe answers a consumerGroupDescribe request (v0–1)
// from the current state; call it between batches so it reads committed
// state. Authorization is the host's job.
func (c *Coordinator) consumerGroupDescribe(req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	resp := kmsg.NewPtrConsumerGroupDescribeResponse()
	resp.Version = req.Version
	for _, id := range req.Groups {
		resp.Groups = append(resp.Groups, c.describeConsumerGroup(id, req.Version))
	}
	return resp
}

func (c *Coordinator) describeConsumerGroup(id string, version int16) kmsg.ConsumerGroupDescribeResponseGroup {
	out := kmsg.NewConsumerGroupDescribeResponseGroup()
	out.Group = id
	g, ok := c.groups[id].(*consumerGroup)
	if !ok {
		out.ErrorCode = kerr.GroupIDNotFound.Code
		msg := "Group " + id + " not found."
		if _, exists := c.groups[id]; exists {
			msg = "Group " + id + " is not a consumer group."
		}
		out.ErrorMessage = &msg
		return out
	}
	out.State, out.Epoch, out.AssignmentEpoch = g.state.String(), g.groupEpoch, g.assignmentEpoch
	if len(c.cfg.Consumer.Assignors) > 0 {
		out.AssignorName = c.preferredConsumerAssignor(g).Name
	}
	out.Members = []kmsg.ConsumerGroupDescribeResponseGroupMember{}
	for _, mid := range g.sortedMemberIDs() {
		m := g.members[mid]
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID, dm.InstanceID, dm.RackID, dm.MemberEpoch = m.id, m.instanceID, m.rackID, m.epoch
		dm.ClientID, dm.ClientHost = m.clientID, m.clientHost
		// Kafka 4.4 answers "" for a member without a regex (seen side by
		// side in interop/consumer_interop_test.go), not null.
		dm.SubscribedTopics, dm.SubscribedTopicRegex = append([]string{}, m.topics...), kmsg.StringPtr(deref0(m.regex))
		dm.Assignment.TopicPartitions = c.describeParts(m.assigned.set())
		dm.TargetAssignment.TopicPartitions = c.describeParts(g.target[mid])
		if version >= 1 {
			dm.MemberType = 1 // the consumer protocol
			if m.classic != nil {
				dm.MemberType = 0 // the classic protocol
			}
		}
		out.Members = append(out.Members, dm)
	}
	return out
}

// describeParts lists partitions with their topic names; partitions of
// topics the metadata image no longer has are left out, as in Kafka.
func (c *Coordinator) describeParts(s partSet) []kmsg.AssignmentTopicPartition {
	names := map[[16]byte]string{}
	for _, t := range c.topics.byName {
		names[t.ID] = t.Name
	}
	out := []kmsg.AssignmentTopicPartition{}
	for _, tp := range s.toTopicPartitions() {
		name, ok := names[tp.TopicID]
		if !ok {
			continue
		}
		out = append(out, kmsg.AssignmentTopicPartition{TopicID: tp.TopicID, Topic: name, Partitions: tp.Partitions})
	}
	return out
}
