package core

import "github.com/coordhost/coordhost/core/records"

// Consumer-group records (types 3–8 and 16) are defined and encoded in
// package records (records/consumer.go); this file registers how core
// applies each of them (consumer_replay.go, consumer_regex.go).

func init() {
	registerApplier(records.RecConsumerGroupMetadata, applyConsumerGroupMetadata)
	// Type 4 is superseded by the metadata hash: decoded, ignored on replay.
	registerApplier(records.RecConsumerGroupPartitionMetadata, func(*Coordinator, records.Record) error { return nil })
	registerApplier(records.RecConsumerGroupMemberMetadata, applyConsumerGroupMemberMetadata)
	registerApplier(records.RecConsumerGroupTargetAssignmentMetadata, applyConsumerGroupTargetAssignmentMetadata)
	registerApplier(records.RecConsumerGroupTargetAssignmentMember, applyConsumerGroupTargetAssignmentMember)
	registerApplier(records.RecConsumerGroupCurrentMemberAssignment, applyConsumerGroupCurrentMemberAssignment)
	registerApplier(records.RecConsumerGroupRegularExpression, applyConsumerGroupRegularExpression)
}
