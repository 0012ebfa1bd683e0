package authz

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// describedTopicsRefused is Kafka's message for a consumer group whose
// members are assigned a topic the principal may not DESCRIBE.
const describedTopicsRefused = "The group has described topic(s) that the client is not authorized to describe."

// consumerGroupHeartbeat: READ on the group, then DESCRIBE on every
// subscribed topic name; any refused topic answers TOPIC_AUTHORIZATION_FAILED
// alone, without naming the topics (Kafka 4.4 KafkaApis). The heartbeat
// reaches the coordinator with the topics the principal may DESCRIBE
// (DescribableTopics): the regular expressions it resolves keep only
// those, as Kafka's coordinator filters regex matches with the
// heartbeat's authorization context.
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
	describable, err := c.describableFilter()
	if err != nil {
		return nil, err
	}
	return c.innerWith(context.WithValue(c.ctx, describableKey{}, describable), b)
}

type describableKey struct{}

// DescribableTopics is the DESCRIBE filter the Coordinator attached to
// the context of a ConsumerGroupHeartbeat it let through (nil otherwise:
// no authorizer, every topic).
func DescribableTopics(ctx context.Context) func(topic string) bool {
	f, _ := ctx.Value(describableKey{}).(func(string) bool)
	return f
}

// topicLists keeps, per session, the topics its principal may DESCRIBE,
// for at most Config.TTL.
type topicLists struct {
	mu    sync.Mutex
	m     map[listKey]topicList
	swept time.Time
}

// listKey is who: a re-authentication starts a new list.
type listKey = who

type topicList struct {
	names map[string]bool
	at    time.Time
}

// describableFilter is the DESCRIBE filter for the heartbeat's regular
// expressions: evaluated in memory on a Local authorizer (the embedded data
// plane has no authorizer to list topics with), else the cluster's list.
func (c *check) describableFilter() (func(string) bool, error) {
	if l := c.a.cfg.Local; l != nil {
		principal, host := localWho(c.req)
		return func(t string) bool {
			return bool(l.Evaluator.Evaluate(principal, host, opDescribe, kmsg.ACLResourceTypeTopic, t))
		}, nil
	}
	names, err := c.describableTopics()
	if err != nil {
		return nil, err
	}
	return func(t string) bool { return names[t] }, nil
}

// describableTopics lists the topics the session's principal may
// DESCRIBE: Kafka answers a Metadata request for all topics with exactly
// those.
func (c *check) describableTopics() (map[string]bool, error) {
	l, key, now := c.a.topics, whoOf(c.req), c.a.cfg.Now()
	ttl := c.a.cfg.TTL
	l.mu.Lock()
	e, ok := l.m[key]
	l.mu.Unlock()
	if ok && now.Sub(e.at) < ttl {
		return e.names, nil
	}
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	req.Topics, req.AllowAutoTopicCreation = nil, false
	resp, err := c.req.Session.Ask(c.ctx, req)
	if err != nil {
		return nil, err
	}
	mr, ok := resp.(*kmsg.MetadataResponse)
	if !ok {
		return nil, fmt.Errorf("the cluster answered Metadata with %T", resp)
	}
	names := map[string]bool{}
	for _, t := range mr.Topics {
		if t.ErrorCode == 0 && t.Topic != nil {
			names[*t.Topic] = true
		}
	}
	if ttl > 0 {
		l.mu.Lock()
		if now.Sub(l.swept) >= ttl {
			for k, old := range l.m {
				if now.Sub(old.at) >= ttl {
					delete(l.m, k)
				}
			}
			l.swept = now
		}
		l.m[key] = topicList{names, now}
		l.mu.Unlock()
	}
	return names, nil
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
