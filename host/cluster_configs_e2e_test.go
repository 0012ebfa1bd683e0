package host_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/authz"
	"github.com/coordhost/coordhost/host/runtime"
)

// onePerPartition returns a group id of prefix for each of parts
// partitions, in partition order.
func onePerPartition(prefix string, parts int) []string {
	out := make([]string, parts)
	for i, n := 0, 0; n < parts; i++ {
		g := fmt.Sprintf("%s-%d", prefix, i)
		if p := runtime.PartitionFor(g, parts); out[p] == "" {
			out[p] = g
			n++
		}
	}
	return out
}

// nodeRequestor sends every request to the node at addr itself, as an
// admin client does with a request it may send to any broker (kgo would
// pick a broker of Metadata on its own).
func nodeRequestor(t *testing.T, addr string) kmsg.Requestor {
	v := clientVersions()
	v.SetMaxKeyVersion(int16(kmsg.ListConfigResources), 1) // newer than kversion.Tip
	return newClient(t, addr, kgo.MaxVersions(v)).SeedBrokers()[0]
}

// describeGroupMaxSize describes group.max.size of groups through r in
// one DescribeConfigs and returns each group's value and source.
func describeGroupMaxSize(t *testing.T, ctx context.Context, r kmsg.Requestor, groups []string) map[string]string {
	t.Helper()
	req := kmsg.NewPtrDescribeConfigsRequest()
	for _, g := range groups {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeGroupConfig, g, []string{"group.max.size"}
		req.Resources = append(req.Resources, rr)
	}
	resp, err := req.RequestWith(ctx, r)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, rr := range resp.Resources {
		if rr.ErrorCode != 0 || len(rr.Configs) != 1 {
			t.Fatalf("describe %s: %v %+v", rr.ResourceName, kerr.ErrorForCode(rr.ErrorCode), rr)
		}
		c := rr.Configs[0]
		out[rr.ResourceName] = fmt.Sprintf("%s/%v", deref(c.Value), c.Source)
	}
	if len(out) != len(groups) {
		t.Fatalf("describe of %d groups answered %d: %+v", len(groups), len(out), resp.Resources)
	}
	return out
}

