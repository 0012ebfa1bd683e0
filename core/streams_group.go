package core

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/coordhost/coordhost/core/records"
)

// StreamsGroupState is the state of a streams group, derived after every
// change (Kafka's StreamsGroup.StreamsGroupState).
type StreamsGroupState int8

// Streams group states.
const (
	StreamsEmpty       StreamsGroupState = iota // no members
	StreamsNotReady                             // topology missing or not validated against topic metadata
	StreamsAssigning                            // group epoch ahead of assignment epoch
	StreamsReconciling                          // some member not yet at the assignment epoch
	StreamsStable                               // every member reconciled
)

// String is the state as StreamsGroupDescribe spells it.
func (s StreamsGroupState) String() string {
	return [...]string{"Empty", "NotReady", "Assigning", "Reconciling", "Stable"}[s]
}

// memberState is a streams member's reconciliation state (persisted int8).
type memberState int8

const (
	memberStable          memberState = 1
	memberUnrevokedTasks  memberState = 2
	memberUnreleasedTasks memberState = 3
	memberUnknown         memberState = 127
)

func (s memberState) String() string {
	switch s {
	case memberStable:
		return "STABLE"
	case memberUnrevokedTasks:
		return "UNREVOKED_TASKS"
	case memberUnreleasedTasks:
		return "UNRELEASED_TASKS"
	}
	return "UNKNOWN"
}

func memberStateFromInt8(v int8) memberState {
	switch s := memberState(v); s {
	case memberStable, memberUnrevokedTasks, memberUnreleasedTasks:
		return s
	}
	return memberUnknown
}

// streamsMember is one member. Values are immutable once stored in a group:
// updates store a modified copy, which makes undo a pointer swap.
type streamsMember struct {
	id                 string
	epoch, prevEpoch   int32
	state              memberState
	instanceID         *string
	rackID             *string
	clientID           string
	clientHost         string
	rebalanceTimeoutMs int32
	topologyEpoch      int32
	processID          string
	endpoint           *records.Endpoint
	clientTags         []records.KeyValue
	assigned           ownedTasks
	pending            ownedTasks // pending revocation
	// classic is set for a classic (JoinGroup protocol) member of a
	// streams group (online migration, migration_member.go).
	classic *records.ClassicMemberMetadata
}

func newStreamsMember(id string) *streamsMember {
	return &streamsMember{id: id, state: memberStable, rebalanceTimeoutMs: -1, topologyEpoch: -1,
		clientTags: []records.KeyValue{}, assigned: emptyOwned(), pending: emptyOwned()}
}

// storedStreamsMember is newStreamsMember for a member a record creates:
// no task sets (nil reads as empty; a stored member's sets are replaced,
// never written) and no client tags until its records say.
func storedStreamsMember(id string) *streamsMember {
	return &streamsMember{id: id, state: memberStable, rebalanceTimeoutMs: -1, topologyEpoch: -1, clientTags: []records.KeyValue{}}
}

func (m *streamsMember) clone() *streamsMember {
	c := *m
	return &c
}

// streamsSoft is state outside the log: recomputed or re-reported, never
// rolled back (as in Kafka).
type streamsSoft struct {
	configured      *configuredTopology
	metadataRefresh bool
	shutdownBy      string // member that requested application shutdown
	endpointEpoch   int32
	taskOffsets     map[string]memberOffsets
	inflight        *AssignorRun  // last assignor run requested and not answered (or its result not fully written)
	slices          *targetSlices // an assignor result being written in slices
	parked          []parkedHeartbeat
	lastAssignorErr string           // the last failed assignor run, for logs and metrics
	endOffsets      map[TaskID]int64 // host-supplied changelog end offsets (UpdateEndOffsets)
	lastEarlyProbe  string           // caught-up warm-ups that started the last early probe
	probeSeq        uint64           // last ProbeCheck sequence number
	probeCheck      uint64           // ProbeCheck in flight (0: none)
	lastCheckDigest uint64           // assignor input the last ProbeCheck saw
	noopProbeDigest uint64           // assignor input of the last probe that changed nothing
	regroup         *processRegroup  // a restarted process whose members are still joining, or a closing one whose members are still leaving
	lastDeparture   int64            // when a member last left or was fenced, if departed (streams_roll.go)
	departed        bool
}

