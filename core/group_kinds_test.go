package core

import (
	"strings"
	"testing"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// otherGroup stands in for a group of another kind (classic groups arrive
// in classic*.go) to pin the streams side of the group-kind boundary.
type otherGroup struct {
	id      string
	members int
}

func (g *otherGroup) ID() string                     { return g.id }
func (g *otherGroup) Kind() GroupKind                { return GroupKindClassic }
func (g *otherGroup) StateName() string              { return "Stable" }
func (g *otherGroup) IsEmpty() bool                  { return g.members == 0 }
func (g *otherGroup) dumpDurable(b *strings.Builder) {}

func joinRequest(group, member string) *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = group, member, 30000
	req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
		{SubtopologyID: "0", SourceTopics: []string{"in"}}}}
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	return req
}

// Origin: GroupMetadataManagerTest.testStreamsGroupHeartbeatWithNonEmptyClassicGroup
// and ...WithEmptyClassicGroup.
func TestStreamsJoinOnGroupOfAnotherKind(t *testing.T) {
	c, _ := New(DefaultConfig())
	c.groups["busy"] = &otherGroup{id: "busy", members: 2}
	out := c.streamsGroupHeartbeat(0, 1, ClientInfo{}, joinRequest("busy", "m1"))
	resp := out.Responses[0].Msg.(*kmsg.StreamsGroupHeartbeatResponse)
	if resp.ErrorCode != kerr.GroupIDNotFound.Code || len(out.Records) != 0 {
		t.Fatalf("non-empty group of another kind: error %d, %d records; want GROUP_ID_NOT_FOUND and none", resp.ErrorCode, len(out.Records))
	}
	if _, still := c.groups["busy"].(*otherGroup); !still {
		t.Fatal("the other group was replaced")
	}

	// An empty group of another kind is converted when its kind registered
	// a deleter (the classic kind will): its tombstones come first.
	deleted := false
	saved := groupDeleters[GroupKindClassic] // the real classic deleter: restore it for later tests
	groupDeleters[GroupKindClassic] = func(c *Coordinator, g Group) { deleted = true; c.putGroup(g.ID(), nil) }
	defer func() { groupDeleters[GroupKindClassic] = saved }()
	c.groups["idle"] = &otherGroup{id: "idle"}
	out = c.streamsGroupHeartbeat(0, 2, ClientInfo{}, joinRequest("idle", "m1"))
	resp = out.Responses[0].Msg.(*kmsg.StreamsGroupHeartbeatResponse)
	if resp.ErrorCode != 0 || !deleted {
		t.Fatalf("empty group of another kind: error %d, deleted=%v", resp.ErrorCode, deleted)
	}
	if _, ok := c.groups["idle"].(*streamsGroup); !ok {
		t.Fatalf("idle is %T, want a streams group", c.groups["idle"])
	}
	c.Commit()

	// A non-join heartbeat never crosses kinds.
	req := joinRequest("busy", "m1")
	req.MemberEpoch, req.Topology = 3, nil
	out = c.streamsGroupHeartbeat(0, 3, ClientInfo{}, req)
	if code := out.Responses[0].Msg.(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode; code != kerr.GroupIDNotFound.Code {
		t.Fatalf("heartbeat on another kind: error %d, want GROUP_ID_NOT_FOUND", code)
	}
}

// Replaying a streams record over an empty group of another kind replaces
// it (KAFKA-20254: offsets-only classic groups); over a non-empty one it is
// an error, as Kafka's IllegalStateException.
func TestReplayStreamsRecordOverOtherKind(t *testing.T) {
	c, _ := New(DefaultConfig())
	c.groups["a"] = &otherGroup{id: "a"}
	c.groups["b"] = &otherGroup{id: "b", members: 1}
	rec := func(g string) records.Record {
		return records.Record{Key: records.StreamsGroupMetadataKey{GroupID: g}, Value: records.StreamsGroupMetadataValue{Epoch: 3, ValidatedTopologyEpoch: -1,
			StoredDescriptionTopologyEpoch: -1, FailedDescriptionTopologyEpoch: -1}}
	}
	if err := c.Replay(rec("a")); err != nil {
		t.Fatal(err)
	}
	if g, ok := c.groups["a"].(*streamsGroup); !ok || g.groupEpoch != 3 {
		t.Fatalf("a = %#v", c.groups["a"])
	}
	if err := c.Replay(rec("b")); err == nil {
		t.Fatal("replaying a streams record over a non-empty group of another kind succeeded")
	}
}

// Records written before Kafka 4.2 carry no AssignmentEpochs: replay gives
// every active task the record's member epoch (Kafka's Utils fallback).
func TestReplayLegacyAssignmentEpochs(t *testing.T) {
	c, _ := New(DefaultConfig())
	for _, g := range loadGolden(t) {
		if g.name != "current-legacy" && g.name != "current-epochs" {
			continue
		}
		if err := c.ReplayBytes(g.key, g.value); err != nil {
			t.Fatal(err)
		}
	}
	g := c.groups["app"].(*streamsGroup)
	if got := formatEpochs(g.members["m2"].assigned.active); got != "0_5@-2,0_6@-2" {
		t.Errorf("legacy record: active epochs %s, want the member epoch -2 for each", got)
	}
	if got := formatEpochs(g.members["m1"].assigned.active); got != "0_0@2,0_3@4" {
		t.Errorf("record with epochs: %s, want 0_0@2,0_3@4", got)
	}
	if got := formatEpochs(g.members["m1"].pending.active); got != "0_1@2" {
		t.Errorf("pending with epochs: %s", got)
	}
}
