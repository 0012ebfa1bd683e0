package core

import (
	"fmt"
	"testing"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func wantCode(t *testing.T, resp *kmsg.ConsumerGroupHeartbeatResponse, want *kerr.Error) {
	t.Helper()
	if resp.ErrorCode != want.Code {
		msg := ""
		if resp.ErrorMessage != nil {
			msg = *resp.ErrorMessage
		}
		t.Fatalf("error %s (%s), want %s", kerr.ErrorForCode(resp.ErrorCode), msg, want)
	}
}

// TestConsumerJoinAndRevocation: one member gets everything; a second
// joins, the first must revoke before the second gets the moved
// partitions (UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS), then both are
// stable. Modelled on GroupMetadataManagerTest's reconciliation tests.
func TestConsumerJoinAndRevocation(t *testing.T) {
	h := newCHarness(t, consumerTestConfig())
	r1 := h.hb(joinReq("g", "m1", "a", "b"))
	wantCode(t, r1, &kerr.Error{})
	if r1.MemberEpoch != 1 || fmtAssignment(r1.Assignment) != "a:[0 1 2 3] b:[0 1]" {
		t.Fatalf("m1 join: epoch %d assignment %s", r1.MemberEpoch, fmtAssignment(r1.Assignment))
	}
	if r1.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("interval %d", r1.HeartbeatIntervalMillis)
	}
	g := h.group("g")
	if g.state != ConsumerStable {
		t.Fatalf("state %s", g.state)
	}
	r2 := h.hb(joinReq("g", "m2", "a", "b"))
	// m2 joins at epoch 2; everything it is targeted is still held by m1.
	if r2.MemberEpoch != 2 || fmtAssignment(r2.Assignment) != "" {
		t.Fatalf("m2 join: epoch %d assignment %q", r2.MemberEpoch, fmtAssignment(r2.Assignment))
	}
	if s := g.members["m2"].state; s != memberUnreleasedTasks {
		t.Fatalf("m2 state %s", consumerStateName(s))
	}
	checkOwners(t, g)
	// m1 still reports everything: it is asked to revoke, stays at epoch 1.
	r1 = h.hb(ackReq("g", "m1", 1, r1.Assignment.Topics))
	if r1.MemberEpoch != 1 || fmtAssignment(r1.Assignment) != "a:[0 2] b:[0]" {
		t.Fatalf("m1 revoke: epoch %d assignment %s", r1.MemberEpoch, fmtAssignment(r1.Assignment))
	}
	if s := g.members["m1"].state; s != memberUnrevokedTasks {
		t.Fatalf("m1 state %s", consumerStateName(s))
	}
	if !h.c.hasTimer(consumerRebalanceKey("g", "m1")) {
		t.Fatal("no rebalance timer for the revoking member")
	}
	// m2 heartbeats again: the partitions are still held by m1.
	r2 = h.hb(ackReq("g", "m2", 2, nil))
	if r2.Assignment != nil {
		t.Fatalf("m2 got %s before m1 revoked", fmtAssignment(r2.Assignment))
	}
	checkOwners(t, g)
	// m1 acknowledges the revocation: it moves to epoch 2.
	r1 = h.hb(ackReq("g", "m1", 1, r1.Assignment.Topics))
	if r1.MemberEpoch != 2 || g.members["m1"].state != memberStable {
		t.Fatalf("m1 after revoke: epoch %d state %s", r1.MemberEpoch, consumerStateName(g.members["m1"].state))
	}
	if h.c.hasTimer(consumerRebalanceKey("g", "m1")) {
		t.Fatal("rebalance timer left after the revocation")
	}
	r2 = h.hb(ackReq("g", "m2", 2, []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}))
	if fmtAssignment(r2.Assignment) != "a:[1 3] b:[1]" || g.members["m2"].state != memberStable {
		t.Fatalf("m2 final: %s %s", fmtAssignment(r2.Assignment), consumerStateName(g.members["m2"].state))
	}
	if g.state != ConsumerStable {
		t.Fatalf("group state %s", g.state)
	}
	checkOwners(t, g)
	h.checkReplay()
}

