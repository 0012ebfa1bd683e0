package host_test

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTopologyDescriptionUpdateE2E: coordhost advertises
// StreamsGroupTopologyDescriptionUpdate (93) at v0, as a Kafka 4.4 broker
// does, and answers it as that broker without a description plugin: a
// streams member's heartbeats (v1) never ask for a push, the member's push
// at its topology epoch gets UNSUPPORTED_VERSION with Kafka's message, and
// StreamsGroupDescribe v1 reports the group's description NOT_STORED.
func TestTopologyDescriptionUpdateE2E(t *testing.T) {
	srv := startLoopHost(t, "")
	ctx := timeout(t)
	v := clientVersions()
	v.SetMaxKeyVersion(int16(kmsg.StreamsGroupTopologyDescriptionUpdate), 0)
	cl := newClient(t, srv.KafkaAddr(), kgo.MaxVersions(v))
	coord := coordinatorRequestor{cl: cl, group: "td"} // kgo does not route these keys itself

	av, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	advertised := false
	for _, k := range av.ApiKeys {
		if k.ApiKey == int16(kmsg.StreamsGroupTopologyDescriptionUpdate) {
			advertised = k.MinVersion == 0 && k.MaxVersion == 0
		}
	}
	if !advertised {
		t.Fatalf("StreamsGroupTopologyDescriptionUpdate not advertised at v0-0: %+v", av.ApiKeys)
	}

	proc := "p-td"
	hb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	hb.Group, hb.MemberID, hb.RebalanceTimeoutMillis, hb.ProcessID = "td", "m-td", 30000, &proc
	hb.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: 2, Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
		{SubtopologyID: "0", SourceTopics: []string{"td-in"}}}}
	hb.ActiveTasks, hb.StandbyTasks, hb.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	for i := 0; i < 2; i++ {
		resp, err := hb.RequestWith(ctx, coord)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Version != 1 || resp.ErrorCode != 0 || resp.TopologyDescriptionRequired {
			t.Fatalf("heartbeat %d: v%d %v, description required %v", i, resp.Version, kerr.ErrorForCode(resp.ErrorCode), resp.TopologyDescriptionRequired)
		}
		hb.MemberEpoch, hb.Topology, hb.RebalanceTimeoutMillis, hb.ProcessID = resp.MemberEpoch, nil, -1, nil
	}

	push := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateRequest()
	push.Group, push.MemberID, push.TopologyEpoch = "td", "m-td", 2
	push.TopologyDescription.Subtopologies = []kmsg.TopologyDescriptionSubtopology{{SubtopologyID: "0",
		Nodes: []kmsg.TopologyDescriptionNode{{Name: "KSTREAM-SOURCE-0000000000", NodeType: 1, SourceTopics: []string{"td-in"}}}}}
	resp, err := push.RequestWith(ctx, coord)
	if err != nil {
		t.Fatal(err)
	}
	const msg = "The broker has no streams group topology description plugin configured."
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || resp.ErrorMessage == nil || *resp.ErrorMessage != msg {
		t.Fatalf("push: %v %v, want UNSUPPORTED_VERSION %q", kerr.ErrorForCode(resp.ErrorCode), resp.ErrorMessage, msg)
	}

	d := kmsg.NewPtrStreamsGroupDescribeRequest()
	d.Groups, d.IncludeTopologyDescription = []string{"td"}, true
	dr, err := d.RequestWith(ctx, coord)
	if err != nil {
		t.Fatal(err)
	}
	if g := dr.Groups[0]; g.ErrorCode != 0 || g.TopologyDescriptionStatus != 1 || g.TopologyDescription != nil {
		t.Fatalf("describe: %v status %d description %v, want NOT_STORED (1) and none", kerr.ErrorForCode(g.ErrorCode), g.TopologyDescriptionStatus, g.TopologyDescription)
	}
}
