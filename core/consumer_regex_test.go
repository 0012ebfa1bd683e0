package core

import (
	"slices"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Regular-expression subscriptions, after Kafka 4.4's
// GroupMetadataManagerTest (testConsumerGroupMemberJoinsWithRegex...,
// testConsumerGroupMemberUpdatesRegex..., testRegexRefresh...).

func regexHarness(t *testing.T) *cHarness {
	h := newCHarness(t, consumerTestConfig())
	h.now = 1_000_000
	h.setTopics(TopicMetadata{Name: "rx-1", ID: topicID("rx-1"), Partitions: 2},
		TopicMetadata{Name: "rx-2", ID: topicID("rx-2"), Partitions: 2},
		TopicMetadata{Name: "other", ID: topicID("other"), Partitions: 1},
		TopicMetadata{Name: "xrx-3", ID: topicID("xrx-3"), Partitions: 1})
	return h
}

func regexJoin(group, member, regex string, topics ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	r := joinReq(group, member, topics...)
	if len(topics) == 0 {
		r.SubscribedTopicNames = nil
	}
	r.SubscribedTopicRegex = &regex
	return r
}

// hbAs is hb with the client's DESCRIBE rights.
func (h *cHarness) hbAs(req *kmsg.ConsumerGroupHeartbeatRequest, describable func(string) bool) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	h.next++
	o := h.commit(h.c.consumerGroupHeartbeat(h.now, h.next, ClientInfo{ClientID: "cli", DescribableTopic: describable}, req))
	return o.Responses[0].Msg.(*kmsg.ConsumerGroupHeartbeatResponse)
}

