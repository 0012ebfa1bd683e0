package core

import (
	"fmt"
	"strings"
)

// Events are core's account of why it changed something: every batch of
// records an entry point returns comes with at least one Event naming the
// group (and member) it concerns and the reason, so a host logs and shows
// rebalances without reverse-engineering them from record types. Events
// may also report changes that write no record (a classic rebalance
// starting, a probe). They are part of the batch: a host that rolls the
// batch back drops its events with its records.

// EventKind says what happened.
type EventKind string

// Event kinds.
const (
	// EventGroupCreated: a new group was created by its first join.
	EventGroupCreated EventKind = "group-created"
	// EventGroupDeleted: an empty group was deleted (DeleteGroups).
	EventGroupDeleted EventKind = "group-deleted"
	// EventGroupConverted: the group changed protocol; Reason says which
	// way and whether it was empty (offline) or kept its members (online).
	EventGroupConverted EventKind = "group-converted"
	// EventMemberJoined: a member joined (Reason: ReasonStaticReplacement
	// when it took over a static member's place).
	EventMemberJoined EventKind = "member-joined"
	// EventMemberUpdated: a member's metadata (topology epoch, process,
	// rack, endpoint, tags, timeouts, client) changed.
	EventMemberUpdated EventKind = "member-updated"
	// EventMemberLeft: a member left on its own (ReasonLeave,
	// ReasonStaticLeave).
	EventMemberLeft EventKind = "member-left"
	// EventMemberFenced: the coordinator removed a member (Reason says
	// why: a timeout, a static replacement, its process rejoining).
	EventMemberFenced EventKind = "member-fenced"
	// EventMemberReconciled: a member's current assignment moved toward
	// the target (MemberEpoch is its new epoch).
	EventMemberReconciled EventKind = "member-reconciled"
	// EventTopologyStored: a streams group stored its topology (Epoch is
	// the topology epoch).
	EventTopologyStored EventKind = "topology-stored"
	// EventEpochBumped: a streams group's epoch was bumped, so a new target
	// assignment is due; Reason says what changed. Epoch is the new epoch.
	EventEpochBumped EventKind = "group-epoch-bumped"
	// EventTargetAssigned: a new target assignment was installed at Epoch
	// (Reason: the assignor's result, a probe, or a topology that is not
	// ready yet).
	EventTargetAssigned EventKind = "target-assigned"
	// EventTargetPart: part of the member targets of an assignor result
	// for Epoch was written (a large group's result is written over
	// several steps); EventTargetAssigned follows the last part.
	EventTargetPart EventKind = "target-part"
	// EventAssignorResultDiscarded: an assignor result was not applied
	// (Reason: ReasonStaleEpoch or ReasonAssignorError); Epoch is the
	// run's epoch.
	EventAssignorResultDiscarded EventKind = "assignor-result-discarded"
	// EventProbe: a probing rebalance started (an assignor run at the
	// current epoch) or the probing policy was asked (Reason: the check's
	// reason).
	EventProbe EventKind = "probe"
	// EventWarmupPromoted: a member's caught-up warm-up tasks became its
	// active tasks in the new target.
	EventWarmupPromoted EventKind = "warmup-promoted"
	// EventRebalanceStarted: a classic group started a rebalance (join
	// phase); Epoch is its current generation.
	EventRebalanceStarted EventKind = "rebalance-started"
	// EventGenerationStored: a classic group's generation was stored
	// (Reason: its leader's assignment, no members left, a static
	// replacement); Epoch is the generation.
	EventGenerationStored EventKind = "generation-stored"
	// EventRegexResolved: a consumer group's subscribed regular
	// expressions were resolved against the topic metadata (an epoch bump
	// follows when a regex's topics changed).
	EventRegexResolved EventKind = "regex-resolved"
)

// EventReason says why.
type EventReason string

// Event reasons.
const (
	ReasonLeave             EventReason = "leave"
	ReasonStaticLeave       EventReason = "static-leave"
	ReasonSessionTimeout    EventReason = "session-timeout"
	ReasonRebalanceTimeout  EventReason = "rebalance-timeout"
	ReasonJoinTimeout       EventReason = "join-timeout" // a classic member did not rejoin or sync in time
	ReasonStaticReplacement EventReason = "static-replacement"
	ReasonProcessReplaced   EventReason = "process-replaced" // a member of the same process joined with the other protocol
	ReasonMemberJoined      EventReason = "member-joined"
	ReasonMemberLeft        EventReason = "member-left"
	ReasonMemberUpdated     EventReason = "member-updated"
	ReasonTopologyChanged   EventReason = "topology-changed"
	ReasonMetadataChanged   EventReason = "metadata-changed"
	ReasonConfigChanged     EventReason = "config-changed"
	ReasonProbe             EventReason = "probe"
	ReasonAssignor          EventReason = "assignor"
	ReasonTopologyNotReady  EventReason = "topology-not-ready"
	ReasonStaleEpoch        EventReason = "stale-epoch"
	ReasonAssignorError     EventReason = "assignor-error"
	ReasonLeaderAssignment  EventReason = "leader-assignment"
	ReasonEmpty             EventReason = "empty"
	ReasonOfflineToStreams  EventReason = "offline-classic-to-streams"
	ReasonOfflineToClassic  EventReason = "offline-streams-to-classic"
	ReasonOnlineToStreams   EventReason = "online-classic-to-streams"
	ReasonOnlineToClassic   EventReason = "online-streams-to-classic"
	ReasonOfflineToConsumer EventReason = "offline-to-consumer" // an empty group of another kind became a consumer group
	ReasonOnlineToConsumer  EventReason = "online-classic-to-consumer"
	ReasonConsumerToClassic EventReason = "online-consumer-to-classic"
)

