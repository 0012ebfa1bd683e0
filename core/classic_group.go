package core

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Classic groups (JoinGroup/SyncGroup protocol) with Apache Kafka 4.4's
// semantics: the classic path of GroupMetadataManager and ClassicGroup.
//
// Like Kafka, a classic group keeps most of its life in memory: members
// joining, parked JoinGroup and SyncGroup requests, pending members and the
// state machine are not persisted. Only the GroupMetadata record (type 2)
// is: it is written when a generation's assignment is stored (the leader's
// SyncGroup), when the group becomes Empty, when a static member is
// replaced in a Stable group, and when a new group is created. Replaying
// the log rebuilds the last written generation (Empty or Stable), and
// Loaded schedules a heartbeat expiration for every loaded member.
//
// Rollback: every entry point that touches a classic group first saves a
// copy of it (snapshotClassic), so a failed append restores the group as
// it was at the last Commit, like Kafka's timeline snapshots. Requests
// parked in the failed batch are reported in Output.Failed.

// classicState is the state of a classic group.
type classicState int8

// Classic group states (ClassicGroupState).
const (
	classicEmpty classicState = iota
	classicPreparingRebalance
	classicCompletingRebalance
	classicStable
	classicDead
)

func (s classicState) String() string {
	return [...]string{"Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"}[s]
}

// validPrevious holds ClassicGroupState's allowed transitions.
var validPrevious = map[classicState][]classicState{
	classicEmpty:               {classicPreparingRebalance},
	classicPreparingRebalance:  {classicStable, classicCompletingRebalance, classicEmpty},
	classicCompletingRebalance: {classicPreparingRebalance},
	classicStable:              {classicCompletingRebalance},
	classicDead:                {classicStable, classicPreparingRebalance, classicCompletingRebalance, classicEmpty, classicDead},
}

// classicProtocol is one (name, metadata) pair a member supports.
type classicProtocol struct {
	name     string
	metadata []byte
}

// parked is a request whose response is withheld until the group moves on.
type parked struct {
	waiting bool
	req     RequestID
	version int16
}

// classicMember is one member of a classic group (ClassicGroupMember).
type classicMember struct {
	id                 string
	instanceID         *string
	clientID           string
	clientHost         string
	rebalanceTimeoutMs int32
	sessionTimeoutMs   int32
	protocolType       string
	protocols          []classicProtocol
	assignment         []byte
	join, sync         parked
	isNew              bool
}

func (m *classicMember) isStatic() bool { return m.instanceID != nil }

func (m *classicMember) metadata(protocol string) []byte {
	for _, p := range m.protocols {
		if p.name == protocol {
			return p.metadata
		}
	}
	return nil
}

// matches reports whether the member's protocols equal ps (names, metadata
// and order), as ClassicGroupMember.matches does.
func (m *classicMember) matches(ps []classicProtocol) bool {
	if len(ps) != len(m.protocols) {
		return false
	}
	for i := range ps {
		if ps[i].name != m.protocols[i].name || !bytes.Equal(ps[i].metadata, m.protocols[i].metadata) {
			return false
		}
	}
	return true
}

// hasSatisfiedHeartbeat: new members can expire while awaiting join; others
// awaiting join or sync satisfy their heartbeats.
func (m *classicMember) hasSatisfiedHeartbeat() bool {
	if m.isNew {
		return false
	}
	return m.join.waiting || m.sync.waiting
}

// classicGroup is a classic group (ClassicGroup). Member order is insertion
// order; it decides leader succession where Kafka uses its map's order.
type classicGroup struct {
	id            string
	state         classicState
	previousState classicState
	stateTime     int64 // -1: unset
	generation    int32
	protocolType  *string
	protocolName  *string
	leader        *string
	members       map[string]*classicMember
	order         []string
	static        map[string]string // instance id -> member id
	pendingJoin   map[string]bool
	pendingSync   map[string]bool
	newMemberAdd  bool
	// initial rebalance delay bookkeeping (tryCompleteInitialRebalanceElseSchedule).
	initialDelayMs, initialRemainingMs int32
	// durable is the last GroupMetadata value written or replayed.
	durable *records.GroupMetadataValue
	// released holds the parked requests answered in the batches not
	// committed, with the batch that answered them; clones share it, so a
	// rollback can drop them from the restored state (the host has failed
	// them already).
	released map[RequestID]uint64
}

func newClassicGroup(id string) *classicGroup {
	return &classicGroup{id: id, stateTime: -1, members: map[string]*classicMember{}, static: map[string]string{},
		pendingJoin: map[string]bool{}, pendingSync: map[string]bool{}, released: map[RequestID]uint64{}}
}

