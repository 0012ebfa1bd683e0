package core

import (
	"testing"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// descPush is a topology-description push of one subtopology.
func descPush(group, member string, epoch int32) *kmsg.StreamsGroupTopologyDescriptionUpdateRequest {
	req := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
	req.Group, req.MemberID, req.TopologyEpoch = group, member, epoch
	sink := "out"
	req.TopologyDescription.Subtopologies = []kmsg.TopologyDescriptionSubtopology{{SubtopologyID: "0", Nodes: []kmsg.TopologyDescriptionNode{
		{Name: "KSTREAM-SOURCE-0000000000", NodeType: 1, SourceTopics: []string{"in"}, Successors: []string{"KSTREAM-SINK-0000000001"}},
		{Name: "KSTREAM-SINK-0000000001", NodeType: 3, SinkTopic: &sink},
	}}}
	return req
}

// TestTopologyDescriptionUpdateWithoutStore: with no description store,
// Kafka 4.4 (no plugin configured) refuses every push with
// UNSUPPORTED_VERSION and its message before validating it or looking the
// group up: a valid push by a member at the group's topology epoch, a push
// by an unknown member, one at a stale topology epoch, one for an unknown
// group and one with empty ids all get that answer, and the group's
// stored and failed description epochs stay unset. The
// member's heartbeats never ask for a push, and StreamsGroupDescribe v1
// reports the description NOT_STORED when asked for it, NOT_REQUESTED
// otherwise.
func TestTopologyDescriptionUpdateWithoutStore(t *testing.T) {
	c, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	c.updateTopics(0, []TopicMetadata{{Name: "in", ID: [16]byte{1}, Partitions: 2}})
	c.Commit()
	join := limitJoin("g", 1)
	join.Topology.Epoch = 3
	var epoch int32
	for i := 0; i < 3; i++ { // join, then heartbeat until the assignment settles
		out := c.streamsGroupHeartbeat(1000+int64(i), RequestID(i+1), ClientInfo{ClientID: "c"}, join)
		c.Commit()
		if len(out.Responses) != 1 {
			t.Fatalf("heartbeat %d: %d responses", i, len(out.Responses))
		}
		resp := out.Responses[0].Msg.(*kmsg.StreamsGroupHeartbeatResponse)
		if resp.ErrorCode != 0 {
			t.Fatalf("heartbeat %d: %s", i, kerr.ErrorForCode(resp.ErrorCode))
		}
		if resp.TopologyDescriptionRequired {
			t.Fatalf("heartbeat %d asked for a topology description without a store", i)
		}
		epoch = resp.MemberEpoch
		join = &kmsg.StreamsGroupHeartbeatRequest{Version: 1, Group: "g", MemberID: join.MemberID, MemberEpoch: epoch,
			RebalanceTimeoutMillis: -1}
	}
	if g := c.groups["g"].(*streamsGroup); g.topology == nil || g.topology.Epoch != 3 {
		t.Fatalf("group topology %+v, want epoch 3", g.topology)
	}

	cases := map[string]*kmsg.StreamsGroupTopologyDescriptionUpdateRequest{
		"valid":          descPush("g", "m-g", 3),
		"unknown member": descPush("g", "nobody", 3),
		"stale epoch":    descPush("g", "m-g", 2),
		"unknown group":  descPush("nogroup", "m-g", 3),
		"empty ids":      descPush("", "", 3),
	}
	for name, req := range cases {
		resp := StreamsGroupTopologyDescriptionUpdate(req)
		if resp.ErrorCode != kerr.UnsupportedVersion.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != noDescriptionStore {
			t.Errorf("%s: code %d message %v, want UNSUPPORTED_VERSION %q", name, resp.ErrorCode, resp.ErrorMessage, noDescriptionStore)
		}
		if resp.Version != req.Version {
			t.Errorf("%s: response version %d, request %d", name, resp.Version, req.Version)
		}
	}
	if g := c.groups["g"].(*streamsGroup); g.storedDescEpoch != -1 || g.failedDescEpoch != -1 {
		t.Fatalf("description epochs stored %d failed %d, want none (-1)", g.storedDescEpoch, g.failedDescEpoch)
	}

	for _, include := range []bool{false, true} {
		d := c.streamsGroupDescribe(&kmsg.StreamsGroupDescribeRequest{Version: 1, Groups: []string{"g", "nogroup"},
			IncludeTopologyDescription: include})
		want := int8(0) // NOT_REQUESTED
		if include {
			want = 1 // NOT_STORED
		}
		if g := d.Groups[0]; g.ErrorCode != 0 || g.TopologyDescriptionStatus != want || g.TopologyDescription != nil {
			t.Errorf("describe include=%v: code %d status %d description %v, want status %d and none", include,
				g.ErrorCode, g.TopologyDescriptionStatus, g.TopologyDescription, want)
		}
		if g := d.Groups[1]; g.ErrorCode != kerr.GroupIDNotFound.Code || g.TopologyDescriptionStatus != 0 {
			t.Errorf("describe of an unknown group include=%v: code %d status %d", include, g.ErrorCode, g.TopologyDescriptionStatus)
		}
	}
}

// TestTopologyDescriptionEpochsReplayed: a group loaded from a log a Kafka
// 4.4 broker with a description plugin wrote (its StreamsGroupMetadata
// record carrying a stored description epoch 3 and a failed one 4, encoded
// and decoded as Kafka's tags 2 and 3) keeps both epochs; the next epoch
// bump writes them again, as Kafka's record helper does, while coordhost,
// without a store, still never asks for a push and describes the
// description as NOT_STORED.
func TestTopologyDescriptionEpochsReplayed(t *testing.T) {
	live, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	topics := []TopicMetadata{{Name: "in", ID: [16]byte{1}, Partitions: 2}}
	live.updateTopics(0, topics)
	live.Commit()
	out := live.streamsGroupHeartbeat(1000, 1, ClientInfo{ClientID: "c"}, limitJoin("g", 1))
	live.Commit()
	var meta *records.StreamsGroupMetadataValue
	for _, r := range out.Records {
		if v, ok := r.Value.(records.StreamsGroupMetadataValue); ok {
			meta = &v
		}
	}
	if meta == nil {
		t.Fatal("the join wrote no group metadata")
	}
	plugin := *meta
	plugin.StoredDescriptionTopologyEpoch, plugin.FailedDescriptionTopologyEpoch = 3, 4
	log := append(append([]records.Record{}, out.Records...), records.Record{Key: records.StreamsGroupMetadataKey{GroupID: "g"}, Value: plugin})

	c, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	c.updateTopics(0, topics)
	c.Commit()
	for _, r := range log {
		k, v := records.EncodeRecord(r)
		if err := c.ReplayBytes(k, v); err != nil {
			t.Fatal(err)
		}
	}
	c.Loaded(2000)
	c.Commit()
	if g := c.groups["g"].(*streamsGroup); g.storedDescEpoch != 3 || g.failedDescEpoch != 4 {
		t.Fatalf("replayed description epochs stored %d failed %d, want 3 and 4", g.storedDescEpoch, g.failedDescEpoch)
	}

	second := limitJoin("g", 1)
	second.MemberID = "m-2"
	out = c.streamsGroupHeartbeat(3000, 2, ClientInfo{ClientID: "c"}, second)
	c.Commit()
	bumped := false
	for _, r := range out.Records {
		if v, ok := r.Value.(records.StreamsGroupMetadataValue); ok {
			bumped = true
			if v.Epoch != meta.Epoch+1 || v.StoredDescriptionTopologyEpoch != 3 || v.FailedDescriptionTopologyEpoch != 4 {
				t.Fatalf("epoch bump wrote epoch %d stored %d failed %d, want %d, 3, 4", v.Epoch,
					v.StoredDescriptionTopologyEpoch, v.FailedDescriptionTopologyEpoch, meta.Epoch+1)
			}
		}
	}
	if !bumped {
		t.Fatal("a second member's join wrote no group metadata")
	}
	for _, r := range out.Responses {
		if hb := r.Msg.(*kmsg.StreamsGroupHeartbeatResponse); hb.ErrorCode != 0 || hb.TopologyDescriptionRequired {
			t.Fatalf("join: %s, description required %v", kerr.ErrorForCode(hb.ErrorCode), hb.TopologyDescriptionRequired)
		}
	}
	d := c.streamsGroupDescribe(&kmsg.StreamsGroupDescribeRequest{Version: 1, Groups: []string{"g"}, IncludeTopologyDescription: true})
	if g := d.Groups[0]; g.ErrorCode != 0 || g.TopologyDescriptionStatus != 1 {
		t.Fatalf("describe: code %d status %d, want NOT_STORED (1)", g.ErrorCode, g.TopologyDescriptionStatus)
	}
}
