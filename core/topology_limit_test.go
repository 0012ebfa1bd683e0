package core

import (
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// limitJoin is a join whose topology has subs subtopologies of one source
// topic each: 2*subs entries.
func limitJoin(group string, subs int) *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	proc := "p"
	req.Group, req.MemberID, req.RebalanceTimeoutMillis, req.ProcessID = group, "m-"+group, 30000, &proc
	req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{}
	for i := 0; i < subs; i++ {
		req.Topology.Subtopologies = append(req.Topology.Subtopologies,
			kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{SubtopologyID: fmt.Sprint(i), SourceTopics: []string{"in"}})
	}
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	return req
}

// TestTopologySizeLimit: a join whose topology has more entries than
// streams.max.topology.size is refused with INVALID_REQUEST naming the
// key, writes nothing and leaves no group; one at the limit joins; a
// per-group override applies to its group only, and every entry kind
// (topics, copartition groups) counts.
func TestTopologySizeLimit(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Streams.MaxTopologySize = 10
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.updateTopics(0, []TopicMetadata{{Name: "in", ID: [16]byte{1}, Partitions: 4}})
	c.Commit()
	small := int32(4)
	c.setStreamsGroupConfig("tight", StreamsGroupOverrides{MaxTopologySize: &small})

	hb := func(req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, Output) {
		t.Helper()
		out := c.streamsGroupHeartbeat(1000, 1, ClientInfo{ClientID: "c"}, req)
		c.Commit()
		if len(out.Responses) != 1 {
			t.Fatalf("%d responses", len(out.Responses))
		}
		return out.Responses[0].Msg.(*kmsg.StreamsGroupHeartbeatResponse), out
	}
	refused := func(req *kmsg.StreamsGroupHeartbeatRequest) {
		t.Helper()
		resp, out := hb(req)
		if resp.ErrorCode != kerr.InvalidRequest.Code || resp.ErrorMessage == nil ||
			!strings.Contains(*resp.ErrorMessage, "streams.max.topology.size") {
			t.Fatalf("group %s: got code %d message %v, want INVALID_REQUEST naming the key", req.Group, resp.ErrorCode, resp.ErrorMessage)
		}
		if len(out.Records) != 0 || c.groups[req.Group] != nil {
			t.Fatalf("group %s: refused join left %d records, group %v", req.Group, len(out.Records), c.groups[req.Group])
		}
	}
	refused(limitJoin("big", 6)) // 12 entries > 10
	if resp, _ := hb(limitJoin("big", 5)); resp.ErrorCode != 0 {
		t.Fatalf("10 entries at a limit of 10: code %d", resp.ErrorCode)
	}
	refused(limitJoin("tight", 3)) // 6 > 4
	if resp, _ := hb(limitJoin("tight", 2)); resp.ErrorCode != 0 {
		t.Fatalf("4 entries at a group limit of 4: code %d", resp.ErrorCode)
	}
	req := limitJoin("kinds", 2) // 4 entries, 1 changelog, 1 repartition sink, 2 copartition entries, 3 repartition sources
	req.Topology.Subtopologies[0].StateChangelogTopics = []kmsg.TopicInfo{{Topic: "c"}}
	req.Topology.Subtopologies[0].RepartitionSinkTopics = []string{"r"}
	req.Topology.Subtopologies[1].CopartitionGroups = []kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{{SourceTopics: []int16{0, 0}}}
	req.Topology.Subtopologies[1].RepartitionSourceTopics = []kmsg.TopicInfo{{Topic: "r"}, {Topic: "r2"}, {Topic: "r3"}}
	refused(req) // 11 > 10
}

// TestGroupCap: with MaxGroups 2, a join that would create a third group
// (streams or classic) gets COORDINATOR_NOT_AVAILABLE and leaves nothing;
// joins to the existing groups still succeed, and once a group is gone a
// new one may be created.
func TestGroupCap(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxGroups = 2
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.updateTopics(0, []TopicMetadata{{Name: "in", ID: [16]byte{1}, Partitions: 4}})
	c.Commit()
	hb := func(req *kmsg.StreamsGroupHeartbeatRequest) (int16, Output) {
		t.Helper()
		out := c.streamsGroupHeartbeat(1000, 1, ClientInfo{ClientID: "c"}, req)
		c.Commit()
		return out.Responses[0].Msg.(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode, out
	}
	for _, g := range []string{"a", "b"} {
		if code, _ := hb(limitJoin(g, 1)); code != 0 {
			t.Fatalf("join %s: code %d", g, code)
		}
	}
	code, out := hb(limitJoin("c", 1))
	if code != kerr.CoordinatorNotAvailable.Code || len(out.Records) != 0 || c.groups["c"] != nil {
		t.Fatalf("third streams group: code %d, %d records, group %v", code, len(out.Records), c.groups["c"])
	}
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis = "k", "consumer", 10000, 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	cout := c.joinGroup(1000, 2, ClientInfo{ClientID: "c"}, join)
	c.Commit()
	if r := cout.Responses[0].Msg.(*kmsg.JoinGroupResponse); r.ErrorCode != kerr.CoordinatorNotAvailable.Code || c.groups["k"] != nil || len(cout.Records) != 0 {
		t.Fatalf("third classic group: code %d, group %v, %d records", r.ErrorCode, c.groups["k"], len(cout.Records))
	}
	second := limitJoin("a", 1)
	second.MemberID = "m-a2"
	if code, _ := hb(second); code != 0 {
		t.Fatalf("second member of an existing group: code %d", code)
	}
	leave := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	leave.Version, leave.Group, leave.MemberID, leave.MemberEpoch = 1, "b", "m-b", leaveEpoch
	if code, _ := hb(leave); code != 0 {
		t.Fatalf("leave b: code %d", code)
	}
	c.deleteGroups(1000, 3, &kmsg.DeleteGroupsRequest{Groups: []string{"b"}})
	c.Commit()
	if c.groups["b"] != nil {
		t.Fatal("b not deleted")
	}
	if code, _ := hb(limitJoin("c", 1)); code != 0 || c.groups["c"] == nil {
		t.Fatalf("join c after b was deleted: code %d", code)
	}
}