// ID implements Group.
func (g *classicGroup) ID() string { return g.id }

// Kind implements Group.
func (g *classicGroup) Kind() GroupKind { return GroupKindClassic }

// StateName implements Group.
func (g *classicGroup) StateName() string { return g.state.String() }

// IsEmpty implements Group: Kafka's ClassicGroup.isEmpty is the Empty state.
func (g *classicGroup) IsEmpty() bool { return g.state == classicEmpty }

// durableStateName is the state a replay of the group's records yields:
// Stable with members, else Empty.
func (g *classicGroup) durableStateName() string {
	if g.durable != nil && len(g.durable.Members) > 0 {
		return classicStable.String()
	}
	return classicEmpty.String()
}

// dumpDurable writes what the last GroupMetadata record defines.
func (g *classicGroup) dumpDurable(b *strings.Builder) {
	v := g.durable
	if v == nil {
		b.WriteString("  (no record)\n")
		return
	}
	fmt.Fprintf(b, "  generation=%d protocol-type=%q protocol=%s leader=%s ts=%d\n", v.Generation, v.ProtocolType,
		strOrNull(v.Protocol), strOrNull(v.Leader), v.CurrentStateTimestamp)
	for _, m := range v.Members {
		fmt.Fprintf(b, "  member %q instance=%s client=%q/%q rto=%d session=%d subscription=%x assignment=%x\n", m.MemberID,
			strOrNull(m.GroupInstanceID), m.ClientID, m.ClientHost, m.RebalanceTimeout, m.SessionTimeout, m.Subscription, m.Assignment)
	}
}

func strOrNull(s *string) string {
	if s == nil {
		return "null"
	}
	return fmt.Sprintf("%q", *s)
}

// clone deep-copies the group for rollback.
func (g *classicGroup) clone() *classicGroup {
	n := *g
	n.members = make(map[string]*classicMember, len(g.members))
	for id, m := range g.members {
		mc := *m
		n.members[id] = &mc
	}
	n.order = append([]string(nil), g.order...)
	n.static = classicCopyMap(g.static)
	n.pendingJoin = classicCopyMap(g.pendingJoin)
	n.pendingSync = classicCopyMap(g.pendingSync)
	return &n
}

