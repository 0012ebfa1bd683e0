package core

import "strings"

// GroupKind says which protocol a group speaks. A group id maps to exactly
// one group of one kind; online migration converts a group from
// one kind to the other by writing the old kind's tombstones and the new
// kind's records.
type GroupKind int8

// Group kinds.
const (
	// GroupKindStreams is a KIP-1071 streams group (streams_*.go).
	GroupKindStreams GroupKind = 1
	// GroupKindClassic is a classic JoinGroup/SyncGroup group (classic*.go).
	GroupKindClassic GroupKind = 2
	// GroupKindConsumer is a KIP-848 consumer group (consumer_*.go).
	GroupKindConsumer GroupKind = 3
)

// String names the kind as ListGroups spells group types.
func (k GroupKind) String() string {
	switch k {
	case GroupKindStreams:
		return "streams"
	case GroupKindClassic:
		return "classic"
	case GroupKindConsumer:
		return "consumer"
	}
	return "unknown"
}

// Group is one group held by the Coordinator. Each kind implements it in its
// own files; the Coordinator only needs these methods to hold, list and dump
// groups.
type Group interface {
	// ID is the group id.
	ID() string
	// Kind is the protocol the group speaks.
	Kind() GroupKind
	// StateName is the group state as DescribeGroups/ListGroups spell it.
	StateName() string
	// IsEmpty reports whether the group has no members.
	IsEmpty() bool
	// dumpDurable writes the group's durable state (what its records
	// define, and what is derived from them) canonically, so that replaying
	// the log into a fresh Coordinator yields an identical dump.
	dumpDurable(b *strings.Builder)
}
