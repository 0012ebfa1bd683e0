package core

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/core/records"
	"github.com/coordhost/coordhost/core/userdata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A fleet of simulated clients rolling a group between the classic and the
// consumer protocol, as Java KafkaConsumers do in a rolling restart that
// changes group.protocol. Classic clients follow the cooperative protocol
// (they keep their partitions across a rejoin, give up revoked ones when
// the SyncGroup answer omits them, then rejoin; the leader never moves a
// partition another member still owns) or the eager one (they drop
// everything before rejoining). Consumer clients follow KIP-848.

type fleetClient struct {
	name        string
	classic     bool
	cooperative bool
	id          string
	gen         int32
	owned       map[string]bool // "a-0"
	phase       int             // classic: 0 must join, 1 join sent, 2 sync due, 3 sync sent, 4 stable
	leaderOf    []kmsg.JoinGroupResponseMember
	done        bool // left the group
}

const (
	phJoin = iota
	phJoinSent
	phSyncDue
	phSyncSent
	phStable
)

type fleet struct {
	t       testing.TB
	h       *cHarness
	rng     *rand.Rand
	clients []*fleetClient
	pending map[RequestID]*fleetClient
	// epochs is the last epoch the coordinator showed for each member id
	// (consumer member epochs; never going backwards while the member is
	// in a consumer group).
	epochs map[string]int32
}

func newFleet(t testing.TB, seed int64) *fleet {
	return newFleetInterval(t, seed, -1)
}

// newFleetInterval is newFleet with the given consumer assignment
// interval (0: Kafka's default).
func newFleetInterval(t testing.TB, seed int64, intervalMs int32) *fleet {
	cfg := consumerTestConfig()
	cfg.Consumer.AssignmentIntervalMs = intervalMs
	cfg.Classic.InitialRebalanceDelayMs = 0
	h := newCHarness(t, cfg)
	return &fleet{t: t, h: h, rng: rand.New(rand.NewSource(seed)), pending: map[RequestID]*fleetClient{}, epochs: map[string]int32{}}
}

func (f *fleet) add(name string, classic, cooperative bool) *fleetClient {
	c := &fleetClient{name: name, classic: classic, cooperative: cooperative, owned: map[string]bool{}}
	if !classic {
		c.id = "c-" + name
	}
	f.clients = append(f.clients, c)
	return c
}

func (f *fleet) topicName(id [16]byte) string {
	return strings.TrimRight(strings.TrimPrefix(string(id[:]), "id-"), "\x00")
}

// subscription encodes a ConsumerProtocol v3 subscription to a and b with
// the client's owned partitions.
func (c *fleetClient) subscription() []byte {
	m := kmsg.ConsumerMemberMetadata{Version: 3, Topics: []string{"a", "b"}, Generation: -1}
	byTopic := ownedByTopic(c.owned)
	for _, t := range []string{"a", "b"} {
		if ps := byTopic[t]; len(ps) > 0 {
			m.OwnedPartitions = append(m.OwnedPartitions, kmsg.ConsumerMemberMetadataOwnedPartition{Topic: t, Partitions: ps})
		}
	}
	return m.AppendTo(nil)
}

// ownedByTopic groups "topic-partition" keys by topic, ascending.
func ownedByTopic(owned map[string]bool) map[string][]int32 {
	byTopic := map[string][]int32{}
	for _, k := range ownedKeys(owned) {
		var t string
		var p int32
		fmt.Sscanf(strings.Replace(k, "-", " ", 1), "%s %d", &t, &p)
		byTopic[t] = append(byTopic[t], p)
	}
	return byTopic
}

func ownedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// send commits an Output and hands every response to its client.
func (f *fleet) send(c *fleetClient, o func(RequestID) Output) {
	f.t.Helper()
	f.h.next++
	id := f.h.next
	if c != nil {
		f.pending[id] = c
	}
	f.handle(f.h.commit(o(id)))
}

func (f *fleet) handle(o Output) {
	f.t.Helper()
	for _, r := range o.Responses {
		c := f.pending[r.Request]
		delete(f.pending, r.Request)
		if c == nil {
			continue
		}
		switch m := r.Msg.(type) {
		case *kmsg.JoinGroupResponse:
			f.onJoin(c, m)
		case *kmsg.SyncGroupResponse:
			f.onSync(c, m)
		case *kmsg.HeartbeatResponse:
			f.onClassicError(c, m.ErrorCode)
		case *kmsg.ConsumerGroupHeartbeatResponse:
			f.onHeartbeat(c, m)
		}
	}
	f.check()
}

func (f *fleet) onClassicError(c *fleetClient, code int16) {
	switch code {
	case 0:
	case kerr.RebalanceInProgress.Code:
		if c.phase == phStable {
			c.phase = phJoin
		}
	case kerr.UnknownMemberID.Code, kerr.IllegalGeneration.Code, kerr.FencedInstanceID.Code:
		if code == kerr.UnknownMemberID.Code {
			c.id = ""
		}
		c.owned, c.gen, c.phase = map[string]bool{}, -1, phJoin // partitions lost
	default:
		f.t.Fatalf("%s: classic error %v", c.name, kerr.ErrorForCode(code))
	}
}