// TestConsumerRevokeAgainKeepsEpoch: a member that acknowledges its
// revocation while a newer target asks it to revoke more stays at its
// epoch (Kafka 4.4's CurrentAssignmentBuilder reconciles an
// UNREVOKED_PARTITIONS member at its own epoch; Kafka 3.x used epoch + 1).
func TestConsumerRevokeAgainKeepsEpoch(t *testing.T) {
	h := newCHarness(t, consumerTestConfig())
	r1 := h.hb(joinReq("g", "m1", "a", "b"))
	h.hb(joinReq("g", "m2", "a", "b"))
	r1 = h.hb(ackReq("g", "m1", 1, r1.Assignment.Topics))
	g := h.group("g")
	if r1.MemberEpoch != 1 || g.members["m1"].state != memberUnrevokedTasks || fmtAssignment(r1.Assignment) != "a:[0 2] b:[0]" {
		t.Fatalf("m1 revoke: epoch %d state %s assignment %s", r1.MemberEpoch, consumerStateName(g.members["m1"].state), fmtAssignment(r1.Assignment))
	}
	// A third member moves the target on (epoch 3): a:2 goes to m3.
	h.hb(joinReq("g", "m3", "a", "b"))
	if g.assignmentEpoch != 3 {
		t.Fatalf("assignment epoch %d", g.assignmentEpoch)
	}
	// m1 revoked what it was asked to; it still owns a:2, which the new
	// target takes from it: revoking again, at its epoch 1.
	r1 = h.hb(ackReq("g", "m1", 1, r1.Assignment.Topics))
	m1 := g.members["m1"]
	if r1.MemberEpoch != 1 || m1.epoch != 1 || m1.prevEpoch != 1 || m1.state != memberUnrevokedTasks || fmtAssignment(r1.Assignment) != "a:[0] b:[0]" {
		t.Fatalf("m1 revoke again: response epoch %d, member epoch %d previous %d state %s assignment %s",
			r1.MemberEpoch, m1.epoch, m1.prevEpoch, consumerStateName(m1.state), fmtAssignment(r1.Assignment))
	}
	checkOwners(t, g)
	// Once a:2 is revoked too, m1 reaches the target epoch with a:3 back.
	r1 = h.hb(ackReq("g", "m1", 1, r1.Assignment.Topics))
	if r1.MemberEpoch != 3 || g.members["m1"].state != memberStable || fmtAssignment(r1.Assignment) != "a:[0 3] b:[0]" {
		t.Fatalf("m1 final: epoch %d state %s assignment %s", r1.MemberEpoch, consumerStateName(g.members["m1"].state), fmtAssignment(r1.Assignment))
	}
	checkOwners(t, g)
	h.checkReplay()
}

// TestConsumerLeaveAndSessionTimeout: a leave (-1) and a session timeout
// both remove the member and bump the group epoch; the remaining member
// gets the freed partitions on its next heartbeat.
func TestConsumerLeaveAndSessionTimeout(t *testing.T) {
	h := newCHarness(t, consumerTestConfig())
	h.hb(joinReq("g", "m1", "a"))
	h.hb(joinReq("g", "m2", "a"))
	h.hb(joinReq("g", "m3", "a"))
	g := h.group("g")
	epoch := g.groupEpoch
	leave := ackReq("g", "m2", -1, nil)
	r := h.hb(leave)
	wantCode(t, r, &kerr.Error{})
	if r.MemberEpoch != -1 || g.members["m2"] != nil || g.groupEpoch != epoch+1 {
		t.Fatalf("leave: epoch %d member %v group epoch %d", r.MemberEpoch, g.members["m2"], g.groupEpoch)
	}
	// m3 stops heartbeating; m1 keeps going until m3's session expires.
	for i := 0; i < 10; i++ {
		h.now += 5000
		h.commit(h.c.tick(h.now))
		m1 := g.members["m1"]
		h.hb(ackReq("g", "m1", m1.epoch, toResp(m1.assigned.set())))
	}
	if g.members["m3"] != nil {
		t.Fatal("m3 survived its session timeout")
	}
	m1 := g.members["m1"]
	if len(m1.assigned) != 4 || m1.state != memberStable || g.state != ConsumerStable {
		t.Fatalf("m1 holds %d partitions, state %s, group %s", len(m1.assigned), consumerStateName(m1.state), g.state)
	}
	checkOwners(t, g)
	h.checkReplay()
	// The last member leaves: the group is empty and can be deleted. As
	// Kafka 4.4's consumerGroupFenceMembers, the assignment epoch follows
	// the group epoch with a zero timestamp, as for a new group.
	h.hb(ackReq("g", "m1", -1, nil))
	if g.state != ConsumerEmpty {
		t.Fatalf("state %s", g.state)
	}
	if g.assignmentEpoch != g.groupEpoch || g.assignmentTimestamp != 0 {
		t.Fatalf("empty group: assignment epoch %d at %d, group epoch %d", g.assignmentEpoch, g.assignmentTimestamp, g.groupEpoch)
	}
	h.checkReplay()
	o := h.commit(h.c.deleteGroups(h.now, 99, &kmsg.DeleteGroupsRequest{Groups: []string{"g"}}))
	if code := o.Responses[0].Msg.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode; code != 0 {
		t.Fatalf("delete: %v", kerr.ErrorForCode(code))
	}
	if _, ok := h.c.groups["g"]; ok {
		t.Fatal("group still held after delete")
	}
	h.checkReplay()
}

