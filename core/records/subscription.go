package records

import "fmt"

// ParseConsumerSubscriptionTopics reads the topic list of a consumer
// protocol subscription (JoinGroup protocol metadata of protocol type
// "consumer", the Subscription bytes of a GroupMetadataMember): an int16
// version, then the version-0 prefix every version shares, whose first
// field is the topics array. Like Kafka, only that prefix is read, so
// future versions parse too. It never panics.
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