// settleMember heartbeats member (reporting what it holds) a few times and
// returns its epoch and assignment as fmtAssignment prints it.
func (h *cHarness) settleMember(group, member string) (int32, string) {
	h.t.Helper()
	owned := func() []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic {
		var out []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic
		for _, tp := range h.group(group).members[member].assigned.toTopicPartitions() {
			out = append(out, kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{TopicID: tp.TopicID, Partitions: tp.Partitions})
		}
		return out
	}
	for range 5 {
		m := h.group(group).members[member]
		if r := h.hb(ackReq(group, member, m.epoch, owned())); r.ErrorCode != 0 {
			h.t.Fatalf("heartbeat: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}
	return h.group(group).members[member].epoch, fmtAssignment(&kmsg.ConsumerGroupHeartbeatResponseAssignment{Topics: owned()})
}

func regexRecords(recs []records.Record) []string {
	var out []string
	for _, r := range recs {
		if k, ok := r.Key.(records.ConsumerGroupRegularExpressionKey); ok {
			if r.Value == nil {
				out = append(out, k.RegularExpression+"=<tombstone>")
				continue
			}
			out = append(out, k.RegularExpression+"="+strings.Join(r.Value.(records.ConsumerGroupRegularExpressionValue).Topics, ","))
		}
	}
	return out
}

func TestConsumerRegexJoinResolvesAfterTheResponse(t *testing.T) {
	h := regexHarness(t)
	r := h.hb(regexJoin("g", "m1", "rx-.*"))
	if r.ErrorCode != 0 || r.MemberEpoch != 1 || fmtAssignment(r.Assignment) != "" {
		t.Fatalf("join: code %d epoch %d assignment %q", r.ErrorCode, r.MemberEpoch, fmtAssignment(r.Assignment))
	}
	// The join bumped to 1 and got the empty target; the resolution that
	// followed it (full-name match: not "xrx-3") bumped to 2.
	if got := regexRecords(h.log); !slices.Equal(got, []string{"rx-.*=rx-1,rx-2"}) {
		t.Fatalf("regex records %v", got)
	}
	g := h.group("g")
	if g.groupEpoch != 2 || g.assignmentEpoch != 1 {
		t.Fatalf("epochs: group %d assignment %d", g.groupEpoch, g.assignmentEpoch)
	}
	epoch, got := h.settleMember("g", "m1")
	if epoch != 2 || got != "rx-1:[0 1] rx-2:[0 1]" {
		t.Fatalf("settled at epoch %d with %q", epoch, got)
	}
	h.checkReplay()
}

func TestConsumerRegexInvalidIsRefused(t *testing.T) {
	h := regexHarness(t)
	before := len(h.log)
	r := h.hb(regexJoin("g", "m1", "rx-("))
	if r.ErrorCode != kerr.InvalidRegularExpression.Code || r.ErrorMessage == nil || !strings.Contains(*r.ErrorMessage, "rx-(") {
		t.Fatalf("code %d message %v", r.ErrorCode, r.ErrorMessage)
	}
	if len(h.log) != before || h.group("g") != nil {
		t.Fatalf("a refused join wrote %d records", len(h.log)-before)
	}
}

func TestConsumerRegexUnionWithNamesAndAuthorization(t *testing.T) {
	h := regexHarness(t)
	noRx2 := func(topic string) bool { return topic != "rx-2" }
	r := h.hbAs(regexJoin("g", "m1", "rx-.*", "other"), noRx2)
	if r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	if got := regexRecords(h.log); !slices.Equal(got, []string{"rx-.*=rx-1"}) {
		t.Fatalf("regex records %v (rx-2 is not describable)", got)
	}
	_, got := h.settleMember("g", "m1")
	if got != "other:[0] rx-1:[0 1]" {
		t.Fatalf("assignment %q", got)
	}
	// A refused match keeps the group due: once the client may DESCRIBE
	// rx-2 (the host's view caught up), the next resolution after the
	// minimum interval takes it, with no topic change in between.
	h.now += 10_001
	m := h.group("g").members["m1"]
	h.hbAs(ackReq("g", "m1", m.epoch, nil), nil)
	if got := regexRecords(h.log); got[len(got)-1] != "rx-.*=rx-1,rx-2" {
		t.Fatalf("regex records %v", got)
	}
	if _, got := h.settleMember("g", "m1"); got != "other:[0] rx-1:[0 1] rx-2:[0 1]" {
		t.Fatalf("assignment after rx-2 became describable %q", got)
	}
	h.checkReplay()
}

func TestConsumerRegexRefreshOnNewTopics(t *testing.T) {
	h := regexHarness(t)
	h.hb(regexJoin("g", "m1", "rx-.*"))
	h.settleMember("g", "m1")
	h.setTopics(append(h.topics, TopicMetadata{Name: "rx-9", ID: topicID("rx-9"), Partitions: 1})...)
	// Within 10 s of the last resolution nothing is resolved again.
	h.now += 5_000
	n := len(regexRecords(h.log))
	h.settleMember("g", "m1")
	if len(regexRecords(h.log)) != n {
		t.Fatalf("resolved again within the minimum interval: %v", regexRecords(h.log))
	}
	h.now += 6_000
	_, got := h.settleMember("g", "m1")
	if recs := regexRecords(h.log); recs[len(recs)-1] != "rx-.*=rx-1,rx-2,rx-9" {
		t.Fatalf("regex records %v", recs)
	}
	if got != "rx-1:[0 1] rx-2:[0 1] rx-9:[0]" {
		t.Fatalf("assignment after the new topic %q", got)
	}
	// No topic change: a heartbeat later than the minimum interval
	// resolves nothing.
	h.now += 20_000
	n = len(regexRecords(h.log))
	h.settleMember("g", "m1")
	if len(regexRecords(h.log)) != n {
		t.Fatalf("resolved again without a topic change")
	}
	h.checkReplay()
}

func TestConsumerRegexSharedThenTombstoned(t *testing.T) {
	h := regexHarness(t)
	h.hb(regexJoin("g", "m1", "rx-.*"))
	h.hb(regexJoin("g", "m2", "rx-.*"))
	if got := regexRecords(h.log); len(got) != 1 {
		t.Fatalf("a regex already resolved is resolved again: %v", got)
	}
	r := h.hb(ackReq("g", "m1", -1, nil))
	if r.ErrorCode != 0 || len(h.group("g").regexes) != 1 {
		t.Fatalf("m1 leaving dropped the regex m2 still uses")
	}
	// m2 changes its regex: the old one is tombstoned at once; the new
	// one waits for the minimum interval since the group's last
	// resolution (the group had a regex), then is resolved.
	m2 := h.group("g").members["m2"]
	up := ackReq("g", "m2", m2.epoch, nil)
	up.SubscribedTopicRegex = kmsg.StringPtr("other")
	if r := h.hb(up); r.ErrorCode != 0 {
		t.Fatal(kerr.ErrorForCode(r.ErrorCode))
	}
	if got := regexRecords(h.log); !slices.Equal(got, []string{"rx-.*=rx-1,rx-2", "rx-.*=<tombstone>"}) {
		t.Fatalf("regex records %v", got)
	}
	h.now += 10_001
	if _, got := h.settleMember("g", "m2"); got != "other:[0]" {
		t.Fatalf("m2 holds %q", got)
	}
	if got := regexRecords(h.log); got[len(got)-1] != "other=other" {
		t.Fatalf("regex records %v", got)
	}
	h.hb(ackReq("g", "m2", -1, nil))
	if got := regexRecords(h.log); got[len(got)-1] != "other=<tombstone>" || len(h.group("g").regexes) != 0 {
		t.Fatalf("the last member left and its regex stays: %v", got)
	}
	h.checkReplay()
	// The empty group can be deleted.
	h.next++
	o := h.commit(h.c.deleteGroups(h.now, h.next, deleteReq("g")))
	if code := o.Responses[0].Msg.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	h.checkReplay()
}

func TestConsumerRegexDeleteGroupTombstonesRegexes(t *testing.T) {
	h := regexHarness(t)
	h.hb(joinReq("g", "m1", "other"))
	h.hb(ackReq("g", "m1", -1, nil))
	// A resolution left with no member (a log replayed out of order) is
	// tombstoned with the group, before the group's own tombstone.
	h.c.begin(h.now)
	h.c.write(records.Record{Key: records.ConsumerGroupRegularExpressionKey{GroupID: "g", RegularExpression: "rx-.*"}, Value: records.ConsumerGroupRegularExpressionValue{Topics: []string{"rx-1"}}})
	h.c.emitGroup(EventRegexResolved, "g", "", 0)
	h.commit(h.c.end())
	h.next++
	o := h.commit(h.c.deleteGroups(h.now, h.next, deleteReq("g")))
	if code := o.Responses[0].Msg.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode; code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	if got := regexRecords(o.Records); !slices.Equal(got, []string{"rx-.*=<tombstone>"}) || h.group("g") != nil {
		t.Fatalf("delete wrote regex records %v", got)
	}
	h.checkReplay()
}

func TestConsumerRegexOffsetDeleteSeesResolvedTopics(t *testing.T) {
	h := regexHarness(t)
	h.hb(regexJoin("g", "m1", "rx-.*"))
	g := h.group("g")
	if !g.subscribedTo("rx-2") || g.subscribedTo("other") {
		t.Fatalf("subscribedTo: rx-2 %v other %v", g.subscribedTo("rx-2"), g.subscribedTo("other"))
	}
}

func deleteReq(groups ...string) *kmsg.DeleteGroupsRequest {
	r := kmsg.NewPtrDeleteGroupsRequest()
	r.Groups = groups
	return r
}

// TestConsumerRegexDescribed: ConsumerGroupDescribe shows a member's regex,
// and "" for a member without one, as Kafka 4.4 answers.
func TestConsumerRegexDescribed(t *testing.T) {
	h := regexHarness(t)
	h.hb(regexJoin("g", "m1", "rx-.*"))
	h.hb(joinReq("g", "m2", "other"))
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{"g"}
	got := map[string]string{}
	for _, m := range h.c.consumerGroupDescribe(req).Groups[0].Members {
		if m.SubscribedTopicRegex == nil {
			t.Fatalf("member %s: null regex", m.MemberID)
		}
		got[m.MemberID] = *m.SubscribedTopicRegex
	}
	if got["m1"] != "rx-.*" || got["m2"] != "" {
		t.Fatalf("described regexes %q", got)
	}
}

// TestConsumerRegexResolvedAgainAfterFailover: a group loaded from the log
// resolves its regexes again at its first heartbeat past the minimum
// interval, picking up a topic created while no one coordinated it.
func TestConsumerRegexResolvedAgainAfterFailover(t *testing.T) {
	h := regexHarness(t)
	h.hb(regexJoin("g", "m1", "rx-.*"))
	h.settleMember("g", "m1")
	topics := append(h.topics, TopicMetadata{Name: "rx-9", ID: topicID("rx-9"), Partitions: 1})
	c, err := New(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	h.now += 11_000
	c.updateTopics(h.now, topics)
	c.Commit()
	for _, r := range h.log {
		if err := c.Replay(r); err != nil {
			t.Fatal(err)
		}
	}
	c.Loaded(h.now)
	c.Commit()
	h.c, h.topics = c, topics
	if _, got := h.settleMember("g", "m1"); got != "rx-1:[0 1] rx-2:[0 1] rx-9:[0]" {
		t.Fatalf("after the fail-over m1 holds %q", got)
	}
}
