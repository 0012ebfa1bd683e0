package core

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// stepScenario builds, through Step alone, a Coordinator holding a group
// of each kind with members, assignments and timers: a streams group
// whose assignor run was answered, a consumer group and a classic group
// whose join waits for its rebalance delay. Every Output is committed.
func stepScenario(t *testing.T) *Coordinator {
	t.Helper()
	cfg := consumerTestConfig()
	cfg.Classic.InitialRebalanceDelayMs = 3000
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := int64(1000)
	step := func(in Input) Output {
		t.Helper()
		out, err := c.Step(now, in)
		if err != nil {
			t.Fatalf("Step(%T): %v", in, err)
		}
		c.Commit()
		return out
	}
	step(Topics{Topics: []TopicMetadata{{Name: "in", ID: topicID("in"), Partitions: 4}, {Name: "a", ID: topicID("a"), Partitions: 4}}})
	step(StreamsGroupConfig{Group: "s", Overrides: StreamsGroupOverrides{}})
	out := step(Request{ID: 1, Client: ClientInfo{ClientID: "c"}, Body: joinRequest("s", "m1")})
	for _, run := range out.AssignorRuns {
		step(AssignorResult{Run: run, Result: ReferenceAssign(run.Input)})
	}
	step(Request{ID: 2, Client: ClientInfo{ClientID: "c"}, Body: joinReq("k", "m2", "a")})
	jr := kmsg.NewPtrJoinGroupRequest()
	jr.Version, jr.Group = 3, "g"
	jr.SessionTimeoutMillis, jr.RebalanceTimeoutMillis = 10000, 5000
	jr.ProtocolType = "consumer"
	jr.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: consumerSubscription([]string{"a"})}}
	step(Request{ID: 3, Client: ClientInfo{ClientID: "c"}, Body: jr})
	step(Tick{Limit: 1})
	for _, g := range []string{"s", "k", "g"} {
		if _, ok := c.Group(g); !ok {
			t.Fatalf("the scenario holds no group %q", g)
		}
	}
	if _, ok := c.NextDeadline(); !ok {
		t.Fatal("the scenario has no timer")
	}
	return c
}

// stepSnapshot is everything observable of c's state: durable state,
// timers, the next deadline and every group's description (which shows
// the in-memory state Dump leaves out, such as a classic rebalance).
func stepSnapshot(t *testing.T, c *Coordinator) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(c.Dump())
	fmt.Fprintln(&b, c.TimerKeys())
	at, ok := c.NextDeadline()
	fmt.Fprintln(&b, at, ok)
	ids := c.GroupIDs()
	for _, req := range []kmsg.Request{
		&kmsg.DescribeGroupsRequest{Version: 5, Groups: ids},
		&kmsg.StreamsGroupDescribeRequest{Version: 0, Groups: ids},
		&kmsg.ConsumerGroupDescribeRequest{Version: 1, Groups: ids},
		&kmsg.ListGroupsRequest{Version: 5},
	} {
		resp, err := c.Read(req)
		if err != nil {
			t.Fatal(err)
		}
		j, err := json.Marshal(resp)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s\n", j)
	}
	return b.String()
}