func classicCopyMap[K comparable, V any](m map[K]V) map[K]V {
	out := make(map[K]V, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// snapshotClassic saves g so a rollback restores it in place. Requests
// answered in the failed batch are not parked again: the host failed them.
func (c *Coordinator) snapshotClassic(g *classicGroup) {
	if c.replaying {
		return
	}
	for id, batch := range g.released {
		if batch < c.committed {
			delete(g.released, id) // its batch was committed or rolled back
		}
	}
	saved := g.clone()
	c.onUndo(func() {
		released := g.released
		*g = *saved
		for _, m := range g.members {
			if _, ok := released[m.join.req]; m.join.waiting && ok {
				m.join = parked{}
			}
			if _, ok := released[m.sync.req]; m.sync.waiting && ok {
				m.sync = parked{}
			}
		}
	})
}

func (g *classicGroup) transitionTo(s classicState, now int64) {
	ok := false
	for _, p := range validPrevious[s] {
		ok = ok || p == g.state
	}
	if !ok {
		panic(fmt.Sprintf("core: classic group %s: invalid transition %s -> %s", g.id, g.state, s))
	}
	g.previousState, g.state, g.stateTime = g.state, s, now
}

func (g *classicGroup) canRebalance() bool {
	for _, p := range validPrevious[classicPreparingRebalance] {
		if p == g.state {
			return true
		}
	}
	return false
}

func (g *classicGroup) isLeader(id string) bool { return g.leader != nil && *g.leader == id }

func (g *classicGroup) numAwaitingJoin() int {
	n := 0
	for _, m := range g.members {
		if m.join.waiting {
			n++
		}
	}
	return n
}

func (g *classicGroup) hasAllMembersJoined() bool {
	return len(g.members) == g.numAwaitingJoin() && len(g.pendingJoin) == 0
}

func (g *classicGroup) rebalanceTimeoutMs() int32 {
	var max int32
	for _, m := range g.members {
		if m.rebalanceTimeoutMs > max {
			max = m.rebalanceTimeoutMs
		}
	}
	return max
}

// add adds m (ClassicGroup.add): the first member sets the protocol type
// and becomes leader if there is none.
func (g *classicGroup) add(m *classicMember) {
	if m.instanceID != nil {
		g.static[*m.instanceID] = m.id
	}
	if len(g.members) == 0 {
		pt := m.protocolType
		g.protocolType = &pt
	}
	if g.leader == nil {
		id := m.id
		g.leader = &id
	}
	g.members[m.id] = m
	g.order = append(g.order, m.id)
	delete(g.pendingJoin, m.id)
}

// remove removes a member or pending member; a removed leader is succeeded
// by the first remaining member.
func (g *classicGroup) remove(id string) {
	if m, ok := g.members[id]; ok {
		delete(g.members, id)
		for i, x := range g.order {
			if x == id {
				g.order = append(g.order[:i:i], g.order[i+1:]...)
				break
			}
		}
		if m.instanceID != nil {
			delete(g.static, *m.instanceID)
		}
	}
	if g.isLeader(id) {
		g.leader = nil
		if len(g.order) > 0 {
			l := g.order[0]
			g.leader = &l
		}
	}
	delete(g.pendingJoin, id)
	delete(g.pendingSync, id)
}

func (g *classicGroup) allMembers() []*classicMember {
	out := make([]*classicMember, len(g.order))
	for i, id := range g.order {
		out[i] = g.members[id]
	}
	return out
}

// supportsProtocols (ClassicGroup.supportsProtocols).
func (g *classicGroup) supportsProtocols(protocolType string, ps []classicProtocol) bool {
	if g.state == classicEmpty {
		return protocolType != "" && len(ps) > 0
	}
	if g.protocolType == nil || *g.protocolType != protocolType {
		return false
	}
	for _, p := range ps {
		if g.supportCount(p.name) == len(g.members) {
			return true
		}
	}
	return false
}

func (g *classicGroup) supportCount(name string) int {
	n := 0
	for _, m := range g.members {
		for _, p := range m.protocols {
			if p.name == name {
				n++
				break
			}
		}
	}
	return n
}

// selectProtocol lets each member vote for its first protocol supported by
// every member; most votes wins, ties go to the earliest-voting member's.
func (g *classicGroup) selectProtocol() string {
	votes := map[string]int{}
	var order []string
	for _, m := range g.allMembers() {
		for _, p := range m.protocols {
			if g.supportCount(p.name) == len(g.members) {
				if votes[p.name] == 0 {
					order = append(order, p.name)
				}
				votes[p.name]++
				break
			}
		}
	}
	best := ""
	for _, name := range order {
		if best == "" || votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

// maybeElectNewJoinedLeader keeps a leader that rejoined, or elects the
// first member that did; false if none rejoined.
func (g *classicGroup) maybeElectNewJoinedLeader() bool {
	if g.leader == nil {
		return false
	}
	if g.members[*g.leader].join.waiting {
		return true
	}
	for _, m := range g.allMembers() {
		if m.join.waiting {
			id := m.id
			g.leader = &id
			return true
		}
	}
	return false
}

// validateMember (ClassicGroup.validateMember).
func (g *classicGroup) validateMember(memberID string, instanceID *string) int16 {
	if instanceID != nil {
		existing, ok := g.static[*instanceID]
		if !ok {
			return errUnknownMemberID
		}
		if existing != memberID {
			return errFencedInstanceID
		}
	}
	if _, ok := g.members[memberID]; !ok {
		return errUnknownMemberID
	}
	return 0
}

// initNextGeneration bumps the generation and moves to CompletingRebalance
// (with a newly selected protocol) or Empty.
func (g *classicGroup) initNextGeneration(now int64) {
	g.generation++
	if len(g.members) > 0 {
		p := g.selectProtocol()
		g.protocolName = &p
		g.transitionTo(classicCompletingRebalance, now)
	} else {
		g.protocolName = nil
		g.transitionTo(classicEmpty, now)
	}
	g.pendingSync = map[string]bool{}
}

// Error codes used by classic groups.
var (
	errCoordinatorNotAvailable = kerr.CoordinatorNotAvailable.Code
	errIllegalGeneration       = kerr.IllegalGeneration.Code
	errInconsistentProtocol    = kerr.InconsistentGroupProtocol.Code
	errInvalidGroupID          = kerr.InvalidGroupID.Code
	errUnknownMemberID         = kerr.UnknownMemberID.Code
	errInvalidSessionTimeout   = kerr.InvalidSessionTimeout.Code
	errRebalanceInProgress     = kerr.RebalanceInProgress.Code
	errGroupIDNotFound         = kerr.GroupIDNotFound.Code
	errNonEmptyGroup           = kerr.NonEmptyGroup.Code
	errMemberIDRequired        = kerr.MemberIDRequired.Code
	errFencedInstanceID        = kerr.FencedInstanceID.Code
	errGroupMaxSizeReached     = kerr.GroupMaxSizeReached.Code
	errStaleMemberEpoch        = kerr.StaleMemberEpoch.Code
)
