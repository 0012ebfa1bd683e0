package core

import (
	"errors"

	"github.com/coordhost/coordhost/core/records"
)

// consumerProtocolType is the protocol type of Kafka consumers.
const consumerProtocolType = "consumer"

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
		ts, err := records.ParseConsumerSubscriptionTopics(m.metadata(*g.protocolName))
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