func toResp(s partSet) []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic {
	out := []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, tp := range s.toTopicPartitions() {
		out = append(out, kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{TopicID: tp.TopicID, Partitions: tp.Partitions})
	}
	return out
}

// TestConsumerRebalanceTimeout: a member that does not revoke within its
// rebalance timeout is fenced, and its partitions go to the waiting one.
func TestConsumerRebalanceTimeout(t *testing.T) {
	h := newCHarness(t, consumerTestConfig())
	r1 := h.hb(joinReq("g", "m1", "a"))
	h.hb(joinReq("g", "m2", "a"))
	h.hb(ackReq("g", "m1", 1, r1.Assignment.Topics)) // asked to revoke; never acknowledges
	g := h.group("g")
	h.now += 20000
	h.hb(ackReq("g", "m2", 2, nil))
	h.tick(10001) // 30 s rebalance timeout since m1 was asked to revoke
	if g.members["m1"] != nil {
		t.Fatal("m1 not fenced by its rebalance timeout")
	}
	r2 := h.hb(ackReq("g", "m2", 2, nil))
	if fmtAssignment(r2.Assignment) != "a:[0 1 2 3]" {
		t.Fatalf("m2 got %s", fmtAssignment(r2.Assignment))
	}
	// The fenced member's next heartbeat is UNKNOWN_MEMBER_ID.
	wantCode(t, h.hb(ackReq("g", "m1", 1, nil)), kerr.UnknownMemberID)
	h.checkReplay()
}

// TestConsumerHeartbeatErrors: validation and fencing errors as Kafka
// 4.4's throwIfConsumerGroupHeartbeatRequestIsInvalid and
// throwIfConsumerGroupMemberEpochIsInvalid; a failed heartbeat writes
// nothing.
func TestConsumerHeartbeatErrors(t *testing.T) {
	h := newCHarness(t, consumerTestConfig())
	h.hb(joinReq("g", "m1", "a"))
	str := func(s string) *string { return &s }
	cases := []struct {
		name string
		mod  func(r *kmsg.ConsumerGroupHeartbeatRequest)
		want *kerr.Error
	}{
		{"empty member id v1", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest},
		{"empty group", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group = "" }, kerr.InvalidRequest},
		{"empty instance", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.InstanceID = str("") }, kerr.InvalidRequest},
		{"empty rack", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RackID = str("") }, kerr.InvalidRequest},
		{"no rebalance timeout", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, kerr.InvalidRequest},
		{"owned on join", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: topicID("a"), Partitions: []int32{0}}}
		}, kerr.InvalidRequest},
		{"null owned on join", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Topics = nil }, kerr.InvalidRequest},
		{"no subscription", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }, kerr.InvalidRequest},
		{"bad epoch", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest},
		{"static leave without instance", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -2 }, kerr.InvalidRequest},
		{"unknown assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = str("sticky") }, kerr.UnsupportedAssignor},
		{"invalid regex", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = str("a.(") }, kerr.InvalidRegularExpression},
		{"unknown member", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID, r.MemberEpoch = "zz", 1 }, kerr.UnknownMemberID},
		{"epoch ahead", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID, r.MemberEpoch = "m1", 5 }, kerr.FencedMemberEpoch},
		{"unknown group", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.Group, r.MemberEpoch = "nope", 1 }, kerr.GroupIDNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := joinReq("g", "new", "a")
			tc.mod(r)
			before := len(h.log)
			dump := h.c.Dump()
			wantCode(t, h.hb(r), tc.want)
			if len(h.log) != before || h.c.Dump() != dump {
				t.Fatal("a failed heartbeat changed state")
			}
		})
	}
	// v0: an empty member id at epoch 0 gets a generated one.
	r := joinReq("g", "", "a")
	r.Version = 0
	resp := h.hb(r)
	wantCode(t, resp, &kerr.Error{})
	if resp.MemberID == nil || *resp.MemberID == "" || h.group("g").members[*resp.MemberID] == nil {
		t.Fatalf("v0 join got member id %v", resp.MemberID)
	}
	// A stale epoch is accepted only as the previous epoch with owned
	// partitions inside the assignment.
	p := h.hb(joinReq("p", "m", "a"))
	sub := ackReq("p", "m", 1, p.Assignment.Topics)
	sub.SubscribedTopicNames = []string{"a", "b"}
	if r := h.hb(sub); r.MemberEpoch != 2 {
		t.Fatalf("epoch %d", r.MemberEpoch)
	}
	owned := []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{{TopicID: topicID("a"), Partitions: []int32{0}}}
	wantCode(t, h.hb(ackReq("p", "m", 1, owned)), &kerr.Error{})
	noOwned := ackReq("p", "m", 1, nil)
	noOwned.Topics = nil // not reported: cannot be checked
	wantCode(t, h.hb(noOwned), kerr.FencedMemberEpoch)
	owned[0].Partitions = []int32{9}
	wantCode(t, h.hb(ackReq("p", "m", 1, owned)), kerr.FencedMemberEpoch)
	// A streams group's id is not a consumer group.
	h.c.groups["s"] = newStreamsGroup("s")
	h.c.groups["s"].(*streamsGroup).members["x"] = newStreamsMember("x")
	wantCode(t, h.hb(joinReq("s", "m", "a")), kerr.GroupIDNotFound)
}