func (f *fleet) onJoin(c *fleetClient, r *kmsg.JoinGroupResponse) {
	switch r.ErrorCode {
	case kerr.MemberIDRequired.Code:
		c.id, c.phase = r.MemberID, phJoin
		return
	case 0:
	default:
		c.phase = phJoin
		f.onClassicError(c, r.ErrorCode)
		c.phase = phJoin
		return
	}
	c.id, c.gen, c.phase, c.leaderOf = r.MemberID, r.Generation, phSyncDue, nil
	if r.LeaderID == c.id {
		c.leaderOf = r.Members
	}
}

func (f *fleet) onSync(c *fleetClient, r *kmsg.SyncGroupResponse) {
	if r.ErrorCode != 0 {
		c.phase = phJoin
		f.onClassicError(c, r.ErrorCode)
		c.phase = phJoin
		return
	}
	a, err := userdata.DecodeAssignment(r.MemberAssignment)
	if err != nil {
		f.t.Fatalf("%s: assignment: %v", c.name, err)
	}
	next := map[string]bool{}
	for _, t := range a.Topics {
		for _, p := range t.Partitions {
			next[fmt.Sprintf("%s-%d", t.Topic, p)] = true
		}
	}
	revoked := false
	for k := range c.owned {
		if !next[k] {
			revoked = true
		}
	}
	c.owned, c.phase = next, phStable
	if revoked && c.cooperative {
		c.phase = phJoin // cooperative: rejoin after revoking
	}
}

func (f *fleet) onHeartbeat(c *fleetClient, r *kmsg.ConsumerGroupHeartbeatResponse) {
	switch r.ErrorCode {
	case 0:
	case kerr.FencedMemberEpoch.Code, kerr.UnknownMemberID.Code:
		c.owned, c.gen = map[string]bool{}, 0
		return
	default:
		f.t.Fatalf("%s: heartbeat error %v", c.name, kerr.ErrorForCode(r.ErrorCode))
	}
	if c.done {
		return
	}
	c.gen = r.MemberEpoch
	if r.Assignment != nil {
		next := map[string]bool{}
		for _, t := range r.Assignment.Topics {
			for _, p := range t.Partitions {
				next[fmt.Sprintf("%s-%d", f.topicName(t.TopicID), p)] = true
			}
		}
		c.owned = next
	}
}

// step lets client c do its next action.
func (f *fleet) step(c *fleetClient) {
	f.t.Helper()
	if c.done {
		return
	}
	if !c.classic {
		req := ackReq("g", c.id, c.gen, nil)
		if c.gen == 0 {
			req = joinReq("g", c.id, "a", "b")
		}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		byTopic := ownedByTopic(c.owned)
		for _, t := range []string{"a", "b"} {
			if ps := byTopic[t]; len(ps) > 0 {
				req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: topicID(t), Partitions: ps})
			}
		}
		f.send(c, func(id RequestID) Output {
			return f.h.c.consumerGroupHeartbeat(f.h.now, id, ClientInfo{ClientID: c.name, ClientHost: "/127.0.0.1"}, req)
		})
		return
	}
	switch c.phase {
	case phJoin:
		if !c.cooperative {
			c.owned = map[string]bool{} // eager: revoke everything first
		}
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version, req.Group, req.MemberID, req.ProtocolType = 9, "g", c.id, "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 20000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: c.subscription()}}
		c.phase = phJoinSent
		f.send(c, func(id RequestID) Output {
			return f.h.c.joinGroup(f.h.now, id, ClientInfo{ClientID: c.name, ClientHost: "/127.0.0.1"}, req)
		})
	case phSyncDue:
		req := kmsg.NewPtrSyncGroupRequest()
		req.Version, req.Group, req.MemberID, req.Generation = 5, "g", c.id, c.gen
		pt, pn := "consumer", "range"
		req.ProtocolType, req.Protocol = &pt, &pn
		if c.leaderOf != nil {
			req.GroupAssignment = leaderAssignment(c.leaderOf)
		}
		c.phase = phSyncSent
		f.send(c, func(id RequestID) Output { return f.h.c.syncGroup(f.h.now, id, req) })
	case phStable:
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.Generation = 4, "g", c.id, c.gen
		f.send(c, func(id RequestID) Output { return f.h.c.heartbeat(f.h.now, id, req) })
	}
}

// leaderAssignment is a cooperative-safe round robin over a(4) and b(2):
// a partition another member still owns stays with its owner or with no
// one (its owner revokes it and rejoins).
func leaderAssignment(members []kmsg.JoinGroupResponseMember) []kmsg.SyncGroupRequestGroupAssignment {
	owner := map[string]string{}
	for _, m := range members {
		sub, _ := userdata.DecodeSubscription(m.ProtocolMetadata)
		for _, t := range sub.OwnedPartitions {
			for _, p := range t.Partitions {
				owner[fmt.Sprintf("%s-%d", t.Topic, p)] = m.MemberID
			}
		}
	}
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = m.MemberID
	}
	sort.Strings(ids)
	per := map[string]map[string][]int32{}
	i := 0
	for _, t := range []struct {
		name string
		n    int32
	}{{"a", 4}, {"b", 2}} {
		for p := int32(0); p < t.n; p++ {
			to := ids[i%len(ids)]
			i++
			if o, held := owner[fmt.Sprintf("%s-%d", t.name, p)]; held && o != to {
				continue
			}
			if per[to] == nil {
				per[to] = map[string][]int32{}
			}
			per[to][t.name] = append(per[to][t.name], p)
		}
	}
	var out []kmsg.SyncGroupRequestGroupAssignment
	for _, id := range ids {
		a := kmsg.ConsumerMemberAssignment{Version: 3}
		for _, t := range []string{"a", "b"} {
			if ps := per[id][t]; len(ps) > 0 {
				a.Topics = append(a.Topics, kmsg.ConsumerMemberAssignmentTopic{Topic: t, Partitions: ps})
			}
		}
		out = append(out, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: a.AppendTo(nil)})
	}
	return out
}

