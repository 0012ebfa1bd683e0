package core

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/coordhost/coordhost/core/records"
)

// ConsumerGroupState is the state of a KIP-848 consumer group, derived
// after every change (Kafka's ConsumerGroup.ConsumerGroupState).
type ConsumerGroupState int8

// Consumer group states.
const (
	ConsumerEmpty       ConsumerGroupState = iota // no members
	ConsumerAssigning                             // group epoch ahead of assignment epoch
	ConsumerReconciling                           // some member not yet at the assignment epoch
	ConsumerStable                                // every member reconciled
)

// String is the state as ConsumerGroupDescribe and ListGroups spell it.
func (s ConsumerGroupState) String() string {
	return [...]string{"Empty", "Assigning", "Reconciling", "Stable"}[s]
}

// consumerStateName names a member state as Kafka's MemberState does for
// consumer groups (the persisted int8 values are those of streams).
func consumerStateName(s memberState) string {
	switch s {
	case memberStable:
		return "STABLE"
	case memberUnrevokedTasks:
		return "UNREVOKED_PARTITIONS"
	case memberUnreleasedTasks:
		return "UNRELEASED_PARTITIONS"
	}
	return "UNKNOWN"
}

// topicPart is one partition of a topic named by its id.
type topicPart struct {
	topic     [16]byte
	partition int32
}

// partSet is a set of partitions.
type partSet map[topicPart]struct{}

// partEpochs maps each partition a member holds to the epoch at which it
// got it (KIP-1251 assignment epochs, used by offset-commit fencing).
type partEpochs map[topicPart]int32

// consumerMember is one member. Values are immutable once stored in a
// group: updates store a modified copy, which makes undo a pointer swap.
type consumerMember struct {
	id                 string
	epoch, prevEpoch   int32
	state              memberState
	instanceID         *string
	rackID             *string
	clientID           string
	clientHost         string
	topics             []string // subscribed topic names, sorted, unique
	regex              *string
	rebalanceTimeoutMs int32
	serverAssignor     *string
	assigned           partEpochs
	pending            partEpochs // pending revocation, at the epochs they were assigned at
	// classic is set for a member that uses the classic protocol
	// (JoinGroup/SyncGroup, bridged; consumer_migration_bridge.go).
	classic *records.ClassicMemberMetadata
}

func newConsumerMember(id string) *consumerMember {
	return &consumerMember{id: id, state: memberStable, rebalanceTimeoutMs: -1, topics: []string{},
		assigned: partEpochs{}, pending: partEpochs{}}
}

func (m *consumerMember) clone() *consumerMember {
	c := *m
	return &c
}

// consumerGroup is a KIP-848 consumer group.
type consumerGroup struct {
	id                  string
	groupEpoch          int32
	metadataHash        int64
	creationTimeMs      int64
	assignmentEpoch     int32
	assignmentTimestamp int64
	members             map[string]*consumerMember
	staticMembers       map[string]string // instance id -> member id
	target              map[string]partSet
	// owner maps every partition some member holds (assigned or pending
	// revocation) to that member: a partition is handed to a new owner
	// only once no one holds it.
	owner map[topicPart]string
	state ConsumerGroupState
	// metadataRefresh is soft state: a subscribed topic changed, so the
	// next heartbeat recomputes the metadata hash.
	metadataRefresh bool
	// regexes are the resolved regular expressions (records of type 16);
	// regexRefreshedMs is the time of the last resolution replayed.
	regexes          map[string]resolvedRegex
	regexRefreshedMs int64
	// regexTopicsChanged is soft state: topics appeared or disappeared
	// since the regexes were last resolved.
	regexTopicsChanged bool
	// table mirrors Kafka's member map, whose order its assignor sees.
	table memberTable
}

func newConsumerGroup(id string) *consumerGroup {
	g := &consumerGroup{id: id, creationTimeMs: -1, members: map[string]*consumerMember{},
		staticMembers: map[string]string{}, target: map[string]partSet{}, owner: map[topicPart]string{},
		regexes: map[string]resolvedRegex{}}
	g.updateState()
	return g
}

// ID implements Group.
func (g *consumerGroup) ID() string { return g.id }

// Kind implements Group.
func (g *consumerGroup) Kind() GroupKind { return GroupKindConsumer }

// StateName implements Group.
func (g *consumerGroup) StateName() string { return g.state.String() }

// IsEmpty implements Group.
func (g *consumerGroup) IsEmpty() bool { return len(g.members) == 0 }

