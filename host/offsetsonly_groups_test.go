package host_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetsOnlyGroups: a group that has only offsets (committed with
// generation -1, no member) is what Kafka makes of it, a classic group
// with no protocol type: DescribeGroups answers Empty with protocol type ""
// (v5 and v6), ListGroups lists it Empty, classic, protocol type "". A
// streams group with committed offsets is listed only as the streams group
// it is: never by a classic/consumer type filter or an Empty state filter
// through its offsets.
func TestOffsetsOnlyGroups(t *testing.T) {
	srv := startLoopHost(t, "")
	ctx := timeout(t)
	kc := newClient(t, srv.KafkaAddr())
	if err := createTopic(ctx, kc, "oo-in", 1); err != nil {
		t.Fatal(err)
	}
	cl := &coordinator{cl: kc}
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Group, oc.Generation = "simple", -1
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "oo-in", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	if ocr, err := oc.RequestWith(ctx, cl); err != nil || ocr.Topics[0].Partitions[0].ErrorCode != 0 {
		t.Fatalf("commit for an offsets-only group: %v %+v", err, ocr)
	}
	m := newStreamsMember(cl, "app", "oo-in")
	waitFor(t, 20*time.Second, "streams member owns its task", func() error {
		if code, _, err := m.heartbeat(ctx); err != nil || code != 0 {
			return fmt.Errorf("heartbeat: %v %v", err, kerr.ErrorForCode(code))
		}
		if len(m.partitions()) != 1 {
			return fmt.Errorf("partitions %v", m.partitions())
		}
		return nil
	})
	if err := commitOffset(ctx, cl, m, "oo-in", 1); err != nil {
		t.Fatalf("streams member's commit: %v", err)
	}

	for _, v := range []int16{5, 6} {
		versions := clientVersions()
		versions.SetMaxKeyVersion(15, v) // kversion lacks DescribeGroups v6 (GROUP_ID_NOT_FOUND)
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Groups = []string{"simple", "app", "none"}
		dgr, err := dg.RequestWith(ctx, &coordinator{cl: newClient(t, srv.KafkaAddr(), kgo.MaxVersions(versions))})
		if err != nil {
			t.Fatal(err)
		}
		if dgr.Version != v {
			t.Fatalf("DescribeGroups answered at v%d, asked v%d", dgr.Version, v)
		}
		got := map[string]kmsg.DescribeGroupsResponseGroup{}
		for _, g := range dgr.Groups {
			got[g.Group] = g
		}
		if g := got["simple"]; g.ErrorCode != 0 || g.State != "Empty" || g.ProtocolType != "" || g.Protocol != "" || len(g.Members) != 0 {
			t.Errorf("DescribeGroups v%d of the offsets-only group: %+v, want Empty with protocol type \"\"", v, g)
		}
		// The streams group and an unknown group stay what core answers:
		// Dead, and GROUP_ID_NOT_FOUND from v6.
		for _, id := range []string{"app", "none"} {
			g := got[id]
			want := int16(0)
			if v >= 6 {
				want = kerr.GroupIDNotFound.Code
			}
			if g.State != "Dead" || g.ErrorCode != want {
				t.Errorf("DescribeGroups v%d of %s: %+v, want Dead, %v", v, id, g, kerr.ErrorForCode(want))
			}
		}
	}

	for _, c := range []struct {
		states, types []string
		want          string
	}{
		{nil, nil, "app:Stable:streams:streams simple:Empty:classic:"},
		{nil, []string{"classic"}, "simple:Empty:classic:"},
		{nil, []string{"Classic", "Consumer"}, "simple:Empty:classic:"},
		{[]string{"Empty"}, nil, "simple:Empty:classic:"},
		{nil, []string{"streams"}, "app:Stable:streams:streams"},
		{[]string{"Stable"}, []string{"classic"}, ""},
	} {
		lg := kmsg.NewPtrListGroupsRequest()
		lg.StatesFilter, lg.TypesFilter = c.states, c.types
		lgr, err := lg.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		if got := listed(lgr); got != c.want {
			t.Errorf("ListGroups states %v types %v: %q, want %q", c.states, c.types, got, c.want)
		}
	}
}

// listed renders a ListGroups answer as "group:state:type:protocoltype"
// entries in group order.
func listed(resp *kmsg.ListGroupsResponse) string {
	var out []string
	for _, g := range resp.Groups {
		out = append(out, strings.Join([]string{g.Group, g.GroupState, g.GroupType, g.ProtocolType}, ":"))
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}
