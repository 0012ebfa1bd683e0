package core

import "github.com/coordhost/coordhost/core/records"

// Streams-group records (types 17 and 19–23) are defined and encoded in
// package records (records/streams.go); this file registers how core
// applies each of them (streams_replay.go).

func init() {
	registerApplier(records.RecStreamsGroupMetadata, applyStreamsGroupMetadata)
	registerApplier(records.RecStreamsGroupMemberMetadata, applyStreamsGroupMemberMetadata)
	registerApplier(records.RecStreamsGroupTargetAssignmentMetadata, applyStreamsGroupTargetAssignmentMetadata)
	registerApplier(records.RecStreamsGroupTargetAssignmentMember, applyStreamsGroupTargetAssignmentMember)
	registerApplier(records.RecStreamsGroupCurrentMemberAssignment, applyStreamsGroupCurrentMemberAssignment)
	registerApplier(records.RecStreamsGroupTopology, applyStreamsGroupTopology)
}