// TestReadChangesNothing: every read of the surface, on groups of every
// kind, ones missing and requests that fail validation included, leaves
// state, timers and the next deadline as they were.
func TestReadChangesNothing(t *testing.T) {
	c := stepScenario(t)
	before := stepSnapshot(t, c)
	ids := append(c.GroupIDs(), "missing", "")
	member, epoch := "m1", int32(1)
	reads := []kmsg.Request{
		&kmsg.DescribeGroupsRequest{Version: 5, Groups: ids},
		&kmsg.ListGroupsRequest{Version: 5, StatesFilter: []string{"Stable"}},
		&kmsg.ListGroupsRequest{Version: 5, TypesFilter: []string{"classic"}},
		&kmsg.StreamsGroupDescribeRequest{Version: 0, Groups: ids},
		&kmsg.ConsumerGroupDescribeRequest{Version: 1, Groups: ids},
		&kmsg.StreamsGroupTopologyDescriptionUpdateRequest{},
	}
	for _, req := range reads {
		if _, err := c.Read(req); err != nil {
			t.Fatalf("Read(%s): %v", kmsg.NameForKey(req.Key()), err)
		}
	}
	var decisions []kmsg.Request
	for _, g := range ids {
		fetch := &kmsg.OffsetFetchRequest{Version: 9}
		fetch.Groups = []kmsg.OffsetFetchRequestGroup{{Group: g}, {Group: g, MemberID: &member, MemberEpoch: epoch}}
		decisions = append(decisions,
			&kmsg.TxnOffsetCommitRequest{Version: 4, Group: g, MemberID: member, Generation: 7,
				Topics: []kmsg.TxnOffsetCommitRequestTopic{{Topic: "a", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0}}}}},
			&kmsg.OffsetFetchRequest{Version: 7, Group: g},
			fetch,
			&kmsg.OffsetDeleteRequest{Group: g, Topics: []kmsg.OffsetDeleteRequestTopic{{Topic: "a"}, {Topic: "in"}}},
		)
	}
	for _, req := range decisions {
		if _, err := c.DecideOffsets(req); err != nil {
			t.Fatalf("DecideOffsets(%s): %v", kmsg.NameForKey(req.Key()), err)
		}
	}
	for _, g := range ids {
		c.Group(g)
		c.LastAssignorError(g)
		c.KnownEndOffsets(g)
	}
	c.StreamsChangelogs()
	if after := stepSnapshot(t, c); after != before {
		t.Fatalf("reads changed the coordinator:\nbefore\n%s\nafter\n%s", before, after)
	}
	// The reads saw the groups: a read that changes nothing because it
	// reads nothing would pass the comparison above.
	resp, _ := c.Read(&kmsg.ListGroupsRequest{Version: 5})
	if got := len(resp.(*kmsg.ListGroupsResponse).Groups); got != 3 {
		t.Fatalf("ListGroups read %d groups, want 3", got)
	}
	ds, _ := c.DecideOffsets(&kmsg.OffsetDeleteRequest{Group: "k", Topics: []kmsg.OffsetDeleteRequestTopic{{Topic: "a"}, {Topic: "in"}}})
	if len(ds) != 1 || !slices.Equal(ds[0].Subscribed, []string{"a"}) {
		t.Fatalf("OffsetDelete decision %+v, want topic a subscribed", ds)
	}
}

// TestStepRefusesUnknownInputs: an input or request an entry point does
// not take is ErrUnknownInput, with nothing changed, never a panic.
func TestStepRefusesUnknownInputs(t *testing.T) {
	c := stepScenario(t)
	before := stepSnapshot(t, c)
	for _, in := range []Input{nil, Request{}, Request{ID: 9, Body: &kmsg.ListGroupsRequest{}}, Request{Body: &kmsg.OffsetFetchRequest{}}} {
		if out, err := c.Step(2000, in); !errors.Is(err, ErrUnknownInput) || len(out.Records)+len(out.Responses) != 0 {
			t.Errorf("Step(%#v) = %+v, %v; want ErrUnknownInput and nothing", in, out, err)
		}
	}
	for _, req := range []kmsg.Request{nil, &kmsg.JoinGroupRequest{}, &kmsg.OffsetFetchRequest{}} {
		if _, err := c.Read(req); !errors.Is(err, ErrUnknownInput) {
			t.Errorf("Read(%T): %v, want ErrUnknownInput", req, err)
		}
	}
	for _, req := range []kmsg.Request{nil, &kmsg.OffsetCommitRequest{}, &kmsg.DescribeGroupsRequest{}} {
		if _, err := c.DecideOffsets(req); !errors.Is(err, ErrUnknownInput) {
			t.Errorf("DecideOffsets(%T): %v, want ErrUnknownInput", req, err)
		}
	}
	if after := stepSnapshot(t, c); after != before {
		t.Fatalf("refused inputs changed the coordinator:\nbefore\n%s\nafter\n%s", before, after)
	}
}

// TestStepOffsetCommitDecides: an OffsetCommit stepped returns its verdict
// in Output.Offsets, and an allowed commit by a classic member in a
// stable group restarts its session timer, as DecideOffsetCommit always
// did.
func TestStepOffsetCommitDecides(t *testing.T) {
	c := stepScenario(t)
	out, err := c.Step(1000, Request{Body: &kmsg.OffsetCommitRequest{Version: 8, Group: "g", MemberID: "nobody", Generation: 3}})
	if err != nil || len(out.Offsets) != 1 || out.Offsets[0].Group != "g" || out.Offsets[0].ErrorCode == 0 {
		t.Fatalf("commit by an unknown member: %+v, %v; want one refusing decision", out.Offsets, err)
	}
	out, err = c.Step(1000, Request{Body: &kmsg.OffsetCommitRequest{Version: 8, Group: "simple", Generation: -1}})
	if err != nil || len(out.Offsets) != 1 || out.Offsets[0].ErrorCode != 0 || !out.Offsets[0].NotHeld {
		t.Fatalf("admin commit to a group core does not hold: %+v, %v; want allowed, not held", out.Offsets, err)
	}
}