// updateState derives the group state (Kafka's order of checks).
func (g *consumerGroup) updateState() {
	switch {
	case len(g.members) == 0:
		g.state = ConsumerEmpty
	case g.groupEpoch > g.assignmentEpoch:
		g.state = ConsumerAssigning
	default:
		g.state = ConsumerStable
		for _, m := range g.members {
			if m.state != memberStable || m.epoch != g.assignmentEpoch {
				g.state = ConsumerReconciling
				break
			}
		}
	}
}

// putConsumerMember stores m (replacing the member with its id), undoably.
func (c *Coordinator) putConsumerMember(g *consumerGroup, m *consumerMember) {
	old := g.members[m.id]
	g.swapMember(old, m)
	if old == nil {
		g.table.put(m.id, c.entry())
	}
	if c.replaying { // the closure is an allocation a record, and a replay never rolls back
		return
	}
	c.onUndo(func() {
		g.swapMember(m, old)
		if old == nil {
			g.table.remove(m.id)
		}
		g.updateState()
	})
}

// consumerMemberToChange returns the member a record on id changes, to be
// stored with putConsumerMember: a new member, a copy of the stored one, or
// while replaying the stored one itself, taken out of the group first (no
// undo needs its old fields; the copy would be an allocation a record). Its
// member-table entry stays (putConsumerMember keeps an existing entry).
func (c *Coordinator) consumerMemberToChange(g *consumerGroup, id string) *consumerMember {
	old := g.members[id]
	switch {
	case old == nil:
		return newConsumerMember(id)
	case c.replaying:
		g.swapMember(old, nil)
		return old
	}
	return old.clone()
}

// removeConsumerMember deletes a member, undoably.
func (c *Coordinator) removeConsumerMember(g *consumerGroup, id string) {
	old := g.members[id]
	if old == nil {
		return
	}
	g.swapMember(old, nil)
	g.table.remove(id)
	if !c.replaying {
		c.onUndo(func() { g.swapMember(nil, old); g.table.put(id, 0); g.updateState() })
	}
}

func (g *consumerGroup) swapMember(old, m *consumerMember) {
	if old != nil {
		for tp := range old.assigned {
			g.dropOwner(tp, old.id)
		}
		for tp := range old.pending {
			g.dropOwner(tp, old.id)
		}
		if old.instanceID != nil && g.staticMembers[*old.instanceID] == old.id {
			delete(g.staticMembers, *old.instanceID)
		}
		delete(g.members, old.id)
	}
	if m != nil {
		g.members[m.id] = m
		if m.instanceID != nil {
			g.staticMembers[*m.instanceID] = m.id
		}
		for tp := range m.assigned {
			g.owner[tp] = m.id
		}
		for tp := range m.pending {
			g.owner[tp] = m.id
		}
	}
}

// dropOwner removes tp's owner entry if it names member id.
func (g *consumerGroup) dropOwner(tp topicPart, id string) {
	if g.owner[tp] == id {
		delete(g.owner, tp)
	}
}

// held lists the partitions a member holds: assigned and pending revocation.
func (m *consumerMember) held() []topicPart {
	out := make([]topicPart, 0, len(m.assigned)+len(m.pending))
	for tp := range m.assigned {
		out = append(out, tp)
	}
	for tp := range m.pending {
		out = append(out, tp)
	}
	return out
}

// setConsumerTarget stores (or with nil deletes) a member's target, undoably.
func (c *Coordinator) setConsumerTarget(g *consumerGroup, member string, t partSet) {
	old, had := g.target[member]
	if t == nil {
		delete(g.target, member)
	} else {
		g.target[member] = t
	}
	if c.replaying {
		return
	}
	c.onUndo(func() {
		if had {
			g.target[member] = old
		} else {
			delete(g.target, member)
		}
	})
}