// TestConsumerStaticMembers: a static member leaving with -2 keeps its
// partitions; a new incarnation takes them over; a second instance with
// the same id is refused while the first is active.
func TestConsumerStaticMembers(t *testing.T) {
	h := newCHarness(t, consumerTestConfig())
	inst := "i1"
	j := joinReq("g", "m1", "a")
	j.InstanceID = &inst
	r := h.hb(j)
	if fmtAssignment(r.Assignment) != "a:[0 1 2 3]" {
		t.Fatalf("join %s", fmtAssignment(r.Assignment))
	}
	j2 := joinReq("g", "m1b", "a")
	j2.InstanceID = &inst
	wantCode(t, h.hb(j2), kerr.UnreleasedInstanceID)
	// A heartbeat under the instance id with another member id is fenced.
	hbOther := ackReq("g", "mX", 1, nil)
	hbOther.InstanceID = &inst
	wantCode(t, h.hb(hbOther), kerr.FencedInstanceID)
	leave := ackReq("g", "m1", -2, nil)
	leave.InstanceID = &inst
	lr := h.hb(leave)
	wantCode(t, lr, &kerr.Error{})
	g := h.group("g")
	if lr.MemberEpoch != -2 || g.members["m1"] == nil || len(g.members["m1"].assigned) != 4 {
		t.Fatal("static leave did not keep the member and its partitions")
	}
	r = h.hb(j2)
	wantCode(t, r, &kerr.Error{})
	if g.members["m1"] != nil || fmtAssignment(r.Assignment) != "a:[0 1 2 3]" {
		t.Fatalf("replacement: old member kept=%v assignment %s", g.members["m1"] != nil, fmtAssignment(r.Assignment))
	}
	checkOwners(t, g)
	h.checkReplay()
}

// TestConsumerSubscriptionAndMetadataChange: changing the subscription or
// a subscribed topic's partition count bumps the group epoch and
// recomputes the target; an unrelated heartbeat does not.
func TestConsumerSubscriptionAndMetadataChange(t *testing.T) {
	h := newCHarness(t, consumerTestConfig())
	calls := 0
	h.c.cfg.Consumer.Assignors = []NamedPartitionAssignor{{Name: "uniform", Assignor: rrAssignor{calls: &calls}}}
	r := h.hb(joinReq("g", "m1", "a"))
	g := h.group("g")
	e := g.groupEpoch
	h.hb(ackReq("g", "m1", r.MemberEpoch, r.Assignment.Topics))
	if g.groupEpoch != e || calls != 1 {
		t.Fatalf("steady heartbeat bumped epoch %d->%d or ran the assignor (%d runs)", e, g.groupEpoch, calls)
	}
	sub := ackReq("g", "m1", r.MemberEpoch, r.Assignment.Topics)
	sub.SubscribedTopicNames = []string{"a", "b"}
	r = h.hb(sub)
	if g.groupEpoch != e+1 || fmtAssignment(r.Assignment) != "a:[0 1 2 3] b:[0 1]" {
		t.Fatalf("subscription change: epoch %d assignment %s", g.groupEpoch, fmtAssignment(r.Assignment))
	}
	h.setTopics(TopicMetadata{Name: "a", ID: topicID("a"), Partitions: 6}, TopicMetadata{Name: "b", ID: topicID("b"), Partitions: 2})
	r = h.hb(ackReq("g", "m1", r.MemberEpoch, r.Assignment.Topics))
	if g.groupEpoch != e+2 || fmtAssignment(r.Assignment) != "a:[0 1 2 3 4 5] b:[0 1]" {
		t.Fatalf("partition change: epoch %d assignment %s", g.groupEpoch, fmtAssignment(r.Assignment))
	}
	h.checkReplay()
}

