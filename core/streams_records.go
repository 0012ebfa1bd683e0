package core

// Streams-group records (types 17 and 19–23) are defined and encoded in
// package records (records/streams.go); this file registers how core
// applies each of them (streams_replay.go).

func init() {
	registerApplier(RecStreamsGroupMetadata, applyStreamsGroupMetadata)
	registerApplier(RecStreamsGroupMemberMetadata, applyStreamsGroupMemberMetadata)
	registerApplier(RecStreamsGroupTargetAssignmentMetadata, applyStreamsGroupTargetAssignmentMetadata)
	registerApplier(RecStreamsGroupTargetAssignmentMember, applyStreamsGroupTargetAssignmentMember)
	registerApplier(RecStreamsGroupCurrentMemberAssignment, applyStreamsGroupCurrentMemberAssignment)
	registerApplier(RecStreamsGroupTopology, applyStreamsGroupTopology)
}