// streamsGroup is a KIP-1071 streams group.
type streamsGroup struct {
	id                     string
	groupEpoch             int32
	metadataHash           int64
	validatedTopologyEpoch int32
	lastAssignmentConfigs  []records.KeyValue
	storedDescEpoch        int32
	failedDescEpoch        int32
	assignmentEpoch        int32
	assignmentTimestamp    int64
	topology               *records.StreamsGroupTopologyValue
	topoDigest             storedTopologyDigest // of topology, computed on first use
	// metaKey is the group's metadata key boxed once (metadataKey): every
	// epoch bump writes it, a mass expiry once for each fenced member.
	metaKey       records.RecordKey
	members       map[string]*streamsMember
	staticMembers map[string]string // instance id -> member id
	target        map[string]tasksTuple
	warmupTargets map[string]struct{} // members whose target holds a warm-up (setTarget keeps it)

	// Ownership indexes by process id, from assigned ∪ pending revocation.
	activeOwner   map[TaskID]string
	standbyOwners ownerIndex
	warmupOwners  ownerIndex
	state         StreamsGroupState
	soft          streamsSoft
	configMemo    configuredMemo
	// classicMembers counts the members of the classic protocol: a
	// streams-protocol join fences the silent ones of its process, and
	// without any it need not look at every member.
	classicMembers int
}

func newStreamsGroup(id string) *streamsGroup {
	g := &streamsGroup{
		id: id, groupEpoch: 1, assignmentEpoch: 1, validatedTopologyEpoch: -1,
		storedDescEpoch: -1, failedDescEpoch: -1,
		members:     map[string]*streamsMember{},
		target:      map[string]tasksTuple{},
		activeOwner: map[TaskID]string{}, standbyOwners: ownerIndex{},
		// warmupTargets and warmupOwners are made on first use: most
		// groups never hold a warm-up. So are staticMembers (most members
		// have no instance id) and soft.taskOffsets (a nil map reads as
		// empty).
	}
	g.updateState()
	return g
}

// ID implements Group.
func (g *streamsGroup) ID() string { return g.id }

// Kind implements Group.
func (g *streamsGroup) Kind() GroupKind { return GroupKindStreams }

// StateName implements Group.
func (g *streamsGroup) StateName() string { return g.state.String() }

// IsEmpty implements Group.
func (g *streamsGroup) IsEmpty() bool { return len(g.members) == 0 }

// updateState derives the group state (Kafka's order of checks).
func (g *streamsGroup) updateState() {
	switch {
	case len(g.members) == 0:
		g.state = StreamsEmpty
		g.soft.shutdownBy = ""
	case g.topology == nil || g.topology.Epoch != g.validatedTopologyEpoch:
		g.state = StreamsNotReady
	case g.groupEpoch > g.assignmentEpoch:
		g.state = StreamsAssigning
	default:
		g.state = StreamsStable
		for _, m := range g.members {
			if m.state != memberStable || m.epoch != g.assignmentEpoch {
				g.state = StreamsReconciling
				break
			}
		}
	}
}

// putMember stores m (replacing the member with its id) and maintains the
// static-member map and the ownership indexes. It is undoable.
func (c *Coordinator) putMember(g *streamsGroup, m *streamsMember) {
	old := g.members[m.id]
	g.swapMember(old, m)
	if !c.replaying { // a replay never rolls back
		c.undo = append(c.undo, undoEntry{g: g, what: undoMember, m: m, old: old})
	}
}

// memberToChange returns the member a record on id changes, to be stored
// with putMember: a new member, a copy of the stored one, or while
// replaying the stored one itself, taken out of the group first (no undo
// needs its old fields; the copy would be an allocation a record).
func (c *Coordinator) memberToChange(g *streamsGroup, id string) *streamsMember {
	old := g.members[id]
	switch {
	case old == nil:
		return storedStreamsMember(id)
	case c.replaying:
		g.swapMember(old, nil)
		return old
	}
	return old.clone()
}

// putMemberMetadata stores m, old with only fields outside the ownership
// indexes changed (same process id and task sets: a member metadata
// record), so the indexes stay as they are. oldInstance is old's instance
// id before the change (m may be old itself while replaying). Undoable.
func (c *Coordinator) putMemberMetadata(g *streamsGroup, old *streamsMember, oldInstance *string, m *streamsMember) {
	g.moveStatic(m.id, oldInstance, m.instanceID)
	g.setMember(m)
	if !c.replaying {
		c.onUndo(func() { g.moveStatic(m.id, m.instanceID, oldInstance); g.setMember(old); g.updateState() })
	}
}