// Event is one domain change core made, for the host's logs, metrics and
// group history.
type Event struct {
	Kind  EventKind
	Group string
	// Member is the member concerned; "" for group-level events.
	Member string
	// Reason says why; "" when Kind says it all.
	Reason EventReason
	// Epoch is the group's epoch (classic groups: the generation) after a
	// group event, when a member event happened; for target events the
	// assignment epoch, for EventTopologyStored the topology epoch.
	Epoch int32
	// MemberEpoch is the member's epoch after a member event (-1 once it
	// left or was fenced, -2 after a static leave).
	MemberEpoch int32
	// Count is how many tasks an EventWarmupPromoted promoted.
	Count int
}

// MemberLevel reports whether the event concerns one member rather than
// the group.
func (e Event) MemberLevel() bool { return e.Member != "" }

// String renders the event on one line: kind, group[/member], the reason,
// then the member's epoch (member events) or the group's (group events).
func (e Event) String() string {
	var b strings.Builder
	b.WriteString(string(e.Kind))
	b.WriteByte(' ')
	b.WriteString(e.Group)
	if e.Member != "" {
		b.WriteByte('/')
		b.WriteString(e.Member)
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, " reason=%s", e.Reason)
	}
	if e.Member != "" {
		fmt.Fprintf(&b, " member-epoch=%d", e.MemberEpoch)
	} else {
		fmt.Fprintf(&b, " epoch=%d", e.Epoch)
	}
	if e.Count != 0 {
		fmt.Fprintf(&b, " tasks=%d", e.Count)
	}
	return b.String()
}

// emit adds e to the Output being built.
func (c *Coordinator) emit(e Event) {
	c.out.Events = append(c.out.Events, e)
}

// emitGroup adds a group-level event.
func (c *Coordinator) emitGroup(kind EventKind, group string, reason EventReason, epoch int32) {
	c.emit(Event{Kind: kind, Group: group, Reason: reason, Epoch: epoch})
}

// emitEpochBumped reports the bump bumpGroupEpoch just wrote.
func (c *Coordinator) emitEpochBumped(g *streamsGroup, reason EventReason) {
	c.emitGroup(EventEpochBumped, g.id, reason, g.groupEpoch)
}

// emitReconciled reports a streams member's new current assignment.
func (c *Coordinator) emitReconciled(g *streamsGroup, m *streamsMember) {
	c.emit(Event{Kind: EventMemberReconciled, Group: g.id, Member: m.id, Epoch: g.groupEpoch, MemberEpoch: m.epoch})
}

// emitProbeTarget reports a probe whose result changes the target: the
// warm-ups it promotes, then the epoch bump and the target it installs
// (both at the next epoch; call before writing them).
func (c *Coordinator) emitProbeTarget(g *streamsGroup, targets map[string]tasksTuple) {
	for _, id := range g.sortedMemberIDs() {
		old, next := g.target[id], targets[id]
		n := 0
		for t := range next.active {
			if old.warmup.has(t) {
				n++
			}
		}
		if n > 0 {
			c.emit(Event{Kind: EventWarmupPromoted, Group: g.id, Member: id, Reason: ReasonProbe,
				Epoch: g.groupEpoch + 1, MemberEpoch: g.members[id].epoch, Count: n})
		}
	}
	c.emitGroup(EventEpochBumped, g.id, ReasonProbe, g.groupEpoch+1)
	c.emitGroup(EventTargetAssigned, g.id, ReasonProbe, g.groupEpoch+1)
}

// emitClassicFenced reports a classic member the coordinator removed.
func (c *Coordinator) emitClassicFenced(g *classicGroup, member string, reason EventReason) {
	c.emit(Event{Kind: EventMemberFenced, Group: g.id, Member: member, Reason: reason, Epoch: g.generation, MemberEpoch: leaveEpoch})
}