// check asserts the invariants after every Output: no partition owned by
// two clients, the coordinator's owner index consistent, member epochs
// never going backwards.
func (f *fleet) check() {
	f.t.Helper()
	seen := map[string]string{}
	for _, c := range f.clients {
		for k := range c.owned {
			if o, dup := seen[k]; dup {
				f.t.Fatalf("partition %s owned by %s and %s", k, o, c.name)
			}
			seen[k] = c.name
		}
	}
	if g := f.h.group("g"); g != nil {
		checkOwners(f.t, g)
		for id, m := range g.members {
			if last, ok := f.epochs[id]; ok && m.epoch < last && m.epoch >= 0 {
				f.t.Fatalf("member %s epoch went back from %d to %d", id, last, m.epoch)
			}
			f.epochs[id] = m.epoch
		}
	}
}

// settle runs rounds (each client acts in a random order, then time moves
// by a second) until every client is stable and the six partitions are
// owned; it fails after 300 rounds.
func (f *fleet) settle() {
	f.t.Helper()
	for round := 0; round < 300; round++ {
		order := f.rng.Perm(len(f.clients))
		for _, i := range order {
			if f.rng.Intn(4) > 0 { // some clients skip a round
				f.step(f.clients[i])
			}
		}
		f.handle(f.h.tick(1000))
		if f.settled() {
			return
		}
	}
	var b strings.Builder
	for _, c := range f.clients {
		fmt.Fprintf(&b, "%s classic=%v id=%s gen=%d phase=%d owned=%v done=%v\n", c.name, c.classic, c.id, c.gen, c.phase, ownedKeys(c.owned), c.done)
	}
	f.t.Fatalf("did not settle:\n%s%s", b.String(), f.h.c.Dump())
}

func (f *fleet) settled() bool {
	n := 0
	for _, c := range f.clients {
		if c.done {
			continue
		}
		if c.classic && c.phase != phStable {
			return false
		}
		n += len(c.owned)
	}
	switch g := f.h.c.groups["g"].(type) {
	case *consumerGroup:
		if g.state != ConsumerStable {
			return false
		}
		for _, c := range f.clients {
			if !c.done && !c.classic && g.members[c.id] != nil && c.gen != g.members[c.id].epoch {
				return false
			}
		}
	case *classicGroup:
		if g.state != classicStable {
			return false
		}
	}
	return n == 6
}

// leave makes a client leave: a classic LeaveGroup, or a consumer
// heartbeat with epoch -1.
func (f *fleet) leave(c *fleetClient) {
	f.t.Helper()
	if c.classic {
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Version, req.Group = 5, "g"
		req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: c.id}}
		f.send(nil, func(id RequestID) Output { return f.h.c.leaveGroup(f.h.now, id, req) })
	} else {
		f.send(c, func(id RequestID) Output {
			return f.h.c.consumerGroupHeartbeat(f.h.now, id, ClientInfo{ClientID: c.name}, ackReq("g", c.id, -1, nil))
		})
	}
	c.done, c.owned = true, map[string]bool{}
	f.check()
}

func (f *fleet) kind() GroupKind { return f.h.c.groups["g"].Kind() }

// roll replaces every live client of one protocol by a client of the
// other, one at a time, settling after each.
func (f *fleet) roll(toClassic bool, name string) {
	f.t.Helper()
	var olds []*fleetClient
	for _, c := range f.clients {
		if !c.done && c.classic != toClassic {
			olds = append(olds, c)
		}
	}
	for i, c := range olds {
		f.leave(c)
		f.add(fmt.Sprintf("%s%d", name, i), toClassic, f.rng.Intn(2) == 0)
		if f.rng.Intn(3) == 0 {
			// A fail-over in the middle of the step.
			for j := 0; j < f.rng.Intn(4); j++ {
				for _, c := range f.clients {
					f.step(c)
				}
			}
			f.reload()
		}
		f.settle()
		f.h.checkReplay()
	}
}

// reload replaces the coordinator by one rebuilt from the log (a
// fail-over): requests in flight are lost, and their clients retry.
func (f *fleet) reload() {
	f.t.Helper()
	fresh, err := replayLog(f.h.cfg, f.h.log)
	if err != nil {
		f.t.Fatal(err)
	}
	f.h.c = fresh
	f.handle(f.h.commit(fresh.updateTopics(f.h.now, f.h.topics)))
	f.handle(f.h.commit(fresh.Loaded(f.h.now)))
	f.pending = map[RequestID]*fleetClient{}
	for _, c := range f.clients {
		if c.phase == phJoinSent || c.phase == phSyncSent {
			c.phase = phJoin
		}
	}
}

