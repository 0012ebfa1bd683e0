package host_test

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestGroupAdminAPIs: ListGroups/DescribeGroups show core's classic group
// and the data plane's offsets-only group (as Empty); OffsetDelete is
// refused for a subscribed topic of a live group; DeleteGroups deletes an
// empty classic group with its offsets and an offsets-only group.
func TestGroupAdminAPIs(t *testing.T) {
	srv := startLoopHost(t, "")
	addr := srv.KafkaAddr()
	ctx := timeout(t)
	cl := newClient(t, addr)
	if err := createTopic(ctx, cl, "ga-in", 2); err != nil {
		t.Fatal(err)
	}
	produceSpread(t, addr, "ga-in", 2, 3, "x")
	c := startConsumer(t, addr, "live", "ga-in")
	waitFor(t, 20*time.Second, "consumer owns both partitions and consumed 6", func() error {
		if err := ownership([]*groupConsumer{c}, 2); err != nil {
			return err
		}
		if n := len(c.consumed()); n != 6 {
			return kerr.RebalanceInProgress
		}
		return nil
	})
	// An admin commit for a group core does not hold: offsets-only group.
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = "simple", -1
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "ga-in", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	ocr, err := oc.RequestWith(ctx, cl)
	if err != nil || ocr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("admin commit for an offsets-only group: %v %+v", err, ocr)
	}

	lg := kmsg.NewPtrListGroupsRequest()
	lgr, err := lg.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	states := map[string]string{}
	for _, g := range lgr.Groups {
		states[g.Group] = g.GroupState
	}
	if states["live"] != "Stable" || states["simple"] != "Empty" {
		t.Fatalf("ListGroups: %v, want live Stable and simple Empty", states)
	}
	dg := kmsg.NewPtrDescribeGroupsRequest()
	dg.Groups = []string{"live", "simple"}
	dgr, err := dg.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range dgr.Groups {
		switch g.Group {
		case "live":
			if g.State != "Stable" || len(g.Members) != 1 || g.ProtocolType != "consumer" {
				t.Fatalf("describe live: %+v", g)
			}
		case "simple":
			if g.State != "Empty" || g.ErrorCode != 0 {
				t.Fatalf("describe simple: %+v", g)
			}
		}
	}
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "live"
	od.Topics = []kmsg.OffsetDeleteRequestTopic{{Topic: "ga-in", Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}}}
	odr, err := od.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if odr.ErrorCode != 0 || odr.Topics[0].Partitions[0].ErrorCode != kerr.GroupSubscribedToTopic.Code {
		t.Fatalf("OffsetDelete on a subscribed topic: %+v", odr)
	}
	del := kmsg.NewPtrDeleteGroupsRequest()
	del.Groups = []string{"live"}
	delr, err := del.RequestWith(ctx, cl)
	if err != nil || delr.Groups[0].ErrorCode != kerr.NonEmptyGroup.Code {
		t.Fatalf("deleting a live group: %v %+v, want NON_EMPTY_GROUP", err, delr)
	}
	c.close() // LeaveGroup: the group is Empty at once
	del.Groups = []string{"live", "simple"}
	delr, err = del.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range delr.Groups {
		if g.ErrorCode != 0 {
			t.Fatalf("delete %s: %v", g.Group, kerr.ErrorForCode(g.ErrorCode))
		}
	}
	for _, g := range []string{"live", "simple"} {
		off, err := fetchOffset(ctx, cl, g, "ga-in")
		if err != nil || off != -1 {
			t.Fatalf("offset of deleted group %s: %d %v, want -1", g, off, err)
		}
	}
	lgr, err = kmsg.NewPtrListGroupsRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(lgr.Groups) != 0 {
		t.Fatalf("groups left after DeleteGroups: %+v", lgr.Groups)
	}
}

// TestDescribeGroupConfigs: DescribeConfigs on a GROUP resource answers the
// group's effective configuration.
func TestDescribeGroupConfigs(t *testing.T) {
	srv := startLoopHost(t, "", "--groups.defaults.streams.num.standby.replicas=2")
	ctx := timeout(t)
	cl := newClient(t, srv.KafkaAddr())
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, "orders"
	r.ConfigNames = []string{"streams.num.standby.replicas", "streams.session.timeout.ms"}
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, res := range resp.Resources {
		for _, c := range res.Configs {
			got[c.Name] = *c.Value
		}
	}
	if got["streams.num.standby.replicas"] != "2" || got["streams.session.timeout.ms"] != "45000" || len(got) != 2 {
		t.Fatalf("group configs: %v", got)
	}
}