// TestConsumerAssignorChoiceAndFailure: the assignor most members name is
// used; an assignor error fails the heartbeat without writing anything.
func TestConsumerAssignorChoiceAndFailure(t *testing.T) {
	h := newCHarness(t, consumerTestConfig())
	h.c.cfg.Consumer.Assignors = append(h.c.cfg.Consumer.Assignors, NamedPartitionAssignor{Name: "broken", Assignor: failingAssignor{}})
	j := joinReq("g", "m1", "a")
	name := "range"
	j.ServerAssignor = &name
	h.hb(j)
	if got := h.c.preferredConsumerAssignor(h.group("g")).Name; got != "range" {
		t.Fatalf("preferred assignor %q", got)
	}
	d := h.c.consumerGroupDescribe(&kmsg.ConsumerGroupDescribeRequest{Version: 1, Groups: []string{"g"}})
	if d.Groups[0].AssignorName != "range" {
		t.Fatalf("describe assignor %q", d.Groups[0].AssignorName)
	}
	broken := "broken"
	j2 := joinReq("g", "m2", "a")
	j2.ServerAssignor = &broken
	j3 := joinReq("g", "m3", "a")
	j3.ServerAssignor = &broken
	h.hb(j2) // range (1) vs broken (1): the earlier listed wins
	before := h.c.Dump()
	wantCode(t, h.hb(j3), kerr.UnknownServerError)
	if h.c.Dump() != before {
		t.Fatal("a failed assignor run changed state")
	}
}

// TestConsumerOffsetFencing: commits and fetches check the member epoch
// (STALE_MEMBER_EPOCH); an older epoch may commit partitions held since
// then (KIP-1251); admin commits need an empty group.
func TestConsumerOffsetFencing(t *testing.T) {
	h := newCHarness(t, consumerTestConfig())
	h.hb(joinReq("g", "m1", "a"))
	h.hb(joinReq("g", "m2", "a"))
	g := h.group("g")
	m1 := g.members["m1"]
	commit := func(member string, epoch int32, version int16, parts ...int32) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = version
		req.Group, req.MemberID, req.Generation = "g", member, epoch
		tp := kmsg.NewOffsetCommitRequestTopic()
		tp.Topic = "a"
		for _, p := range parts {
			pp := kmsg.NewOffsetCommitRequestTopicPartition()
			pp.Partition = p
			tp.Partitions = append(tp.Partitions, pp)
		}
		req.Topics = append(req.Topics, tp)
		d, o := h.c.decideOffsetCommit(h.now, req)
		h.commit(o)
		return d.ErrorCode
	}
	if code := commit("m1", m1.epoch, 9, 0); code != 0 {
		t.Fatalf("own epoch: %v", kerr.ErrorForCode(code))
	}
	if code := commit("m1", m1.epoch+1, 9, 0); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("future epoch: %v", kerr.ErrorForCode(code))
	}
	if code := commit("m1", m1.epoch, 8, 0); code != kerr.UnsupportedVersion.Code {
		t.Fatalf("v8: %v", kerr.ErrorForCode(code))
	}
	if code := commit("zz", 1, 9, 0); code != kerr.UnknownMemberID.Code {
		t.Fatalf("unknown: %v", kerr.ErrorForCode(code))
	}
	if code := commit("", -1, 9, 0); code != kerr.UnknownMemberID.Code {
		t.Fatalf("admin on a non-empty group: %v", kerr.ErrorForCode(code))
	}
	// m1 is revoking at epoch 1 and m2 is at epoch 2: m2 may not commit at
	// epoch 1; m1 commits at its own epoch.
	m2 := g.members["m2"]
	if code := commit("m2", m2.epoch-1, 9, 1); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("older epoch for a partition got later: %v", kerr.ErrorForCode(code))
	}
	fetch := func(member string, epoch int32) int16 {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version = 9
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group, rg.MemberID, rg.MemberEpoch = "g", &member, epoch
		req.Groups = append(req.Groups, rg)
		return h.c.decideOffsetFetch(req)[0].ErrorCode
	}
	if code := fetch("m2", m2.epoch); code != 0 {
		t.Fatalf("fetch: %v", kerr.ErrorForCode(code))
	}
	if code := fetch("m2", m2.epoch+3); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("stale fetch: %v", kerr.ErrorForCode(code))
	}
}

