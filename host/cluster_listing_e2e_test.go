package host_test

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/cluster"
)

func brokerAddr(host string, port int32) string {
	return net.JoinHostPort(host, strconv.Itoa(int(port)))
}

// TestClusterListsBrokersAndGroupsOnce: three nodes of one cluster in
// front of two data-plane brokers. Every node's Metadata lists each
// data-plane broker at one of this node's listeners, and every node's
// listener for each data-plane broker under a synthetic id (the node's
// own id for its first listener, a node × broker id for the other);
// DescribeCluster lists the same brokers. ListGroups
// sent to every broker of a node's Metadata, as Kafka's admin client and
// kadm send it, lists every group, core's and the offsets-only ones of
// the data plane, each by exactly one node: its owner.
func TestClusterListsBrokersAndGroupsOnce(t *testing.T) {
	const parts = 6
	dp := newObservedCluster(t, kfake.NumBrokers(2), kfake.SeedTopics(2, "t"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	nodes := startClusterNodes(t, dp, 3, parts)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// Core groups, one per partition, joined through their owners; and
	// offsets-only groups, committed to the data plane directly.
	core := onePerPartition("listed", parts)
	for _, g := range core {
		owner, _ := ownerOf(t, nodes, g, parts)
		joinOneMember(ctx, t, newClient(t, owner.KafkaAddr()), g)
	}
	direct := newClient(t, dp.c.ListenAddrs()[0])
	offsetsOnly := onePerPartition("offsets-only", parts)
	for _, g := range offsetsOnly {
		oc := kmsg.NewPtrOffsetCommitRequest()
		oc.Group, oc.Generation = g, -1
		oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
		resp, err := oc.RequestWith(ctx, direct)
		if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 {
			t.Fatalf("commit %s to the data plane: %v %+v", g, err, resp)
		}
	}

	// Each listener address belongs to the node whose Metadata gives it.
	nodeOf := map[string]*host.Server{}
	metadata := map[*host.Server]*kmsg.MetadataResponse{}
	for _, n := range nodes {
		md := dialRaw(t, n.KafkaAddr()).do(kmsg.NewPtrMetadataRequest(), 12).(*kmsg.MetadataResponse)
		metadata[n] = md
		self := clusterStatus(t, n)
		for _, b := range md.Brokers {
			if b.NodeID < 1_000_000_000 || b.NodeID == self.BrokerID {
				nodeOf[brokerAddr(b.Host, b.Port)] = n
			}
		}
	}
	// Each node's listener for each data-plane broker has a broker id in
	// every node's Metadata: the node's own id for its first listener, the
	// node × broker id for the other.
	status := map[*host.Server]cluster.Status{}
	listenerFor := map[*host.Server]map[int32]string{} // data-plane broker id -> the node's listener
	for _, n := range nodes {
		status[n] = clusterStatus(t, n)
		listenerFor[n] = map[int32]string{}
		for _, b := range metadata[n].Brokers {
			if b.NodeID < cluster.MinBrokerID {
				listenerFor[n][b.NodeID] = brokerAddr(b.Host, b.Port)
			}
		}
	}
	for _, n := range nodes {
		md := metadata[n]
		if len(md.Brokers) != 2+2*len(nodes) {
			t.Fatalf("Metadata on %s lists %d brokers, want 2 data-plane brokers and 2 per node: %+v", n.KafkaAddr(), len(md.Brokers), md.Brokers)
		}
		listed := map[int32]string{}
		for _, b := range md.Brokers {
			listed[b.NodeID] = brokerAddr(b.Host, b.Port)
		}
		for _, m := range nodes {
			st := status[m]
			self := brokerAddr(st.Host, st.Port)
			if listed[st.BrokerID] != self {
				t.Fatalf("Metadata on %s lists node %s's id %d at %q, want %s", n.KafkaAddr(), st.Node, st.BrokerID, listed[st.BrokerID], self)
			}
			for up, addr := range listenerFor[m] {
				if id := cluster.PairIDFor(st.Node, up); addr != self && listed[id] != addr {
					t.Fatalf("Metadata on %s lists node %s × broker %d (id %d) at %q, want %s", n.KafkaAddr(), st.Node, up, id, listed[id], addr)
				}
			}
		}
		var want, got []string
		for _, b := range md.Brokers {
			want = append(want, fmt.Sprintf("%d@%s", b.NodeID, brokerAddr(b.Host, b.Port)))
		}
		dc := dialRaw(t, n.KafkaAddr()).do(kmsg.NewPtrDescribeClusterRequest(), 1).(*kmsg.DescribeClusterResponse)
		if dc.ErrorCode != 0 {
			t.Fatalf("DescribeCluster on %s: %v", n.KafkaAddr(), kerr.ErrorForCode(dc.ErrorCode))
		}
		for _, b := range dc.Brokers {
			got = append(got, fmt.Sprintf("%d@%s", b.NodeID, brokerAddr(b.Host, b.Port)))
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Fatalf("DescribeCluster on %s lists %v, Metadata %v", n.KafkaAddr(), got, want)
		}
	}

	// ListGroups to every broker of each node's Metadata.
	for _, seed := range nodes {
		listedBy := map[string]map[*host.Server]bool{}
		for _, b := range metadata[seed].Brokers {
			addr := brokerAddr(b.Host, b.Port)
			lg := dialRaw(t, addr).do(kmsg.NewPtrListGroupsRequest(), 5).(*kmsg.ListGroupsResponse)
			if lg.ErrorCode != 0 {
				t.Fatalf("ListGroups on broker %d (%s): %v", b.NodeID, addr, kerr.ErrorForCode(lg.ErrorCode))
			}
			for _, g := range lg.Groups {
				if listedBy[g.Group] == nil {
					listedBy[g.Group] = map[*host.Server]bool{}
				}
				listedBy[g.Group][nodeOf[addr]] = true
			}
		}
		for _, g := range append(slices.Clone(core), offsetsOnly...) {
			owner, _ := ownerOf(t, nodes, g, parts)
			if len(listedBy[g]) != 1 || !listedBy[g][owner] {
				t.Fatalf("group %s (owner %s) listed by %d nodes through %s's Metadata", g, owner.KafkaAddr(), len(listedBy[g]), seed.KafkaAddr())
			}
		}
		for g, by := range listedBy {
			if len(by) != 1 {
				t.Fatalf("group %s listed by %d nodes", g, len(by))
			}
		}
	}
}
