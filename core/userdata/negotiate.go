package userdata

import "fmt"

// Negotiation is the outcome of version negotiation for one classic Streams
// group: the versions every member's AssignmentInfo must carry. It follows
// StreamsPartitionAssignor.assign (Kafka Streams 4.4).
type Negotiation struct {
	// Version is the AssignmentInfo version for every member: the smallest
	// subscription version in the group, never above LatestSupportedVersion.
	Version int32
	// CommonlySupported is the smallest latest-supported version in the
	// group, never above LatestSupportedVersion (UnknownVersion when a v1–2
	// member is present).
	CommonlySupported int32
	// VersionProbing reports that some member sent a future version (above
	// LatestSupportedVersion): it will downgrade and rejoin, and the others
	// must rejoin after it.
	VersionProbing bool
	// Err is non-nil when the group cannot be assigned: a future member next
	// to a member older than EarliestProbeableVersion. Java then sends every
	// member ErrorAssignment(ErrCodeAssignmentError).
	Err error
}

// Negotiate computes the assignment versions for a group from its members'
// decoded subscriptions.
//
// Both minima start at LatestSupportedVersion, so a future member (version
// 12 and up) never raises them: it receives a version-11 assignment with
// commonly supported 11, downgrades to 11 and rejoins. Capping matters: a
// commonly supported version above what a member can use, or an assignment
// version below a member's with a commonly supported version at or above
// it, makes that member rejoin immediately, again and again.
func Negotiate(members []*SubscriptionInfo) Negotiation {
	n := Negotiation{Version: LatestSupportedVersion, CommonlySupported: LatestSupportedVersion}
	future := UnknownVersion
	for _, m := range members {
		n.Version = min(n.Version, m.Version)
		n.CommonlySupported = min(n.CommonlySupported, m.LatestSupportedVersion)
		if m.IsFuture() {
			future = m.Version
		}
	}
	if future != UnknownVersion {
		if n.Version >= EarliestProbeableVersion {
			n.VersionProbing = true
		} else {
			n.Err = fmt.Errorf("future (version probing) subscription v%d next to a pre-Kafka-2.0 subscription v%d", future, n.Version)
		}
	}
	return n
}