// TestConsumerOlderEpochCommit: after an epoch bump that keeps a
// partition, a commit at the previous epoch for it is accepted.
func TestConsumerOlderEpochCommit(t *testing.T) {
	h := newCHarness(t, consumerTestConfig())
	r := h.hb(joinReq("g", "m1", "a", "b"))
	sub := ackReq("g", "m1", r.MemberEpoch, r.Assignment.Topics)
	sub.SubscribedTopicNames = []string{"a"} // epoch 2; keeps a, revokes b
	r = h.hb(sub)
	h.hb(ackReq("g", "m1", 1, r.Assignment.Topics))
	m1 := h.group("g").members["m1"]
	if m1.epoch != 2 {
		t.Fatalf("epoch %d", m1.epoch)
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.MemberID, req.Generation = 9, "g", "m1", 1
	tp := kmsg.NewOffsetCommitRequestTopic()
	tp.Topic = "a"
	tp.Partitions = []kmsg.OffsetCommitRequestTopicPartition{{Partition: 3}}
	req.Topics = []kmsg.OffsetCommitRequestTopic{tp}
	if d, _ := h.c.decideOffsetCommit(h.now, req); d.ErrorCode != 0 {
		t.Fatalf("older epoch commit of a kept partition: %v", kerr.ErrorForCode(d.ErrorCode))
	}
	req.Topics[0].Topic = "b"
	if d, _ := h.c.decideOffsetCommit(h.now, req); d.ErrorCode != kerr.StaleMemberEpoch.Code {
		t.Fatalf("older epoch commit of a revoked partition: %v", kerr.ErrorForCode(d.ErrorCode))
	}
}

// TestConsumerCommitAssignmentEpochs: a commit at an older epoch is
// checked per partition against the epoch the member got it at, for
// partitions pending revocation too, and for classic members with
// ILLEGAL_GENERATION where consumer-protocol members get
// STALE_MEMBER_EPOCH (Kafka 4.4's ConsumerGroup.validateOffsetCommit and
// its assignment-epoch validator, KIP-1251; codes and messages as Kafka's).
func TestConsumerCommitAssignmentEpochs(t *testing.T) {
	h := newCHarness(t, consumerTestConfig())
	g := newConsumerGroup("g")
	h.c.groups["g"] = g
	m := newConsumerMember("m")
	m.epoch, m.prevEpoch, m.state = 5, 5, memberUnrevokedTasks
	a := func(p int32) topicPart { return topicPart{topicID("a"), p} }
	m.assigned = partEpochs{a(0): 3, a(1): 5}
	m.pending = partEpochs{a(2): 2}
	g.swapMember(nil, m)
	for _, classic := range []bool{false, true} {
		m.classic = nil
		stale, what := kerr.StaleMemberEpoch, "member epoch"
		if classic {
			m.classic = &records.ClassicMemberMetadata{SessionTimeoutMs: 10000}
			stale, what = kerr.IllegalGeneration, "generation id"
		}
		for _, tc := range []struct {
			epoch int32
			topic string
			part  int32
			code  int16
			msg   string
		}{
			{5, "a", 3, 0, ""},
			{6, "a", 0, stale.Code, "Received " + what + " 6 is newer than current member epoch 5."},
			{4, "a", 0, 0, ""},
			{4, "a", 1, stale.Code, "Received " + what + " 4 is older than assignment epoch 5 for partition a-1."},
			{2, "a", 2, 0, ""}, // pending revocation, got at epoch 2
			{1, "a", 2, stale.Code, "Received " + what + " 1 is older than assignment epoch 2 for partition a-2."},
			{4, "a", 3, stale.Code, "Partition a-3 is not assigned or pending revocation for member."},
			{4, "zz", 0, stale.Code, "Partition zz-0 is not assigned or pending revocation for member."},
		} {
			code, msg := h.c.validateConsumerCommit(g, "m", tc.epoch, 9, false, []OffsetCommitTopic{{Topic: tc.topic, Partitions: []int32{tc.part}}})
			if code != tc.code || msg != tc.msg {
				t.Errorf("classic=%v epoch %d %s-%d: %v %q, want %v %q", classic, tc.epoch, tc.topic, tc.part,
					kerr.ErrorForCode(code), msg, kerr.ErrorForCode(tc.code), tc.msg)
			}
		}
	}
	// OffsetCommit below v9 is refused to consumer-protocol members only.
	if code, _ := h.c.validateConsumerCommit(g, "m", 5, 8, false, nil); code != 0 {
		t.Errorf("classic member, v8: %v", kerr.ErrorForCode(code))
	}
	m.classic = nil
	if code, _ := h.c.validateConsumerCommit(g, "m", 5, 8, false, nil); code != kerr.UnsupportedVersion.Code {
		t.Errorf("consumer-protocol member, v8: %v", kerr.ErrorForCode(code))
	}
}

// TestConsumerPendingRevocationKeepsEpochs: a partition moved to pending
// revocation keeps the epoch it was assigned at, in the record (as Kafka
// 4.4 writes it) and after replay, so a commit at that older epoch for it
// is accepted while the member revokes.
func TestConsumerPendingRevocationKeepsEpochs(t *testing.T) {
	h := newCHarness(t, consumerTestConfig())
	r := h.hb(joinReq("g", "m1", "a")) // epoch 1: a-0..3 at epoch 1
	h.hb(joinReq("g", "m2", "none"))   // epoch 2, nothing moves
	h.hb(ackReq("g", "m1", r.MemberEpoch, r.Assignment.Topics))
	h.hb(joinReq("g", "m3", "a")) // epoch 3: a-1 and a-3 go to m3
	steady := ackReq("g", "m1", 2, nil)
	steady.Topics = nil // owned partitions unchanged, not sent
	h.hb(steady)
	m1 := h.group("g").members["m1"]
	if m1.state != memberUnrevokedTasks || m1.epoch != 2 || len(m1.pending) != 2 {
		t.Fatalf("m1 state %d epoch %d pending %v", m1.state, m1.epoch, m1.pending)
	}
	var last records.ConsumerGroupCurrentMemberAssignmentValue
	for _, rec := range h.log {
		if k, ok := rec.Key.(records.ConsumerGroupCurrentMemberAssignmentKey); ok && k.MemberID == "m1" && rec.Value != nil {
			last = rec.Value.(records.ConsumerGroupCurrentMemberAssignmentValue)
		}
	}
	ida := topicID("a")
	if got := formatParts(last.PartitionsPendingRevocation); got != fmt.Sprintf("%x:[1 3]@[1 1]", ida[:4]) {
		t.Fatalf("pending revocation in the record: %s", got)
	}
	h.checkReplay()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.MemberID, req.Generation = 9, "g", "m1", 1
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "a", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 3}}}}
	if d, _ := h.c.decideOffsetCommit(h.now, req); d.ErrorCode != 0 {
		t.Fatalf("older epoch commit of a partition pending revocation: %v", kerr.ErrorForCode(d.ErrorCode))
	}
}

