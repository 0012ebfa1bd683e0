package abi

// TopicID is a Kafka topic id (a UUID), most significant byte first.
type TopicID [16]byte

// Topic is one entry of the topic table of a PartitionAssignRequest: what
// Kafka's SubscribedTopicDescriber answers for a subscribed topic.
type Topic struct {
	ID         TopicID
	Name       string
	Partitions int32
	// PartitionRacks is empty (racks unknown) or holds, per partition, the
	// ascending indices into PartitionAssignRequest.Racks of the racks of
	// its replicas.
	PartitionRacks [][]int32
}

// TopicPartitions is a member's partitions of one topic: Topic indexes the
// request's topic table; Partitions is strictly ascending and not empty.
type TopicPartitions struct {
	Topic      int32
	Partitions []int32
}

// ConsumerMember is one member of a consumer group as Kafka's server-side
// assignor sees it (its MemberSubscription and current assignment).
type ConsumerMember struct {
	ID         string
	InstanceID string // empty: none
	Rack       string // empty: none
	// Subscribed holds the member's subscribed topics as strictly ascending
	// indices into the topic table.
	Subscribed []int32
	// Assigned is the member's current assignment, ascending by topic.
	Assigned []TopicPartitions
}

// PartitionAssignRequest is the input of the partition-assignor operation
// (SPEC.md 5.5): Kafka's GroupSpec and SubscribedTopicDescriber.
type PartitionAssignRequest struct {
	GroupID    string
	GroupEpoch int32
	Seed       uint64
	// Heterogeneous is Kafka's SubscriptionType: false (HOMOGENEOUS) when
	// every member subscribes to the same topics.
	Heterogeneous bool
	Configs       []KV     // keys strictly ascending
	Racks         []string // rack name table, strictly ascending
	Topics        []Topic  // strictly ascending by ID
	Members       []ConsumerMember
	// MemberOrder is the order in which Kafka's coordinator would hand the
	// members to its assignor (the iteration order of the group's member
	// map), as member indices: a permutation of 0..len(Members)-1. Kafka's
	// assignors break ties by it. Nil when the host does not send it
	// (request tag 0, SPEC.md 5.5): ascending member id is then Kafka's
	// own test harness order.
	MemberOrder []int32
}

// PartitionAssignResponse is the output of the partition-assignor operation
// (SPEC.md 5.6): Members[i] is the target assignment of request member i.
type PartitionAssignResponse struct {
	Members [][]TopicPartitions
}

// NumPartitions returns the total partition count of the request's topics.
func (r *PartitionAssignRequest) NumPartitions() int64 {
	var n int64
	for _, t := range r.Topics {
		n += int64(t.Partitions)
	}
	return n
}