// moveStatic moves member id's static-map entry from instance id from to to.
func (g *streamsGroup) moveStatic(id string, from, to *string) {
	if from != nil && g.staticMembers[*from] == id {
		delete(g.staticMembers, *from)
	}
	if to != nil {
		if g.staticMembers == nil {
			g.staticMembers = map[string]string{}
		}
		g.staticMembers[*to] = id
	}
}

// removeMember deletes a member, undoably.
func (c *Coordinator) removeMember(g *streamsGroup, id string) {
	old := g.members[id]
	if old == nil {
		return
	}
	g.swapMember(old, nil)
	if !c.replaying {
		c.undo = append(c.undo, undoEntry{g: g, what: undoMember, old: old})
	}
}

// swapMember replaces old by m (either may be nil) in the member map, the
// static map and the ownership indexes.
func (g *streamsGroup) swapMember(old, m *streamsMember) {
	if old != nil {
		g.unindex(old)
		g.moveStatic(old.id, old.instanceID, nil)
		delete(g.members, old.id)
		g.classicMembers -= old.isClassic()
	}
	if m != nil {
		g.members[m.id] = m
		g.moveStatic(m.id, nil, m.instanceID)
		g.index(m)
		g.classicMembers += m.isClassic()
	}
}

// setMember stores m under its id in place of whatever is there, keeping
// the classic member count (the ownership indexes are the caller's).
func (g *streamsGroup) setMember(m *streamsMember) {
	if prev := g.members[m.id]; prev != nil {
		g.classicMembers -= prev.isClassic()
	}
	g.members[m.id] = m
	g.classicMembers += m.isClassic()
}

// isClassic is 1 for a member of the classic protocol (online
// migration), else 0.
func (m *streamsMember) isClassic() int {
	if m.classic != nil {
		return 1
	}
	return 0
}

func (g *streamsGroup) index(m *streamsMember) {
	for _, o := range []ownedTasks{m.assigned, m.pending} {
		for t := range o.active {
			g.activeOwner[t] = m.processID
		}
		addOwner(g.standbyOwners, o.standby, m.processID)
		if len(o.warmup) > 0 && g.warmupOwners == nil {
			g.warmupOwners = ownerIndex{}
		}
		addOwner(g.warmupOwners, o.warmup, m.processID)
	}
}

// unindex removes m's tasks; an active entry goes only if it still names m's
// process (Kafka's rule).
func (g *streamsGroup) unindex(m *streamsMember) {
	for _, o := range []ownedTasks{m.assigned, m.pending} {
		for t := range o.active {
			if p, ok := g.activeOwner[t]; ok && p == m.processID {
				delete(g.activeOwner, t)
			}
		}
		dropOwner(g.standbyOwners, o.standby, m.processID)
		dropOwner(g.warmupOwners, o.warmup, m.processID)
	}
}

// ownerIndex maps a task to the processes holding it (as a standby or a
// warm-up) with how many of each process's members do.
type ownerIndex map[TaskID]processCounts

// processCounts is one task's owners, sorted by process: a task has one
// or a few, so a short slice costs far less than a map a task.
type processCounts []processCount

type processCount struct {
	process string
	n       int32
}

func (ps processCounts) find(process string) (int, bool) {
	return slices.BinarySearchFunc(ps, process, func(e processCount, p string) int { return strings.Compare(e.process, p) })
}

// count returns how many of process's members hold the task.
func (ps processCounts) count(process string) int32 {
	if i, ok := ps.find(process); ok {
		return ps[i].n
	}
	return 0
}

func addOwner(idx ownerIndex, s taskSet, process string) {
	for t := range s {
		ps := idx[t]
		if i, ok := ps.find(process); ok {
			ps[i].n++
		} else {
			idx[t] = slices.Insert(ps, i, processCount{process, 1})
		}
	}
}

func dropOwner(idx ownerIndex, s taskSet, process string) {
	for t := range s {
		ps := idx[t]
		i, ok := ps.find(process)
		switch {
		case !ok:
		case ps[i].n > 1:
			ps[i].n--
		case len(ps) == 1:
			delete(idx, t)
		default:
			idx[t] = slices.Delete(ps, i, i+1)
		}
	}
}

