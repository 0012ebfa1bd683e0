package host_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/cluster"
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
