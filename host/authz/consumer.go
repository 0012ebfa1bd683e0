package authz

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// describedTopicsRefused is Kafka's message for a consumer group whose
// members are assigned a topic the principal may not DESCRIBE.
const describedTopicsRefused = "The group has described topic(s) that the client is not authorized to describe."

// consumerGroupHeartbeat: READ on the group, then DESCRIBE on every
// subscribed topic name; any refused topic answers TOPIC_AUTHORIZATION_FAILED
// alone, without naming the topics (Kafka 4.4 KafkaApis).
func (c *check) consumerGroupHeartbeat(b *kmsg.ConsumerGroupHeartbeatRequest) (kmsg.Response, error) {
	if ok, err := c.allowed(kmsg.ACLResourceTypeGroup, b.Group, opRead); err != nil || !ok {
		return denied(b, codeGroup), err
	}
	if len(b.SubscribedTopicNames) > 0 {
		topics := slices.Compact(slices.Sorted(slices.Values(b.SubscribedTopicNames)))
		ok, err := c.allowedSet(kmsg.ACLResourceTypeTopic, topics, opDescribe)
		if err != nil {
			return nil, err
		}
		for _, t := range topics {
			if !ok[t] {
				return denied(b, codeTopic), nil
			}
		}
	}
	return c.inner(b)
}

// consumerGroupDescribe: DESCRIBE on each group, as DescribeGroups; then a
// described group whose members' current or target assignment holds a
// topic the principal may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED
// with no members (Kafka 4.4 KafkaApis).
func (c *check) consumerGroupDescribe(b *kmsg.ConsumerGroupDescribeRequest) (kmsg.Response, error) {
	set := func(gs []string) kmsg.Request { s := *b; s.Groups = gs; return &s }
	return byItem(c, b.Groups, set, kmsg.ACLResourceTypeGroup, ident, opDescribe, codeGroup, func(r, refused *kmsg.ConsumerGroupDescribeResponse) error {
		err := c.fillOps(b.IncludeAuthorizedOperations, len(r.Groups), func(i int) (string, int16, *int32) {
			return r.Groups[i].Group, r.Groups[i].ErrorCode, &r.Groups[i].AuthorizedOperations
		})
		if err != nil {
			return err
		}
		r.Groups = append(refused.Groups, r.Groups...)
		return c.hideUndescribableTopics(r)
	})
}

// hideUndescribableTopics replaces every group of r that shows a topic the
// principal may not DESCRIBE by a TOPIC_AUTHORIZATION_FAILED group.
func (c *check) hideUndescribableTopics(r *kmsg.ConsumerGroupDescribeResponse) (err error) {
	r.Groups, err = hideGroups(c, r.Groups, assignedTopics, func(g kmsg.ConsumerGroupDescribeResponseGroup) kmsg.ConsumerGroupDescribeResponseGroup {
		ng := kmsg.NewConsumerGroupDescribeResponseGroup()
		ng.Group, ng.ErrorCode = g.Group, codeTopic
		ng.ErrorMessage = kmsg.StringPtr(describedTopicsRefused)
		ng.Members = []kmsg.ConsumerGroupDescribeResponseGroupMember{}
		return ng
	})
	return err
}

// assignedTopics are the topic names of every member's current and target
// assignment.
func assignedTopics(g kmsg.ConsumerGroupDescribeResponseGroup) []string {
	var out []string
	for _, m := range g.Members {
		for _, a := range []kmsg.Assignment{m.Assignment, m.TargetAssignment} {
			for _, tp := range a.TopicPartitions {
				out = append(out, tp.Topic)
			}
		}
	}
	return out
}