// listGroupConfigs lists the GROUP config resources through r.
func listGroupConfigs(t *testing.T, ctx context.Context, r kmsg.Requestor) []string {
	t.Helper()
	req := kmsg.NewPtrListConfigResourcesRequest()
	req.ResourceTypes = []int8{int8(kmsg.ConfigResourceTypeGroupConfig)}
	resp, err := req.RequestWith(ctx, r)
	if err != nil {
		t.Fatalf("ListConfigResources: %v", err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("ListConfigResources: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
	var out []string
	for _, c := range resp.ConfigResources {
		out = append(out, c.Name)
	}
	return out
}

// withoutAuthz wires the coordinator without the external cluster's
// authorization in front: kfake reports no DESCRIBE_CONFIGS or
// ALTER_CONFIGS in a group's authorized operations, so every group
// config request would be refused (real Kafka reports them; the
// authorization of group configs is tested in host/authz and interop).
func withoutAuthz(s *host.Server) (host.Wiring, error) {
	w, err := host.NewCoordinator(s)
	if a, ok := w.Coordinator.(*authz.Coordinator); ok && err == nil {
		w.Coordinator = a.Inner().(host.GroupCoordinator)
	}
	return w, err
}

// TestClusterGroupConfigsFromAnyNode: three nodes of one cluster. Group
// configs are altered through nodes that do not own the groups
// (IncrementalAlterConfigs and AlterConfigs in one request spanning
// every partition), and every node describes every group's value and
// lists every group config of the cluster exactly once. A node that
// joins takes partitions over; configs altered through it are then
// described by the nodes that gave those partitions up as it wrote them,
// not as they last saw them. After a node stops, the two left still
// answer every group's value.
func TestClusterGroupConfigsFromAnyNode(t *testing.T) {
	const parts = 6
	dp := newObservedCluster(t, kfake.NumBrokers(1), kfake.SeedTopics(1, "t"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	nodes := startClusterNodesWith(t, dp, 3, parts, withoutAuthz)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	groups := onePerPartition("cfg", parts)

	// Every group altered through a node that does not own it: one
	// IncrementalAlterConfigs through the first node covering every
	// partition, then the last group again with AlterConfigs through a
	// non-owner.
	want := map[string]string{}
	var ops []kmsg.IncrementalAlterConfigsRequestResource
	for i, g := range groups {
		r := kmsg.NewIncrementalAlterConfigsRequestResource()
		r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeGroupConfig, g
		r.Configs = []kmsg.IncrementalAlterConfigsRequestResourceConfig{setOp("group.max.size", fmt.Sprint(10+i))}
		ops = append(ops, r)
		want[g] = fmt.Sprintf("%d/%v", 10+i, kmsg.ConfigSourceGroupConfig)
	}
	ia := kmsg.NewPtrIncrementalAlterConfigsRequest()
	ia.Resources = ops
	iaResp, err := ia.RequestWith(ctx, nodeRequestor(t, nodes[0].KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range iaResp.Resources {
		if r.ResourceName != groups[i] || r.ErrorCode != 0 {
			t.Fatalf("incremental alter of %s (resource %s): %v %s", groups[i], r.ResourceName, kerr.ErrorForCode(r.ErrorCode), deref(r.ErrorMessage))
		}
	}
	last := groups[parts-1]
	owner, _ := ownerOf(t, nodes, last, parts)
	other := nodes[0]
	if other == owner {
		other = nodes[1]
	}
	ac := kmsg.NewPtrAlterConfigsRequest()
	ac.Resources = []kmsg.AlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: last,
		Configs: []kmsg.AlterConfigsRequestResourceConfig{{Name: "group.max.size", Value: kmsg.StringPtr("99")}}}}
	acResp, err := ac.RequestWith(ctx, nodeRequestor(t, other.KafkaAddr()))
	if err != nil || len(acResp.Resources) != 1 || acResp.Resources[0].ErrorCode != 0 {
		t.Fatalf("alter %s through a node not owning it: %v %+v", last, err, acResp)
	}
	want[last] = fmt.Sprintf("99/%v", kmsg.ConfigSourceGroupConfig)

	check := func(nodes []*host.Server, groups []string) {
		t.Helper()
		for _, n := range nodes {
			r := nodeRequestor(t, n.KafkaAddr())
			got := describeGroupMaxSize(t, ctx, r, groups)
			for _, g := range groups {
				if got[g] != want[g] {
					t.Fatalf("node %s describes %s's group.max.size as %s, want %s", n.KafkaAddr(), g, got[g], want[g])
				}
			}
			if listed, all := listGroupConfigs(t, ctx, r), slices.Sorted(slices.Values(groups)); !slices.Equal(listed, all) {
				t.Fatalf("node %s lists the group configs %v, want %v, each once", n.KafkaAddr(), listed, all)
			}
		}
	}
	check(nodes, groups)

	// A fourth node joins: the cooperative rebalance moves partitions to
	// it. Every config is altered again through it; the nodes that gave
	// partitions up must not answer from what they replayed.
	nodes = append(nodes, startClusterNode(t, dp, parts, "n3", withoutAuthz))
	waitRoutesUneven(t, nodes, parts)
	for i, g := range groups {
		mustAlter(t, ctx, nodeRequestor(t, nodes[3].KafkaAddr()), g, setOp("group.max.size", fmt.Sprint(50+i)))
		want[g] = fmt.Sprintf("%d/%v", 50+i, kmsg.ConfigSourceGroupConfig)
	}
	check(nodes, groups)

	// A node stops: the others take its partitions over and still
	// answer every group.
	stopHost(t, nodes[0])
	check(nodes[1:], groups)

	// The partitions taken over after the configs were written replayed
	// their records: GET /v1/cluster shows each replay read to its end.
	waitFor(t, 30*time.Second, "the survivors' partitions replayed", func() error {
		return replayedToEnd(t, nodes[1:], parts)
	})
}

// replayedToEnd checks that nodes hold every one of parts partitions,
// each active with its replay read to its end offset (lag 0), and that
// some replay read records.
func replayedToEnd(t *testing.T, nodes []*host.Server, parts int) error {
	held, records := 0, false
	for _, n := range nodes {
		for _, p := range clusterStatus(t, n).Partitions {
			if p.State != "active" || p.ReplayOffset == nil || p.ReplayEndOffset == nil || p.ReplayLag == nil {
				return fmt.Errorf("partition %d: %+v", p.Partition, p)
			}
			if *p.ReplayOffset != *p.ReplayEndOffset || *p.ReplayLag != 0 {
				t.Fatalf("partition %d is active with its replay at %d of %d (lag %d)", p.Partition, *p.ReplayOffset, *p.ReplayEndOffset, *p.ReplayLag)
			}
			held++
			records = records || *p.ReplayEndOffset > 0
		}
	}
	if held != parts || !records {
		return fmt.Errorf("%d partitions held, records replayed: %v", held, records)
	}
	return nil
}

// waitRoutesUneven waits until every one of parts partitions is active
// on exactly one of nodes and the last node holds some.
func waitRoutesUneven(t *testing.T, nodes []*host.Server, parts int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		held := map[int]int{}
		lastHolds := false
		for i, n := range nodes {
			st := clusterStatus(t, n)
			for _, p := range st.Partitions {
				if p.State == "active" && st.LeaseValid {
					held[p.Partition]++
					lastHolds = lastHolds || i == len(nodes)-1
				}
			}
		}
		ok := lastHolds && len(held) == parts
		for _, c := range held {
			ok = ok && c == 1
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("partitions never settled over %d nodes: %v", len(nodes), held)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
