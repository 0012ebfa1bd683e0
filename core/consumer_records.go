package core

// Consumer-group records (types 3–8 and 16) are defined and encoded in
// package records (records/consumer.go); this file registers how core
// applies each of them (consumer_replay.go, consumer_regex.go).

func init() {
	registerApplier(RecConsumerGroupMetadata, applyConsumerGroupMetadata)
	// Type 4 is superseded by the metadata hash: decoded, ignored on replay.
	registerApplier(RecConsumerGroupPartitionMetadata, func(*Coordinator, Record) error { return nil })
	registerApplier(RecConsumerGroupMemberMetadata, applyConsumerGroupMemberMetadata)
	registerApplier(RecConsumerGroupTargetAssignmentMetadata, applyConsumerGroupTargetAssignmentMetadata)
	registerApplier(RecConsumerGroupTargetAssignmentMember, applyConsumerGroupTargetAssignmentMember)
	registerApplier(RecConsumerGroupCurrentMemberAssignment, applyConsumerGroupCurrentMemberAssignment)
	registerApplier(RecConsumerGroupRegularExpression, applyConsumerGroupRegularExpression)
}