// TestConsumerDescribeAndList: ConsumerGroupDescribe shows members,
// assignments and targets; ListGroups shows the consumer type;
// DescribeGroups answers GROUP_ID_NOT_FOUND as for any non-classic group;
// a non-empty consumer group cannot be deleted.
func TestConsumerDescribeAndList(t *testing.T) {
	h := newCHarness(t, consumerTestConfig())
	h.hb(joinReq("g", "m1", "a"))
	d := h.c.consumerGroupDescribe(&kmsg.ConsumerGroupDescribeRequest{Version: 1, Groups: []string{"g", "none"}})
	dg := d.Groups[0]
	if dg.ErrorCode != 0 || dg.State != "Stable" || dg.Epoch != 1 || dg.AssignmentEpoch != 1 || len(dg.Members) != 1 {
		t.Fatalf("describe %+v", dg)
	}
	dm := dg.Members[0]
	if dm.MemberType != 1 || dm.ClientID != "cli" || len(dm.Assignment.TopicPartitions) != 1 ||
		dm.Assignment.TopicPartitions[0].Topic != "a" || len(dm.TargetAssignment.TopicPartitions[0].Partitions) != 4 {
		t.Fatalf("member %+v", dm)
	}
	if d.Groups[1].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("unknown group: %v", d.Groups[1].ErrorCode)
	}
	l := h.c.listGroups(&kmsg.ListGroupsRequest{Version: 5, TypesFilter: []string{"consumer"}})
	if len(l.Groups) != 1 || l.Groups[0].GroupType != "consumer" || l.Groups[0].ProtocolType != "consumer" || l.Groups[0].GroupState != "Stable" {
		t.Fatalf("list %+v", l.Groups)
	}
	dgs := h.c.describeGroups(&kmsg.DescribeGroupsRequest{Version: 6, Groups: []string{"g"}})
	if dgs.Groups[0].ErrorCode != kerr.GroupIDNotFound.Code {
		t.Fatalf("describe groups %+v", dgs.Groups[0])
	}
	o := h.commit(h.c.deleteGroups(h.now, 1, &kmsg.DeleteGroupsRequest{Groups: []string{"g"}}))
	if code := o.Responses[0].Msg.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode; code != kerr.NonEmptyGroup.Code {
		t.Fatalf("delete non-empty: %v", kerr.ErrorForCode(code))
	}
}