// TestConsumerMigrationRoll rolls, for 120 seeds (20 with Kafka's
// default assignment interval), three classic consumers
// to the consumer protocol one at a time (the first consumer join
// upgrades the group), then back (the last consumer leaving downgrades
// it), with random scheduling and fail-overs in the middle of a third of
// the steps, checking single ownership, monotone epochs and replay after
// every change.
func TestConsumerMigrationRoll(t *testing.T) {
	for seed := int64(1); seed <= 120; seed++ {
		// The last 20 seeds with Kafka's default assignment interval.
		interval, name := int32(-1), fmt.Sprint(seed)
		if seed > 100 {
			interval, name = 0, fmt.Sprintf("%d-interval", seed)
		}
		t.Run(name, func(t *testing.T) {
			f := newFleetInterval(t, seed, interval)
			for i := 0; i < 3; i++ {
				f.add(fmt.Sprintf("k%d", i), true, f.rng.Intn(2) == 0)
			}
			f.settle()
			if f.kind() != GroupKindClassic {
				t.Fatalf("group is %s", f.kind())
			}
			f.roll(false, "n")
			if f.kind() != GroupKindConsumer {
				t.Fatalf("after the upgrade roll the group is %s", f.kind())
			}
			f.roll(true, "k")
			if f.kind() != GroupKindClassic {
				t.Fatalf("after the downgrade roll the group is %s", f.kind())
			}
			f.h.checkReplay()
		})
	}
}

