package host_test

import (
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/authz"
	"github.com/coordhost/coordhost/host/wire"
)

// observedCluster is an external Kafka (kfake) that records every API key
// it receives, except the authorization probes' heartbeats.
type observedCluster struct {
	c    *kfake.Cluster
	mu   sync.Mutex
	seen map[int16]int
}

func newObservedCluster(t *testing.T, opts ...kfake.Opt) *observedCluster {
	t.Helper()
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	o := &observedCluster{c: c, seen: map[int16]int{}}
	c.Control(func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if hb, ok := req.(*kmsg.HeartbeatRequest); ok && hb.MemberID == authz.ProbeMemberID {
			return nil, nil, false // asks the cluster's authorizer; joins nothing
		}
		o.mu.Lock()
		o.seen[req.Key()]++
		o.mu.Unlock()
		return nil, nil, false
	})
	return o
}

func (o *observedCluster) saw(key kmsg.Key) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.seen[int16(key)]
}

func (o *observedCluster) bootstrap() string { return "--dataplane.bootstrap=" + o.c.ListenAddrs()[0] }

// TestGroupAPIsNeverForwarded: every group-coordination request is answered
// by coordhost (COORDINATOR_NOT_AVAILABLE until core is wired), consumer-
// and share-group APIs are not advertised and get UNSUPPORTED_VERSION, and
// none of them reaches the data plane — while ordinary requests do.
func TestGroupAPIsNeverForwarded(t *testing.T) {
	dp := newObservedCluster(t, kfake.NumBrokers(1), kfake.SeedTopics(2, "t"))
	srv := startHost(t, "", "--dataplane.mode=external", dp.bootstrap())
	c := dialRaw(t, srv.KafkaAddr())

	av := c.do(kmsg.NewPtrApiVersionsRequest(), 3).(*kmsg.ApiVersionsResponse)
	advertised := map[int16]bool{}
	for _, k := range av.ApiKeys {
		advertised[k.ApiKey] = true
	}
	for _, k := range wire.NotServed {
		if advertised[int16(k)] {
			t.Errorf("%s is advertised", kmsg.NameForKey(int16(k)))
		}
	}
	if len(av.ApiKeys) != len(srv.Table().Entries()) {
		t.Errorf("advertised %d keys, table serves %d", len(av.ApiKeys), len(srv.Table().Entries()))
	}

	const cna = 15 // COORDINATOR_NOT_AVAILABLE
	top := func(name string, code int16) {
		t.Helper()
		if code != cna {
			t.Errorf("%s: error code %d, want COORDINATOR_NOT_AVAILABLE", name, code)
		}
	}
	top("JoinGroup", c.do(&kmsg.JoinGroupRequest{Group: "g", ProtocolType: "consumer", SessionTimeoutMillis: 10000, RebalanceTimeoutMillis: 10000}, 9).(*kmsg.JoinGroupResponse).ErrorCode)
	top("SyncGroup", c.do(&kmsg.SyncGroupRequest{Group: "g", MemberID: "m"}, 5).(*kmsg.SyncGroupResponse).ErrorCode)
	top("Heartbeat", c.do(&kmsg.HeartbeatRequest{Group: "g", MemberID: "m"}, 4).(*kmsg.HeartbeatResponse).ErrorCode)
	top("LeaveGroup", c.do(&kmsg.LeaveGroupRequest{Group: "g", Members: []kmsg.LeaveGroupRequestMember{{MemberID: "m"}}}, 5).(*kmsg.LeaveGroupResponse).ErrorCode)
	top("ListGroups", c.do(kmsg.NewPtrListGroupsRequest(), 5).(*kmsg.ListGroupsResponse).ErrorCode)
	top("OffsetDelete", c.do(&kmsg.OffsetDeleteRequest{Group: "g"}, 0).(*kmsg.OffsetDeleteResponse).ErrorCode)
	top("StreamsGroupHeartbeat", c.do(&kmsg.StreamsGroupHeartbeatRequest{Group: "app", MemberEpoch: 0, RebalanceTimeoutMillis: -1}, 1).(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode)
	top("FindCoordinator(group)", c.do(&kmsg.FindCoordinatorRequest{CoordinatorKeys: []string{"g"}}, 6).(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode)
	top("DescribeGroups", c.do(&kmsg.DescribeGroupsRequest{Groups: []string{"g"}}, 5).(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode)
	top("DeleteGroups", c.do(&kmsg.DeleteGroupsRequest{Groups: []string{"g"}}, 2).(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode)
	top("StreamsGroupDescribe", c.do(&kmsg.StreamsGroupDescribeRequest{Groups: []string{"app"}}, 1).(*kmsg.StreamsGroupDescribeResponse).Groups[0].ErrorCode)
	commit := &kmsg.OffsetCommitRequest{Group: "g", Generation: 1, MemberID: "m", Topics: []kmsg.OffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 5}}}}}
	top("OffsetCommit", c.do(commit, 9).(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode)
	txn := &kmsg.TxnOffsetCommitRequest{TransactionalID: "tx", Group: "g", Topics: []kmsg.TxnOffsetCommitRequestTopic{{Topic: "t", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: 0}}}}}
	top("TxnOffsetCommit", c.do(txn, 4).(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode)
	fetch := &kmsg.OffsetFetchRequest{Groups: []kmsg.OffsetFetchRequestGroup{{Group: "g"}}}
	top("OffsetFetch", c.do(fetch, 8).(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode)
	dc := &kmsg.DescribeConfigsRequest{Resources: []kmsg.DescribeConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "g"}}}
	top("DescribeConfigs(GROUP)", c.do(dc, 4).(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode)
	iac := &kmsg.IncrementalAlterConfigsRequest{Resources: []kmsg.IncrementalAlterConfigsRequestResource{{ResourceType: kmsg.ConfigResourceTypeGroupConfig, ResourceName: "g"}}}
	top("IncrementalAlterConfigs(GROUP)", c.do(iac, 1).(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode)

	const uv = 35 // UNSUPPORTED_VERSION
	// kfake serves KIP-848 and finalizes group.version, so coordhost serves them too
	top("ConsumerGroupHeartbeat", c.do(&kmsg.ConsumerGroupHeartbeatRequest{Group: "g", MemberEpoch: 0, RebalanceTimeoutMillis: -1}, 1).(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)
	top("ConsumerGroupDescribe", c.do(&kmsg.ConsumerGroupDescribeRequest{Groups: []string{"g"}}, 1).(*kmsg.ConsumerGroupDescribeResponse).Groups[0].ErrorCode)
	if code := c.do(&kmsg.ShareGroupHeartbeatRequest{GroupID: "g"}, 1).(*kmsg.ShareGroupHeartbeatResponse).ErrorCode; code != uv {
		t.Errorf("ShareGroupHeartbeat: %d", code)
	}

	// Positive control: a data request does reach the observed cluster.
	before := dp.saw(kmsg.Metadata)
	c.do(kmsg.NewPtrMetadataRequest(), 12)
	if dp.saw(kmsg.Metadata) <= before {
		t.Fatal("the observer did not see a forwarded Metadata request")
	}
	for _, k := range []kmsg.Key{kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.LeaveGroup, kmsg.ListGroups, kmsg.OffsetDelete,
		kmsg.StreamsGroupHeartbeat, kmsg.FindCoordinator, kmsg.DescribeGroups, kmsg.DeleteGroups, kmsg.StreamsGroupDescribe,
		kmsg.OffsetCommit, kmsg.TxnOffsetCommit, kmsg.OffsetFetch, kmsg.DescribeConfigs, kmsg.IncrementalAlterConfigs,
		kmsg.ConsumerGroupHeartbeat, kmsg.ConsumerGroupDescribe, kmsg.ShareGroupHeartbeat} {
		if n := dp.saw(k); n != 0 {
			t.Errorf("%s reached the data plane %d times", kmsg.NameForKey(int16(k)), n)
		}
	}
}

// TestExternalRewritesEveryBrokerAddress: a three-node external cluster is
// fronted by three coordhost listeners; Metadata, DescribeCluster and the
// transaction coordinator only ever show coordhost addresses, and a client
// produces to and consumes from partitions led by every node.
func TestExternalRewritesEveryBrokerAddress(t *testing.T) {
	dp := newObservedCluster(t, kfake.NumBrokers(3), kfake.SeedTopics(6, "spread"))
	srv := startHost(t, "", "--dataplane.mode=external", dp.bootstrap())
	real := map[string]bool{}
	for _, a := range dp.c.ListenAddrs() {
		real[a] = true
	}
	c := dialRaw(t, srv.KafkaAddr())
	listeners := map[string]bool{}
	check := func(what, host string, port int32) {
		t.Helper()
		addr := net.JoinHostPort(host, strconv.Itoa(int(port)))
		if real[addr] {
			t.Errorf("%s leaks the real broker address %s", what, addr)
		}
		listeners[addr] = true
	}
	md := c.do(kmsg.NewPtrMetadataRequest(), 12).(*kmsg.MetadataResponse)
	if len(md.Brokers) != 3 {
		t.Fatalf("metadata shows %d brokers", len(md.Brokers))
	}
	for _, b := range md.Brokers {
		check("Metadata", b.Host, b.Port)
	}
	if len(listeners) != 3 {
		t.Fatalf("brokers share listeners: %v", listeners)
	}
	for _, b := range c.do(kmsg.NewPtrDescribeClusterRequest(), 1).(*kmsg.DescribeClusterResponse).Brokers {
		check("DescribeCluster", b.Host, b.Port)
	}
	fc := c.do(&kmsg.FindCoordinatorRequest{CoordinatorType: 1, CoordinatorKeys: []string{"tx-1"}}, 6).(*kmsg.FindCoordinatorResponse)
	if len(fc.Coordinators) != 1 || fc.Coordinators[0].ErrorCode != 0 {
		t.Fatalf("transaction coordinator lookup: %+v", fc.Coordinators)
	}
	check("FindCoordinator(transaction)", fc.Coordinators[0].Host, fc.Coordinators[0].Port)
	if len(listeners) != 3 {
		t.Fatalf("addresses outside the three listeners: %v", listeners)
	}
	for addr := range listeners { // every advertised address is a live coordhost listener
		dialRaw(t, addr).do(kmsg.NewPtrApiVersionsRequest(), 3)
	}

	ctx := timeout(t)
	p, err := kgo.NewClient(kgo.SeedBrokers(srv.KafkaAddr()), kgo.DefaultProduceTopic("spread"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	offsets := map[int32]kgo.Offset{}
	for part := int32(0); part < 6; part++ {
		if err := p.ProduceSync(ctx, &kgo.Record{Partition: part, Value: []byte{byte('a' + part)}}).FirstErr(); err != nil {
			t.Fatalf("produce to partition %d: %v", part, err)
		}
		offsets[part] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(srv.KafkaAddr()), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"spread": offsets}), kgo.FetchMaxWait(250*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	got := map[int32]string{}
	for len(got) < 6 {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("consumed %v before timeout", got)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		fs.EachRecord(func(r *kgo.Record) { got[r.Partition] = string(r.Value) })
	}
	for part := int32(0); part < 6; part++ {
		if got[part] != string(rune('a'+part)) {
			t.Errorf("partition %d: %q", part, got[part])
		}
	}

}

// TestNodeAddedLaterGetsAListener: a data-plane node that appears after
// start gets its own coordhost listener the first time a response names it.
func TestNodeAddedLaterGetsAListener(t *testing.T) {
	dp := newObservedCluster(t, kfake.NumBrokers(1))
	srv := startHost(t, "", "--dataplane.mode=external", dp.bootstrap())
	c := dialRaw(t, srv.KafkaAddr())
	if n := len(c.do(kmsg.NewPtrMetadataRequest(), 12).(*kmsg.MetadataResponse).Brokers); n != 1 {
		t.Fatalf("%d brokers before", n)
	}
	if _, _, err := dp.c.AddNode(-1, 0); err != nil {
		t.Fatal(err)
	}
	md := c.do(kmsg.NewPtrMetadataRequest(), 12).(*kmsg.MetadataResponse)
	if len(md.Brokers) != 2 {
		t.Fatalf("%d brokers after AddNode", len(md.Brokers))
	}
	seen := map[int32]bool{}
	for _, b := range md.Brokers {
		seen[b.Port] = true
		dialRaw(t, net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port)))).do(kmsg.NewPtrApiVersionsRequest(), 3)
	}
	if len(seen) != 2 {
		t.Fatalf("nodes share a listener: %+v", md.Brokers)
	}
}