// TestConsumerLoadedSchedulesTimers: after a fail-over the members get
// session timers, and a revoking member its rebalance timer.
func TestConsumerLoadedSchedulesTimers(t *testing.T) {
	h := newCHarness(t, consumerTestConfig())
	r := h.hb(joinReq("g", "m1", "a"))
	h.hb(joinReq("g", "m2", "a"))
	h.hb(ackReq("g", "m1", 1, r.Assignment.Topics))
	fresh, err := replayLog(h.cfg, h.log)
	if err != nil {
		t.Fatal(err)
	}
	fresh.Loaded(h.now)
	fresh.Commit()
	for _, key := range []TimerKey{consumerSessionKey("g", "m1"), consumerSessionKey("g", "m2"), consumerRebalanceKey("g", "m1")} {
		if !fresh.hasTimer(key) {
			t.Fatalf("no timer %s after load; have %v", key, fresh.TimerKeys())
		}
	}
	if fresh.hasTimer(consumerRebalanceKey("g", "m2")) {
		t.Fatal("a non-revoking member got a rebalance timer")
	}
}

// TestConsumerEmptyClassicConverts: a consumer join on an empty classic
// (offsets-only) group converts it; a classic join on an empty consumer
// group converts back; a non-empty consumer group refuses a classic join
// whose subscription is malformed.
func TestConsumerEmptyClassicConverts(t *testing.T) {
	h := newCHarness(t, consumerTestConfig())
	h.c.groups["g"] = newClassicGroup("g")
	r := h.hb(joinReq("g", "m1", "a"))
	wantCode(t, r, &kerr.Error{})
	if h.group("g") == nil {
		t.Fatal("not converted")
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Version, join.Group, join.ProtocolType = 9, "g", "consumer"
	join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = 30000, 30000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0}}}
	o := h.commit(h.c.joinGroup(h.now, 7, ClientInfo{}, join))
	if code := o.Responses[0].Msg.(*kmsg.JoinGroupResponse).ErrorCode; code != kerr.InconsistentGroupProtocol.Code {
		t.Fatalf("malformed classic join on a non-empty consumer group: %v", kerr.ErrorForCode(code))
	}
	h.hb(ackReq("g", "m1", -1, nil))
	o = h.commit(h.c.joinGroup(h.now, 8, ClientInfo{}, join))
	if _, ok := h.c.groups["g"].(*classicGroup); !ok {
		t.Fatalf("empty consumer group not converted by a classic join: %T", h.c.groups["g"])
	}
	h.checkReplay()
}

// TestConsumerRejoinWithEpochZero: a member that lost track (fenced on its
// side) rejoins with epoch 0 under its member id; as in Kafka after
// KAFKA-19233 it is accepted whatever its epoch, gets its assignment again,
// and a revocation it no longer owns completes at once.
func TestConsumerRejoinWithEpochZero(t *testing.T) {
	h := newCHarness(t, consumerTestConfig())
	r1 := h.hb(joinReq("g", "m1", "a"))
	h.hb(joinReq("g", "m2", "a"))
	h.hb(ackReq("g", "m1", 1, r1.Assignment.Topics)) // m1 asked to revoke a:1,3
	g := h.group("g")
	if g.members["m1"].state != memberUnrevokedTasks {
		t.Fatalf("m1 state %s", consumerStateName(g.members["m1"].state))
	}
	r := h.hb(joinReq("g", "m1", "a")) // rejoin owning nothing
	wantCode(t, r, &kerr.Error{})
	if r.MemberEpoch != 2 || fmtAssignment(r.Assignment) != "a:[0 2]" || g.members["m1"].state != memberStable {
		t.Fatalf("rejoin: epoch %d assignment %s state %s", r.MemberEpoch, fmtAssignment(r.Assignment), consumerStateName(g.members["m1"].state))
	}
	r2 := h.hb(ackReq("g", "m2", 2, nil))
	if fmtAssignment(r2.Assignment) != "a:[1 3]" {
		t.Fatalf("m2 got %s", fmtAssignment(r2.Assignment))
	}
	checkOwners(t, g)
	h.checkReplay()
}