// setTarget stores (or with nil deletes) a member's target, undoably.
func (c *Coordinator) setTarget(g *streamsGroup, member string, t *tasksTuple) {
	old, had := g.target[member]
	if t == nil {
		delete(g.target, member)
	} else {
		g.target[member] = *t
	}
	g.indexWarmupTarget(member)
	if c.replaying {
		return
	}
	c.undo = append(c.undo, undoEntry{g: g, what: undoTarget, member: member, target: old, had: had})
}

// requiredTopics lists the topics whose metadata the group depends on.
func (g *streamsGroup) requiredTopics() []string {
	if g.topology == nil {
		return nil
	}
	var out []string
	for _, s := range g.topology.Subtopologies {
		out = append(out, s.SourceTopics...)
		for _, t := range s.RepartitionSourceTopics {
			out = append(out, t.Name)
		}
		for _, t := range s.StateChangelogTopics {
			out = append(out, t.Name)
		}
	}
	return out
}

func (g *streamsGroup) sortedMemberIDs() []string {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// dumpDurable implements Group.
func (g *streamsGroup) dumpDurable(b *strings.Builder) {
	fmt.Fprintf(b, "  epoch=%d assignment-epoch=%d assignment-ts=%d validated-topology=%d hash=%d configs=%v desc=%d/%d\n",
		g.groupEpoch, g.assignmentEpoch, g.assignmentTimestamp, g.validatedTopologyEpoch, g.metadataHash,
		g.lastAssignmentConfigs, g.storedDescEpoch, g.failedDescEpoch)
	if g.topology != nil {
		fmt.Fprintf(b, "  topology epoch=%d %+v\n", g.topology.Epoch, g.topology.Subtopologies)
	}
	for _, id := range g.sortedMemberIDs() {
		m := g.members[id]
		fmt.Fprintf(b, "  member %q epoch=%d prev=%d state=%s instance=%s rack=%s client=%q/%q rto=%d topo=%d process=%q endpoint=%v tags=%v\n",
			id, m.epoch, m.prevEpoch, m.state, strPtr(m.instanceID), strPtr(m.rackID), m.clientID, m.clientHost,
			m.rebalanceTimeoutMs, m.topologyEpoch, m.processID, m.endpoint, m.clientTags)
		fmt.Fprintf(b, "    assigned active=[%s] standby=[%s] warmup=[%s]\n",
			formatEpochs(m.assigned.active), formatTasks(m.assigned.standby), formatTasks(m.assigned.warmup))
		fmt.Fprintf(b, "    pending  active=[%s] standby=[%s] warmup=[%s]\n",
			formatEpochs(m.pending.active), formatTasks(m.pending.standby), formatTasks(m.pending.warmup))
	}
	tids := make([]string, 0, len(g.target))
	for id := range g.target {
		tids = append(tids, id)
	}
	sort.Strings(tids)
	for _, id := range tids {
		t := g.target[id]
		fmt.Fprintf(b, "  target %q active=[%s] standby=[%s] warmup=[%s]\n",
			id, formatTasks(t.active), formatTasks(t.standby), formatTasks(t.warmup))
	}
	var owners []string
	for t, p := range g.activeOwner {
		owners = append(owners, fmt.Sprintf("%s:%s", t, p))
	}
	sort.Strings(owners)
	fmt.Fprintf(b, "  active-owners %v\n", owners)
	fmt.Fprintf(b, "  standby-owners %s\n  warmup-owners %s\n", formatOwners(g.standbyOwners), formatOwners(g.warmupOwners))
}

func formatOwners(idx ownerIndex) string {
	var out []string
	for t, ps := range idx {
		procs := make([]string, 0, len(ps))
		for _, o := range ps {
			procs = append(procs, fmt.Sprintf("%s*%d", o.process, o.n))
		}
		sort.Strings(procs)
		out = append(out, fmt.Sprintf("%s:%s", t, strings.Join(procs, "+")))
	}
	sort.Strings(out)
	return fmt.Sprint(out)
}

func strPtr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%q", *s)
}

// metadataKey returns the group's metadata record key, boxed once.
func (g *streamsGroup) metadataKey() records.RecordKey {
	if g.metaKey == nil {
		g.metaKey = records.StreamsGroupMetadataKey{GroupID: g.id}
	}
	return g.metaKey
}
