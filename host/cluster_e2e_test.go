package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/cluster"
	"github.com/coordhost/coordhost/host/runtime"
)

// joinOneMember joins group with one classic consumer member through cl
// and syncs it; it returns the member id.
func joinOneMember(ctx context.Context, t *testing.T, cl *kgo.Client, group string) string {
	t.Helper()
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = group, 30000, 30000, "consumer"
	proto := kmsg.NewJoinGroupRequestProtocol()
	proto.Name = "range"
	join.Protocols = append(join.Protocols, proto)
	jr, err := join.RequestWith(ctx, cl)
	if err == nil && errors.Is(kerr.ErrorForCode(jr.ErrorCode), kerr.MemberIDRequired) {
		join.MemberID = jr.MemberID
		jr, err = join.RequestWith(ctx, cl)
	}
	if err != nil || jr.ErrorCode != 0 || jr.Generation != 1 {
		t.Fatalf("join: %v %v generation %d", err, kerr.ErrorForCode(jr.ErrorCode), jr.Generation)
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = group, jr.MemberID, jr.Generation
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	sa := kmsg.NewSyncGroupRequestGroupAssignment()
	sa.MemberID, sa.MemberAssignment = jr.MemberID, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	sync.GroupAssignment = append(sync.GroupAssignment, sa)
	if sr, err := sync.RequestWith(ctx, cl); err != nil || sr.ErrorCode != 0 {
		t.Fatalf("sync: %v %+v", err, sr)
	}
	return jr.MemberID
}

// describeOne describes group on the node behind c, once: a kgo client
// would retry NOT_COORDINATOR itself.
func describeOne(t *testing.T, c *rawConn, group string) kmsg.DescribeGroupsResponseGroup {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp := c.do(req, 5).(*kmsg.DescribeGroupsResponse)
	if len(resp.Groups) != 1 {
		t.Fatalf("describe %s: %+v", group, resp)
	}
	return resp.Groups[0]
}

func clusterStatus(t *testing.T, srv *host.Server) cluster.Status {
	t.Helper()
	resp, err := http.Get("http://" + srv.AdminAddr() + "/v1/cluster")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st cluster.Status
	if resp.StatusCode != 200 {
		t.Fatalf("GET /v1/cluster: %s", resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestClusterNodesShareGroups: two coordhost servers of one cluster.id on
// one state topic split its partitions (GET /v1/cluster); a group is
// answered by exactly one of them, the other says NOT_COORDINATOR; when
// its node shuts down, the other takes the partition over and describes
// the group as the first node wrote it.
func TestClusterNodesShareGroups(t *testing.T) {
	dp := newObservedCluster(t, kfake.NumBrokers(1), kfake.SeedTopics(1, "t"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	args := []string{"--dataplane.mode=external", dp.bootstrap(), "--store.kind=kafka", "--store.partitions=4",
		"--cluster.id=c1", "--cluster.ownership.session.timeout.ms=1500", "--cluster.ownership.lease.margin.ms=300"}
	a := startLoopHost(t, "", append(args, "--cluster.node.id=a")...)
	b := startLoopHost(t, "", append(args, "--cluster.node.id=b")...)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var sa, sb cluster.Status
	for {
		sa, sb = clusterStatus(t, a), clusterStatus(t, b)
		if len(sa.Partitions) == 2 && len(sb.Partitions) == 2 && sa.LeaseValid && sb.LeaseValid &&
			sa.Partitions[0].State == "active" && sa.Partitions[1].State == "active" &&
			sb.Partitions[0].State == "active" && sb.Partitions[1].State == "active" {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("partitions not split: a %+v, b %+v", sa, sb)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if sa.Node != "a" || sb.Node != "b" || sa.Group != "coordhost-c1" {
		t.Fatalf("status names: %+v %+v", sa, sb)
	}
	ownerSrv, otherSrv := a, b
	if describeOne(t, dialRaw(t, a.KafkaAddr()), "g").ErrorCode == kerr.NotCoordinator.Code {
		ownerSrv, otherSrv = b, a
	}
	other := dialRaw(t, otherSrv.KafkaAddr())
	if code := describeOne(t, other, "g").ErrorCode; code != kerr.NotCoordinator.Code {
		t.Fatalf("the node not owning g's partition answers %v", kerr.ErrorForCode(code))
	}
	member := joinOneMember(ctx, t, newClient(t, ownerSrv.KafkaAddr()), "g")
	stopHost(t, ownerSrv)
	for {
		g := describeOne(t, other, "g")
		if g.ErrorCode == 0 {
			if len(g.Members) != 1 || g.Members[0].MemberID != member {
				t.Fatalf("after failover: %+v", g)
			}
			break
		}
		if code := g.ErrorCode; code != kerr.NotCoordinator.Code && code != kerr.CoordinatorLoadInProgress.Code {
			t.Fatalf("during failover: %v", kerr.ErrorForCode(code))
		}
		if ctx.Err() != nil {
			t.Fatal("the surviving node never took g's partition over")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st := clusterStatus(t, otherSrv); len(st.Partitions) != 4 {
		t.Fatalf("survivor owns %d partitions", len(st.Partitions))
	}
}

// startClusterNodes starts n coordhost nodes of cluster c1 on dp, with
// parts store partitions, and waits until every partition is active on
// one node and every node knows every other's partitions (the routes
// FindCoordinator answers from).
func startClusterNodes(t *testing.T, dp *observedCluster, n, parts int) []*host.Server {
	t.Helper()
	return startClusterNodesWith(t, dp, n, parts, host.NewCoordinator)
}

// startClusterNodesWith is startClusterNodes with the coordinator
// factory wire.
func startClusterNodesWith(t *testing.T, dp *observedCluster, n, parts int, wire func(*host.Server) (host.Wiring, error)) []*host.Server {
	t.Helper()
	var nodes []*host.Server
	for i := range n {
		nodes = append(nodes, startClusterNode(t, dp, parts, fmt.Sprintf("n%d", i), wire))
	}
	waitRoutes(t, nodes, parts)
	return nodes
}

// startClusterNode starts node id of cluster c1 on dp.
func startClusterNode(t *testing.T, dp *observedCluster, parts int, id string, wire func(*host.Server) (host.Wiring, error)) *host.Server {
	t.Helper()
	return startHostWith(t, "", wire, "--dataplane.mode=external", dp.bootstrap(), "--store.kind=kafka", fmt.Sprintf("--store.partitions=%d", parts),
		"--cluster.id=c1", "--cluster.ownership.session.timeout.ms=1500", "--cluster.ownership.lease.margin.ms=300", "--cluster.node.id="+id)
}

// waitRoutes waits until nodes hold every one of parts partitions
// between them, evenly (the ownership group's last rebalance is over),
// active, and each node's view of the cluster's routes
// agrees with what each node holds.
func waitRoutes(t *testing.T, nodes []*host.Server, parts int) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if routesAgree(t, nodes, parts) {
			return
		}
		if time.Now().After(deadline) {
			for _, n := range nodes {
				t.Logf("%+v", clusterStatus(t, n))
			}
			t.Fatal("the nodes never agreed on the routes")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func routesAgree(t *testing.T, nodes []*host.Server, parts int) bool {
	var sts []cluster.Status
	for _, n := range nodes {
		sts = append(sts, clusterStatus(t, n))
	}
	return cluster.Settled(sts, parts)
}

// ownerOf returns the node whose partitions include group's.
func ownerOf(t *testing.T, nodes []*host.Server, group string, parts int) (*host.Server, cluster.Status) {
	t.Helper()
	p := runtime.PartitionFor(group, parts)
	for _, n := range nodes {
		st := clusterStatus(t, n)
		for _, ps := range st.Partitions {
			if ps.Partition == p {
				return n, st
			}
		}
	}
	t.Fatalf("no node holds %s's partition %d", group, p)
	return nil, cluster.Status{}
}

// coordinatorRequestor sends each request to the coordinator of group as
// FindCoordinator names it on the node cl was seeded with, as a Kafka
// Streams client does: no request is routed by hand.
type coordinatorRequestor struct {
	cl    *kgo.Client
	group string
}

func (r coordinatorRequestor) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.CoordinatorType, find.CoordinatorKeys = 0, []string{r.group}
	resp, err := find.RequestWith(ctx, r.cl.SeedBrokers()[0])
	if err != nil {
		return nil, err
	}
	if len(resp.Coordinators) != 1 || resp.Coordinators[0].ErrorCode != 0 {
		return nil, fmt.Errorf("find coordinator of %s: %+v", r.group, resp.Coordinators)
	}
	return r.cl.Broker(int(resp.Coordinators[0].NodeID)).Request(ctx, req)
}

func epochOf(m *streamsMember) int32 { e, _, _ := m.state(); return e }

// TestClusterRoutesClientsToOwner: three nodes of one cluster. Every
// node's FindCoordinator (v3 single key, v4+ batched) names each
// group's owner by its synthetic broker id and listener, and Metadata
// lists the three nodes; a kgo consumer group seeded with a node that
// does not own the group, and a streams group driven with kmsg through
// FindCoordinator on another such node, are served by the owner. After
// the consumer group's owner stops, the consumers keep consuming and
// commit through the node that took the partition over, and the
// streams member keeps its epoch.
func TestClusterRoutesClientsToOwner(t *testing.T) {
	const parts = 6
	dp := newObservedCluster(t, kfake.NumBrokers(1), kfake.SeedTopics(2, "t"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	nodes := startClusterNodes(t, dp, 3, parts)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	groups := []string{"route-a", "route-b", "route-c", "route-d", "route-e", "route-f"}
	for _, n := range nodes {
		raw := dialRaw(t, n.KafkaAddr())
		batch := kmsg.NewPtrFindCoordinatorRequest()
		batch.CoordinatorKeys = groups
		resp := raw.do(batch, 4).(*kmsg.FindCoordinatorResponse)
		for i, g := range groups {
			_, owner := ownerOf(t, nodes, g, parts)
			c := resp.Coordinators[i]
			if c.Key != g || c.ErrorCode != 0 || c.NodeID != owner.BrokerID || c.Host != owner.Host || c.Port != owner.Port {
				t.Fatalf("FindCoordinator v4 of %s on %s: %+v, owner %d %s:%d", g, n.KafkaAddr(), c, owner.BrokerID, owner.Host, owner.Port)
			}
			single := kmsg.NewPtrFindCoordinatorRequest()
			single.CoordinatorKey = g
			r3 := raw.do(single, 3).(*kmsg.FindCoordinatorResponse)
			if r3.ErrorCode != 0 || r3.NodeID != owner.BrokerID || r3.Port != owner.Port {
				t.Fatalf("FindCoordinator v3 of %s: %+v", g, r3)
			}
		}
		md := raw.do(kmsg.NewPtrMetadataRequest(), 12).(*kmsg.MetadataResponse)
		ids := map[int32]bool{}
		for _, b := range md.Brokers {
			ids[b.NodeID] = true
		}
		for _, m := range nodes {
			if id := clusterStatus(t, m).BrokerID; !ids[id] || id < cluster.MinBrokerID {
				t.Fatalf("Metadata on %s lists %v, not node %d", n.KafkaAddr(), md.Brokers, id)
			}
		}
	}

	// A classic consumer group, seeded with a node that does not own it.
	const group = "route-consumers"
	ownerSrv, _ := ownerOf(t, nodes, group, parts)
	var seed *host.Server
	for _, n := range nodes {
		if n != ownerSrv && seed == nil {
			seed = n
		}
	}
	producer := newClient(t, seed.KafkaAddr(), kgo.DefaultProduceTopic("t"))
	produce := func(n int) {
		for i := range n {
			if err := producer.ProduceSync(ctx, kgo.StringRecord(fmt.Sprint(i))).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(10)
	consumers := make([]*kgo.Client, 2)
	for i := range consumers {
		consumers[i] = newClient(t, seed.KafkaAddr(), kgo.ConsumerGroup(group), kgo.ConsumeTopics("t"),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(200*time.Millisecond))
	}
	consumeAndCommit := func(want int) {
		got := 0
		for got < want {
			for _, c := range consumers {
				pctx, pcancel := context.WithTimeout(ctx, 200*time.Millisecond)
				fs := c.PollFetches(pctx)
				pcancel()
				got += fs.NumRecords()
				if fs.NumRecords() > 0 {
					if err := c.CommitUncommittedOffsets(ctx); err != nil {
						t.Fatalf("commit: %v", err)
					}
				}
			}
			if ctx.Err() != nil {
				t.Fatalf("consumed %d of %d", got, want)
			}
		}
	}
	consumeAndCommit(10)
	ownerConn := dialRaw(t, ownerSrv.KafkaAddr())
	for { // both consumers joined, through the owner
		g := describeOne(t, ownerConn, group)
		if g.ErrorCode == 0 && g.State == "Stable" && len(g.Members) == 2 {
			break
		}
		if g.ErrorCode != 0 || ctx.Err() != nil {
			t.Fatalf("the owner's view of %s: %+v", group, g)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// A streams group through kmsg, seeded with a node that does not own
	// it (and stays up).
	const sgroup = "route-streams"
	sOwner, _ := ownerOf(t, nodes, sgroup, parts)
	var sSeed *host.Server // neither its owner nor the node stopped below
	for _, n := range nodes {
		if n != sOwner && n != ownerSrv {
			sSeed = n
		}
	}
	member := newStreamsMember(coordinatorRequestor{cl: newClient(t, sSeed.KafkaAddr()), group: sgroup}, sgroup, "t")
	for epochOf(member) == 0 || len(member.partitions()) != 2 {
		if code, _, err := member.heartbeat(ctx); err != nil || code != 0 {
			t.Fatalf("streams heartbeat: %v %v", err, kerr.ErrorForCode(code))
		}
		if ctx.Err() != nil {
			t.Fatal("the streams member never got its tasks")
		}
		time.Sleep(50 * time.Millisecond)
	}
	epoch := epochOf(member)

	// The consumer group's owner stops: its partitions move, the clients
	// find the new owner through the nodes left.
	stopHost(t, ownerSrv)
	left := []*host.Server{}
	for _, n := range nodes {
		if n != ownerSrv {
			left = append(left, n)
		}
	}
	waitRoutes(t, left, parts)
	produce(10)
	consumeAndCommit(10)
	for {
		code, _, err := member.heartbeat(ctx)
		if err == nil && code == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("streams member after failover: %v %v", err, kerr.ErrorForCode(code))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if e := epochOf(member); e < epoch || len(member.partitions()) != 2 {
		t.Fatalf("streams member after failover: epoch %d (was %d), tasks %v", e, epoch, member.partitions())
	}
	if _, _, fenced := member.state(); fenced != 0 {
		t.Fatalf("the streams member was fenced %d times", fenced)
	}
}