// subscribedTopics is the sorted union of the members' subscriptions
// (topic names and resolved regexes).
func (g *consumerGroup) subscribedTopics() []string {
	set := map[string]struct{}{}
	for _, m := range g.members {
		for _, t := range g.memberTopics(m) {
			set[t] = struct{}{}
		}
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

func (g *consumerGroup) sortedMemberIDs() []string {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// toTopicPartitions lists a set by topic id then partition, ascending.
func (s partSet) toTopicPartitions() []records.TopicPartitions {
	e := partEpochs{}
	for tp := range s {
		e[tp] = 0
	}
	out := e.toTopicPartitions()
	for i := range out {
		out[i].AssignmentEpochs = nil
	}
	return out
}

// toTopicPartitions lists the partitions with their assignment epochs.
func (e partEpochs) toTopicPartitions() []records.TopicPartitions {
	tps := make([]topicPart, 0, len(e))
	for tp := range e {
		tps = append(tps, tp)
	}
	sortTopicParts(tps)
	out := []records.TopicPartitions{}
	for _, tp := range tps {
		if n := len(out); n == 0 || out[n-1].TopicID != tp.topic {
			out = append(out, records.TopicPartitions{TopicID: tp.topic, Partitions: []int32{}, AssignmentEpochs: []int32{}})
		}
		last := &out[len(out)-1]
		last.Partitions = append(last.Partitions, tp.partition)
		last.AssignmentEpochs = append(last.AssignmentEpochs, e[tp])
	}
	return out
}

func sortTopicParts(tps []topicPart) {
	sort.Slice(tps, func(i, j int) bool {
		if c := strings.Compare(string(tps[i].topic[:]), string(tps[j].topic[:])); c != 0 {
			return c < 0
		}
		return tps[i].partition < tps[j].partition
	})
}

// partSetOf reads record partitions into a set.
func partSetOf(tps []records.TopicPartitions) partSet {
	s := partSet{}
	for _, t := range tps {
		for _, p := range t.Partitions {
			s[topicPart{t.TopicID, p}] = struct{}{}
		}
	}
	return s
}

// partEpochsOf reads record partitions with their epochs; a partition
// without one gets def (records written before KIP-1251).
func partEpochsOf(tps []records.TopicPartitions, def int32) partEpochs {
	e := partEpochs{}
	for _, t := range tps {
		for i, p := range t.Partitions {
			ep := def
			if t.AssignmentEpochs != nil {
				ep = t.AssignmentEpochs[i]
			}
			e[topicPart{t.TopicID, p}] = ep
		}
	}
	return e
}

func (s partSet) equal(o partSet) bool {
	if len(s) != len(o) {
		return false
	}
	for tp := range s {
		if _, ok := o[tp]; !ok {
			return false
		}
	}
	return true
}

func (e partEpochs) set() partSet {
	s := make(partSet, len(e))
	for tp := range e {
		s[tp] = struct{}{}
	}
	return s
}

func formatParts(tps []records.TopicPartitions) string {
	var b strings.Builder
	for i, t := range tps {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%x:%v", t.TopicID[:4], t.Partitions)
		if t.AssignmentEpochs != nil {
			fmt.Fprintf(&b, "@%v", t.AssignmentEpochs)
		}
	}
	return b.String()
}

// dumpDurable implements Group.
func (g *consumerGroup) dumpDurable(b *strings.Builder) {
	fmt.Fprintf(b, "  epoch=%d hash=%d created=%d assignment-epoch=%d assignment-ts=%d\n",
		g.groupEpoch, g.metadataHash, g.creationTimeMs, g.assignmentEpoch, g.assignmentTimestamp)
	for _, id := range g.sortedMemberIDs() {
		m := g.members[id]
		fmt.Fprintf(b, "  member %q epoch=%d prev=%d state=%s instance=%s rack=%s client=%q/%q topics=%v regex=%s rto=%d assignor=%s\n",
			id, m.epoch, m.prevEpoch, consumerStateName(m.state), strPtr(m.instanceID), strPtr(m.rackID),
			m.clientID, m.clientHost, m.topics, strPtr(m.regex), m.rebalanceTimeoutMs, strPtr(m.serverAssignor))
		fmt.Fprintf(b, "    assigned [%s] pending [%s]\n", formatParts(m.assigned.toTopicPartitions()),
			formatParts(m.pending.toTopicPartitions()))
		if m.classic != nil {
			fmt.Fprintf(b, "    classic session=%d protocols=%d\n", m.classic.SessionTimeoutMs, len(m.classic.SupportedProtocols))
		}
	}
	tids := make([]string, 0, len(g.target))
	for id := range g.target {
		tids = append(tids, id)
	}
	sort.Strings(tids)
	for _, id := range tids {
		fmt.Fprintf(b, "  target %q [%s]\n", id, formatParts(g.target[id].toTopicPartitions()))
	}
	var owners []string
	for tp, m := range g.owner {
		owners = append(owners, fmt.Sprintf("%x-%d:%s", tp.topic[:4], tp.partition, m))
	}
	sort.Strings(owners)
	fmt.Fprintf(b, "  owners %v\n", owners)
	for _, r := range slices.Sorted(maps.Keys(g.regexes)) {
		v := g.regexes[r]
		fmt.Fprintf(b, "  regex %q topics=%v version=%d ts=%d\n", r, v.topics, v.version, v.timestamp)
	}
}
