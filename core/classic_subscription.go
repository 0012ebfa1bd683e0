package core

import (
	"errors"
	"fmt"
)

// consumerProtocolType is the protocol type of Kafka consumers.
const consumerProtocolType = "consumer"

// ParseConsumerSubscriptionTopics reads the topic list of a consumer
// protocol subscription (JoinGroup protocol metadata of protocol type
// "consumer"): an int16 version, then the version-0 prefix every version
// shares, whose first field is the topics array. Like Kafka, only that
// prefix is read, so future versions parse too. It never panics.
func ParseConsumerSubscriptionTopics(b []byte) ([]string, error) {
	r := &reader{b: b}
	if v := r.int16(); r.err == nil && v < 0 {
		return nil, fmt.Errorf("consumer subscription: bad version %d", v)
	}
	n := r.int32()
	if r.err == nil && (n < 0 || int(n) > len(r.b)/2) {
		return nil, fmt.Errorf("consumer subscription: bad topic count %d", n)
	}
	topics := make([]string, 0, max(n, 0))
	for i := int32(0); i < n && r.err == nil; i++ {
		topics = append(topics, r.classicString())
	}
	if r.err != nil {
		return nil, fmt.Errorf("consumer subscription: %w", r.err)
	}
	return topics, nil
}

var errNoSubscription = errors.New("subscribed topics unknown")

// subscribedTopics is ClassicGroup.computeSubscribedTopics: nil with an
// error when unknown (not a consumer group, or unparsable metadata).
func (g *classicGroup) subscribedTopics() (map[string]bool, error) {
	if deref0(g.protocolType) != consumerProtocolType {
		return nil, errNoSubscription
	}
	out := map[string]bool{}
	if len(g.members) == 0 {
		return out, nil
	}
	if g.protocolName == nil {
		return nil, errNoSubscription
	}
	for _, m := range g.allMembers() {
		ts, err := ParseConsumerSubscriptionTopics(m.metadata(*g.protocolName))
		if err != nil {
			return nil, err
		}
		for _, t := range ts {
			out[t] = true
		}
	}
	return out, nil
}

// isSubscribedToTopic is ClassicGroup.isSubscribedToTopic: when the
// subscription is unknown, a consumer group counts as subscribed.
func (g *classicGroup) isSubscribedToTopic(topic string) bool {
	ts, err := g.subscribedTopics()
	if err != nil {
		return deref0(g.protocolType) == consumerProtocolType
	}
	return ts[topic]
}