// recordTypeList lists the record types of recs as "Name" or "Name-" for a
// tombstone.
func recordTypeList(recs []records.Record) string {
	var out []string
	for _, r := range recs {
		s := records.RecordTypeName(r.Key.RecordType())
		if r.Value == nil {
			s += "-"
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

// stableClassicFleet is a settled classic group of two cooperative
// clients.
func stableClassicFleet(t *testing.T) *fleet {
	f := newFleet(t, 7)
	f.add("k0", true, true)
	f.add("k1", true, true)
	f.settle()
	return f
}

// TestConsumerMigrationUpgradeRecords: the first consumer join on a
// non-empty classic group writes Kafka's conversion records (classic
// tombstone, then createConsumerGroupRecords' order) before the join's
// own; the classic members keep their partitions at epoch = generation.
func TestConsumerMigrationUpgradeRecords(t *testing.T) {
	f := stableClassicFleet(t)
	gen := f.h.c.groups["g"].(*classicGroup).generation
	n := len(f.h.log)
	nc := f.add("n0", false, false)
	f.step(nc)
	got := recordTypeList(f.h.log[n:])
	want := "GroupMetadata- ConsumerGroupMemberMetadata ConsumerGroupMemberMetadata ConsumerGroupMetadata " +
		"ConsumerGroupTargetAssignmentMember ConsumerGroupTargetAssignmentMember ConsumerGroupTargetAssignmentMetadata " +
		"ConsumerGroupCurrentMemberAssignment ConsumerGroupCurrentMemberAssignment " +
		"ConsumerGroupMemberMetadata ConsumerGroupMetadata"
	if !strings.HasPrefix(got, want) {
		t.Fatalf("records\n got %s\nwant %s ...", got, want)
	}
	conv := f.h.log[n:]
	if v := conv[3].Value.(records.ConsumerGroupMetadataValue); v.Epoch != gen {
		t.Fatalf("group epoch %d, generation %d", v.Epoch, gen)
	}
	if v := conv[6].Value.(records.ConsumerGroupTargetAssignmentMetadataValue); v.AssignmentEpoch != gen {
		t.Fatalf("assignment epoch %d, generation %d", v.AssignmentEpoch, gen)
	}
	for _, r := range conv[1:3] {
		v := r.Value.(records.ConsumerGroupMemberMetadataValue)
		if v.Classic == nil || v.Classic.SessionTimeoutMs != 10000 || len(v.Classic.SupportedProtocols) != 1 ||
			v.Classic.SupportedProtocols[0].Name != "range" || !slicesEqual(v.SubscribedTopicNames, []string{"a", "b"}) {
			t.Fatalf("classic member record %+v", v)
		}
	}
	held := 0
	for _, r := range conv[7:9] {
		v := r.Value.(records.ConsumerGroupCurrentMemberAssignmentValue)
		if v.MemberEpoch != gen || v.PreviousMemberEpoch != gen || v.State != int8(memberStable) {
			t.Fatalf("current assignment %+v", v)
		}
		for _, tp := range v.AssignedPartitions {
			held += len(tp.Partitions)
		}
	}
	if held != 6 {
		t.Fatalf("converted members hold %d partitions, want 6", held)
	}
	// The classic members learn of the new epoch on their next Heartbeat.
	g := f.h.group("g")
	for _, c := range f.clients[:2] {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.Generation = 4, "g", c.id, c.gen
		o := f.h.commit(f.h.c.heartbeat(f.h.now, 99, req))
		if code := o.Responses[0].Msg.(*kmsg.HeartbeatResponse).ErrorCode; code != kerr.RebalanceInProgress.Code {
			t.Fatalf("classic heartbeat behind the group epoch %d: %v", g.groupEpoch, kerr.ErrorForCode(code))
		}
		if !f.h.c.hasTimer(consumerJoinKey("g", c.id)) {
			t.Fatal("no join timer")
		}
	}
	f.settle()
	f.h.checkReplay()
	// Describe shows member types.
	types := map[string]int8{}
	for _, m := range f.h.c.describeConsumerGroup("g", 1).Members {
		types[m.MemberID] = m.MemberType
	}
	if types["c-n0"] != 1 || types[f.clients[0].id] != 0 {
		t.Fatalf("member types %v", types)
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }

// TestConsumerMigrationDowngradeRecords: the last consumer-protocol member
// leaving writes the consumer group's tombstones in Kafka's order and one
// GroupMetadata at generation = group epoch, with each member's target as
// its assignment; the classic group then prepares a rebalance.
func TestConsumerMigrationDowngradeRecords(t *testing.T) {
	f := stableClassicFleet(t)
	nc := f.add("n0", false, false)
	f.settle()
	g := f.h.group("g")
	epoch := g.groupEpoch
	targets := map[string]int{}
	for id, tgt := range g.target {
		targets[id] = len(tgt)
	}
	n := len(f.h.log)
	f.leave(nc)
	got := recordTypeList(f.h.log[n:])
	want := strings.Repeat("ConsumerGroupCurrentMemberAssignment- ", 3) + strings.Repeat("ConsumerGroupTargetAssignmentMember- ", 3) +
		"ConsumerGroupTargetAssignmentMetadata- " + strings.Repeat("ConsumerGroupMemberMetadata- ", 3) +
		"ConsumerGroupPartitionMetadata- ConsumerGroupMetadata- GroupMetadata"
	if got != want {
		t.Fatalf("records\n got %s\nwant %s", got, want)
	}
	v := f.h.log[len(f.h.log)-1].Value.(records.GroupMetadataValue)
	if v.Generation != epoch || v.ProtocolType != "consumer" || deref0(v.Protocol) != "range" || len(v.Members) != 2 ||
		v.Leader == nil || *v.Leader != v.Members[0].MemberID {
		t.Fatalf("GroupMetadata %+v", v)
	}
	for _, m := range v.Members {
		a, err := userdata.DecodeAssignment(m.Assignment)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, tp := range a.Topics {
			n += len(tp.Partitions)
		}
		if n != targets[m.MemberID] || m.SessionTimeout != 10000 || m.RebalanceTimeout != 20000 {
			t.Fatalf("member %s: %d partitions (target %d), timeouts %d/%d", m.MemberID, n, targets[m.MemberID], m.SessionTimeout, m.RebalanceTimeout)
		}
	}
	cg := f.h.c.groups["g"].(*classicGroup)
	if cg.state != classicPreparingRebalance {
		t.Fatalf("downgraded group is %s, want PreparingRebalance", cg.state)
	}
	f.settle()
	f.h.checkReplay()
}

// TestConsumerMigrationPolicy: what each group.consumer.migration.policy
// refuses, with Kafka's errors.
func TestConsumerMigrationPolicy(t *testing.T) {
	set := func(f *fleet, p MigrationPolicy) { f.h.c.setConsumerMigrationPolicy("g", &p) }
	t.Run("no upgrade", func(t *testing.T) {
		for _, p := range []MigrationPolicy{MigrationDowngrade, MigrationDisabled} {
			f := stableClassicFleet(t)
			set(f, p)
			if r := f.h.hb(joinReq("g", "c-n0", "a")); r.ErrorCode != kerr.GroupIDNotFound.Code {
				t.Fatalf("%s: consumer join on a classic group: %v", p, kerr.ErrorForCode(r.ErrorCode))
			}
			if f.kind() != GroupKindClassic {
				t.Fatal("converted")
			}
		}
	})
	t.Run("disabled refuses classic joins", func(t *testing.T) {
		f := stableClassicFleet(t)
		f.settle()
		f.add("n0", false, false)
		f.settle()
		set(f, MigrationDisabled)
		k := &fleetClient{owned: map[string]bool{}}
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version, req.Group, req.ProtocolType = 9, "g", "consumer"
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 20000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: k.subscription()}}
		o := f.h.commit(f.h.c.joinGroup(f.h.now, 98, ClientInfo{}, req))
		if code := o.Responses[0].Msg.(*kmsg.JoinGroupResponse).ErrorCode; code != kerr.InconsistentGroupProtocol.Code {
			t.Fatalf("classic join under disabled: %v", kerr.ErrorForCode(code))
		}
	})
	t.Run("no downgrade", func(t *testing.T) {
		f := stableClassicFleet(t)
		nc := f.add("n0", false, false)
		f.settle()
		set(f, MigrationUpgrade)
		f.leave(nc)
		if f.kind() != GroupKindConsumer {
			t.Fatalf("downgraded under upgrade-only: %s", f.kind())
		}
		f.settle()
		f.h.checkReplay()
	})
	t.Run("custom assignor", func(t *testing.T) {
		f := stableClassicFleet(t)
		cg := f.h.c.groups["g"].(*classicGroup)
		m := cg.members[f.clients[0].id]
		a := kmsg.ConsumerMemberAssignment{Version: 3, UserData: []byte{1}}
		m.assignment = a.AppendTo(nil)
		if r := f.h.hb(joinReq("g", "c-n0", "a")); r.ErrorCode != kerr.GroupIDNotFound.Code {
			t.Fatalf("upgrade with assignment user data: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	})
}

// TestConsumerMigrationBridgeErrors: the bridged SyncGroup, Heartbeat,
// OffsetCommit and LeaveGroup answer Kafka's errors for members the group
// does not hold as classic members or at another generation.
func TestConsumerMigrationBridgeErrors(t *testing.T) {
	f := stableClassicFleet(t)
	f.add("n0", false, false)
	f.settle()
	k := f.clients[0]
	hb := func(member string, gen int32) int16 {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.Generation = 4, "g", member, gen
		return f.h.commit(f.h.c.heartbeat(f.h.now, 97, req)).Responses[0].Msg.(*kmsg.HeartbeatResponse).ErrorCode
	}
	for _, c := range []struct {
		member string
		gen    int32
		want   int16
	}{
		{k.id, k.gen, 0},
		{k.id, k.gen - 1, kerr.IllegalGeneration.Code},
		{"nobody", 1, kerr.UnknownMemberID.Code},
		{"c-n0", f.clients[2].gen, kerr.UnknownMemberID.Code}, // not a classic member
	} {
		if got := hb(c.member, c.gen); got != c.want {
			t.Fatalf("heartbeat %s@%d: %v, want %v", c.member, c.gen, kerr.ErrorForCode(got), kerr.ErrorForCode(c.want))
		}
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Version, sync.Group, sync.MemberID, sync.Generation = 5, "g", k.id, k.gen
	pt, pn := "consumer", "roundrobin"
	sync.ProtocolType, sync.Protocol = &pt, &pn
	if code := f.h.commit(f.h.c.syncGroup(f.h.now, 96, sync)).Responses[0].Msg.(*kmsg.SyncGroupResponse).ErrorCode; code != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("sync with another protocol: %v", kerr.ErrorForCode(code))
	}
	commit := func(member string, gen int32, version int16) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.MemberID, req.Generation = version, "g", member, gen
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "a", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
		d, o := f.h.c.decideOffsetCommit(f.h.now, req)
		f.h.commit(o)
		return d.ErrorCode
	}
	if code := commit(k.id, k.gen, 7); code != 0 {
		t.Fatalf("classic member commit v7: %v", kerr.ErrorForCode(code))
	}
	if code := commit(k.id, k.gen+1, 7); code != kerr.IllegalGeneration.Code {
		t.Fatalf("classic member commit at another generation: %v", kerr.ErrorForCode(code))
	}
	if code := commit("c-n0", f.clients[2].gen, 8); code != kerr.UnsupportedVersion.Code {
		t.Fatalf("consumer member commit v8: %v", kerr.ErrorForCode(code))
	}
	leave := kmsg.NewPtrLeaveGroupRequest()
	leave.Version, leave.Group = 5, "g"
	leave.Members = []kmsg.LeaveGroupRequestMember{{MemberID: "c-n0"}, {MemberID: "nobody"}}
	resp := f.h.commit(f.h.c.leaveGroup(f.h.now, 95, leave)).Responses[0].Msg.(*kmsg.LeaveGroupResponse)
	for _, m := range resp.Members {
		if m.ErrorCode != kerr.UnknownMemberID.Code {
			t.Fatalf("leave of %s: %v", m.MemberID, kerr.ErrorForCode(m.ErrorCode))
		}
	}
	f.h.checkReplay()
}

// TestConsumerMemberClassicTag: a classic member's record carries Kafka's
// tagged field 0 (ClassicMemberMetadata, a nullable struct: presence byte
// 1, int32 session timeout, compact
// array of {compact string name, compact bytes metadata, tags}, tags) and
// decodes back; a consumer-protocol member's has no tag.
func TestConsumerMemberClassicTag(t *testing.T) {
	v := records.ConsumerGroupMemberMetadataValue{ClientID: "c", ClientHost: "h", SubscribedTopicNames: []string{"a"}, RebalanceTimeoutMs: 5,
		Classic: &records.ClassicMemberMetadata{SessionTimeoutMs: 45000, SupportedProtocols: []records.ClassicProtocol{{Name: "range", Metadata: []byte{0, 3}}}}}
	_, b := records.EncodeRecord(records.Record{Key: records.ConsumerGroupMemberMetadataKey{GroupID: "g", MemberID: "m"}, Value: v})
	body := []byte{1, 0, 0, 0xaf, 0xc8, 2, 6, 'r', 'a', 'n', 'g', 'e', 3, 0, 3, 0, 0}
	tail := append([]byte{1, 0, byte(len(body))}, body...) // one tag: 0, its size, its body
	if !strings.HasSuffix(string(b), string(tail)) {
		t.Fatalf("value %x does not end with the tag %x", b, tail)
	}
	k, _ := records.EncodeRecord(records.Record{Key: records.ConsumerGroupMemberMetadataKey{GroupID: "g", MemberID: "m"}})
	rec, err := records.DecodeRecord(k, b)
	if err != nil {
		t.Fatal(err)
	}
	got := rec.Value.(records.ConsumerGroupMemberMetadataValue)
	if !got.Classic.Equal(v.Classic) {
		t.Fatalf("decoded %+v", got.Classic)
	}
	v.Classic = nil
	_, b = records.EncodeRecord(records.Record{Key: records.ConsumerGroupMemberMetadataKey{GroupID: "g", MemberID: "m"}, Value: v})
	if b[len(b)-1] != 0 {
		t.Fatalf("consumer-protocol member has tags: %x", b)
	}
}

// TestConsumerMigrationStaticReplacementDowngrades: a classic static
// member taking the instance id of the last consumer-protocol member (an
// empty member id, no leave first) downgrades the group at once, and the
// joiner inherits the replaced member's target (Kafka's
// validateOnlineDowngradeWithReplacedMember).
func TestConsumerMigrationStaticReplacementDowngrades(t *testing.T) {
	f := stableClassicFleet(t)
	inst := "i1"
	req := joinReq("g", "c-static", "a", "b")
	req.InstanceID = &inst
	if r := f.h.hb(req); r.ErrorCode != 0 {
		t.Fatalf("static consumer join: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	for _, c := range f.clients {
		f.leave(c)
	}
	g := f.h.group("g")
	if g == nil || len(g.members) != 1 || g.members["c-static"] == nil {
		t.Fatalf("want only the static consumer member left: %s", f.h.c.Dump())
	}
	k := &fleetClient{owned: map[string]bool{}}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.ProtocolType, join.InstanceID = 9, "g", "consumer", &inst
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 10000, 20000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: k.subscription()}}
	o := f.h.commit(f.h.c.joinGroup(f.h.now, 90, ClientInfo{ClientID: "k"}, join))
	r := o.Responses[0].Msg.(*kmsg.JoinGroupResponse)
	if r.ErrorCode != 0 {
		t.Fatalf("static classic join: %v", kerr.ErrorForCode(r.ErrorCode))
	}
	cg, ok := f.h.c.groups["g"].(*classicGroup)
	if !ok {
		t.Fatalf("not downgraded: %T", f.h.c.groups["g"])
	}
	m := cg.members[r.MemberID]
	if m == nil || cg.static[inst] != r.MemberID {
		t.Fatalf("joiner %s not the static member of the classic group", r.MemberID)
	}
	a, err := userdata.DecodeAssignment(cg.durable.Members[0].Assignment)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tp := range a.Topics {
		n += len(tp.Partitions)
	}
	// The join computed the target of the epoch the leaves bumped: the
	// only member's, every partition.
	if n != 6 {
		t.Fatalf("joiner's stored assignment has %d partitions, want the replaced member's target of 6", n)
	}
	f.h.checkReplay()
}

// TestConsumerAssignmentInterval: with Kafka 4.4's default assignment
// interval (1 s), the first target of a new group is computed at once;
// members joining within the interval after it reconcile toward the
// current target (nothing for them) and share one assignor run, made by
// the first heartbeat after the interval. A classic member at the
// assignment epoch is not told to rejoin by a group epoch bump alone
// while the interval holds the target back (Kafka 4.4 compares the
// assignment epoch), and is once a new target is due, so that its
// JoinGroup computes it.
func TestConsumerAssignmentInterval(t *testing.T) {
	cfg := consumerTestConfig()
	cfg.Consumer.AssignmentIntervalMs = 0
	h := newCHarness(t, cfg)
	h.now = 1_000_000 // a zero assignment timestamp means none
	r1 := h.hb(joinReq("g", "m1", "a"))
	if g := h.group("g"); r1.MemberEpoch != 1 || g.assignmentEpoch != 1 || len(g.members["m1"].assigned) != 4 {
		t.Fatalf("first member: epoch %d, assignment epoch %d, %d partitions", r1.MemberEpoch, g.assignmentEpoch, len(g.members["m1"].assigned))
	}
	for _, id := range []string{"m2", "m3"} {
		h.now += 100
		r := h.hb(joinReq("g", id, "a"))
		if g := h.group("g"); r.MemberEpoch != 1 || g.assignmentEpoch != 1 || len(g.members[id].assigned) != 0 {
			t.Fatalf("%s within the interval: epoch %d, group %d, assignment epoch %d, %d partitions",
				id, r.MemberEpoch, g.groupEpoch, g.assignmentEpoch, len(g.members[id].assigned))
		}
	}
	h.now += 799 // 999 ms after the first target
	h.hb(ackReq("g", "m1", 1, r1.Assignment.Topics))
	if g := h.group("g"); g.assignmentEpoch != 1 {
		t.Fatalf("target computed within the interval: assignment epoch %d", g.assignmentEpoch)
	}
	h.now++
	h.hb(ackReq("g", "m1", 1, r1.Assignment.Topics))
	g := h.group("g")
	if g.groupEpoch != 3 || g.assignmentEpoch != 3 || len(g.target["m2"]) == 0 || len(g.target["m3"]) == 0 {
		t.Fatalf("after the interval: group %d, assignment epoch %d, targets %v", g.groupEpoch, g.assignmentEpoch, g.target)
	}
	for _, rec := range h.log {
		if v, ok := rec.Value.(records.ConsumerGroupTargetAssignmentMetadataValue); ok && v.AssignmentEpoch == 2 {
			t.Fatal("a target was computed for epoch 2: the joins did not share one assignor run")
		}
	}
	h.checkReplay()

	// A target that gave no one anything (its topic did not exist yet)
	// does not hold the next one back.
	h.now += 5000
	h.hb(joinReq("e", "e1", "later"))
	if g := h.group("e"); g.assignmentEpoch != 1 || len(g.target["e1"]) != 0 {
		t.Fatalf("empty target: assignment epoch %d, target %v", g.assignmentEpoch, g.target["e1"])
	}
	h.now += 10
	h.setTopics(append(h.topics, TopicMetadata{Name: "later", ID: topicID("later"), Partitions: 2})...)
	if r := h.hb(ackReq("e", "e1", 1, nil)); fmtAssignment(r.Assignment) != "later:[0 1]" {
		t.Fatalf("the new topic was not assigned at once: %s (epoch %d)", fmtAssignment(r.Assignment), r.MemberEpoch)
	}
	h.checkReplay()

	// Classic members in a consumer group.
	f := newFleetInterval(t, 3, 0)
	f.add("k0", true, true)
	f.add("k1", true, true)
	f.settle()
	f.add("n0", false, false)
	f.settle()
	f.add("n1", false, false)
	f.settle()
	for i := 0; i < 20 && !f.settled(); i++ { // no time passes
		for _, c := range f.clients {
			f.step(c)
		}
	}
	k := f.clients[0]
	g = f.h.group("g")
	if !f.settled() || g.groupEpoch != g.assignmentEpoch || k.gen != g.assignmentEpoch {
		t.Fatalf("not settled: group %d, assignment epoch %d, k0 at %d", g.groupEpoch, g.assignmentEpoch, k.gen)
	}
	if f.h.now < g.assignmentTimestamp+1000 {
		f.h.now = g.assignmentTimestamp + 1000
	}
	hb := func() int16 {
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.Generation = 4, "g", k.id, k.gen
		return f.h.commit(f.h.c.heartbeat(f.h.now, 99, req)).Responses[0].Msg.(*kmsg.HeartbeatResponse).ErrorCode
	}
	// A join right after the interval computes a target at once; a leave
	// within the interval after it waits.
	f.add("n2", false, false)
	f.step(f.clients[len(f.clients)-1])
	if g.assignmentTimestamp != f.h.now || g.assignmentEpoch != g.groupEpoch {
		t.Fatalf("a join after the interval did not compute the target: assignment epoch %d at %d, group %d, now %d",
			g.assignmentEpoch, g.assignmentTimestamp, g.groupEpoch, f.h.now)
	}
	for i := 0; i < 20 && !f.settled(); i++ {
		for _, c := range f.clients {
			f.step(c)
		}
	}
	if !f.settled() || k.gen != g.assignmentEpoch || g.members[k.id].state != memberStable {
		t.Fatalf("k0 did not reach the assignment epoch %d (at %d, phase %d)", g.assignmentEpoch, k.gen, k.phase)
	}
	f.leave(f.clients[3])
	if g.groupEpoch <= g.assignmentEpoch {
		t.Fatalf("a leave did not bump the group epoch (%d, assignment %d)", g.groupEpoch, g.assignmentEpoch)
	}
	if code := hb(); code != 0 {
		m := g.members[k.id]
		t.Fatalf("classic heartbeat while the interval holds the target back: %v (member epoch %d state %v, group %d, assignment %d at %d, now %d)",
			kerr.ErrorForCode(code), m.epoch, m.state, g.groupEpoch, g.assignmentEpoch, g.assignmentTimestamp, f.h.now)
	}
	// Due: the next consumer-protocol heartbeat computes it, then the
	// classic member is behind the assignment epoch.
	f.h.now += 1000
	if code := hb(); code != 0 {
		t.Fatalf("classic heartbeat once a target is due, before a consumer heartbeat: %v", kerr.ErrorForCode(code))
	}
	f.step(f.clients[2])
	if g.assignmentEpoch != g.groupEpoch {
		t.Fatalf("the consumer heartbeat did not compute the due target (group %d, assignment %d)", g.groupEpoch, g.assignmentEpoch)
	}
	if code := hb(); code != kerr.RebalanceInProgress.Code {
		t.Fatalf("classic heartbeat behind the assignment epoch: %v", kerr.ErrorForCode(code))
	}
	f.settle()
	// Classic members only (no downgrade allowed): a due target makes
	// their heartbeats ask for the JoinGroup that computes it.
	up := MigrationUpgrade
	f.h.c.setConsumerMigrationPolicy("g", &up)
	f.leave(f.clients[2])
	f.leave(f.clients[4])
	f.h.now += 1000
	if code := hb(); g.hasConsumerProtocolMember() || code != kerr.RebalanceInProgress.Code {
		t.Fatalf("classic-only group with a due target: heartbeat %v", kerr.ErrorForCode(code))
	}
	f.settle()
	if f.kind() != GroupKindConsumer {
		t.Fatalf("group is %s", f.kind())
	}
	f.h.checkReplay()
}
