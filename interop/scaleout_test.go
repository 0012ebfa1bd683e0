package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/coordhost/coordhost/host/cluster"
	"github.com/coordhost/coordhost/host/runtime"
)

// The scale-out tests run coordhost nodes as processes against the real
// Apache Kafka 4.4 broker with store.kind=kafka and cluster.id, and end
// one of them the hard way (docs/SCALE-OUT.md). Not part of CI's interop
// step; run them with `make scaleout`.
const (
	scaleOutParts   = 6
	scaleOutSession = 6 * time.Second
	scaleOutMargin  = 1500 * time.Millisecond
	scaleOutTopic   = "scaleout-in"
)

// scaleOutNode is one coordhost process of the cluster.
type scaleOutNode struct {
	*coordhost
	admin string
}

func (n *scaleOutNode) status(t *testing.T) (cluster.Status, error) {
	t.Helper()
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://" + n.admin + "/v1/cluster")
	if err != nil {
		return cluster.Status{}, err
	}
	defer resp.Body.Close()
	var st cluster.Status
	if resp.StatusCode != 200 {
		return st, fmt.Errorf("GET /v1/cluster: %s", resp.Status)
	}
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// startScaleOut starts n coordhost nodes of one cluster in front of
// broker and waits until they split the partitions evenly, each active,
// with routes every node agrees on.
func startScaleOut(t *testing.T, dir, broker string, n int) []*scaleOutNode {
	t.Helper()
	var nodes []*scaleOutNode
	for i := range n {
		c := startCoordhost(t, dir, broker, "--store.kind=kafka", fmt.Sprintf("--store.partitions=%d", scaleOutParts),
			"--store.kafka.replication.factor=1", "--cluster.id=scaleout", fmt.Sprintf("--cluster.node.id=n%d", i),
			fmt.Sprintf("--cluster.ownership.session.timeout.ms=%d", scaleOutSession.Milliseconds()),
			fmt.Sprintf("--cluster.ownership.lease.margin.ms=%d", scaleOutMargin.Milliseconds()))
		node := &scaleOutNode{coordhost: c}
		for _, a := range c.args {
			if v, ok := strings.CutPrefix(a, "--admin.listen="); ok {
				node.admin = v
			}
		}
		nodes = append(nodes, node)
	}
	waitScaleOut(t, nodes, 2*time.Minute)
	return nodes
}

// waitScaleOut waits until nodes hold the partitions evenly, active,
// and each one's routes match what the others hold.
func waitScaleOut(t *testing.T, nodes []*scaleOutNode, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !scaleOutAgree(t, nodes) {
		if time.Now().After(deadline) {
			for _, n := range nodes {
				st, err := n.status(t)
				t.Logf("%s: %+v %v", n.addr, st, err)
			}
			t.Fatal("the nodes never agreed on the partitions")
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func scaleOutAgree(t *testing.T, nodes []*scaleOutNode) bool {
	var sts []cluster.Status
	for _, n := range nodes {
		st, err := n.status(t)
		if err != nil {
			return false
		}
		sts = append(sts, st)
	}
	return cluster.Settled(sts, scaleOutParts)
}

// ownerNode returns the node holding partition p.
func ownerNode(t *testing.T, nodes []*scaleOutNode, p int) (*scaleOutNode, cluster.Status) {
	t.Helper()
	for _, n := range nodes {
		st, err := n.status(t)
		if err != nil {
			continue
		}
		for _, ps := range st.Partitions {
			if ps.Partition == p {
				return n, st
			}
		}
	}
	t.Fatalf("no node holds partition %d", p)
	return nil, cluster.Status{}
}

// createScaleOutTopic creates the input topic, with 100 records in each
// of its 6 partitions, and the state topic (compacted, one partition
// per store partition), and waits until the broker's metadata lists
// both: the nodes then find the state topic as it is, since a node that
// creates it reads the metadata once, which may not show it yet.
func createScaleOutTopic(t *testing.T, broker string) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	in := kmsg.NewCreateTopicsRequestTopic()
	in.Topic, in.NumPartitions, in.ReplicationFactor = scaleOutTopic, 6, 1
	state := kmsg.NewCreateTopicsRequestTopic()
	state.Topic, state.NumPartitions, state.ReplicationFactor = "__coordhost_state", scaleOutParts, 1
	compact := kmsg.NewCreateTopicsRequestTopicConfig()
	compact.Name, compact.Value = "cleanup.policy", kmsg.StringPtr("compact")
	state.Configs = append(state.Configs, compact)
	req.Topics = append(req.Topics, in, state)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range resp.Topics {
		if tp.ErrorCode != 0 {
			t.Fatalf("create %s: %v", tp.Topic, kerr.ErrorForCode(tp.ErrorCode))
		}
	}
	for {
		md := kmsg.NewPtrMetadataRequest()
		for _, name := range []string{scaleOutTopic, "__coordhost_state"} {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(name)
			md.Topics = append(md.Topics, rt)
		}
		mr, err := md.RequestWith(ctx, cl)
		if err == nil && len(mr.Topics) == 2 && mr.Topics[0].ErrorCode == 0 && mr.Topics[1].ErrorCode == 0 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the created topics never showed in the metadata: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	p, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.DefaultProduceTopic(scaleOutTopic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rs := make([]*kgo.Record, 600)
	for i := range rs {
		rs[i] = &kgo.Record{Value: fmt.Append(nil, i), Partition: int32(i % 6)}
	}
	if err := p.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		t.Fatalf("produce to %s: %v", scaleOutTopic, err)
	}
}

// scaleOutGroups returns count group names per partition of the store,
// so every partition carries groups and partition busy carries extra.
func scaleOutGroups(prefix string, perPart, busy, extra int) []string {
	var out []string
	have := map[int]int{}
	for i := 0; len(out) < perPart*scaleOutParts+extra; i++ {
		g := fmt.Sprintf("%s-%d", prefix, i)
		p := runtime.PartitionFor(g, scaleOutParts)
		want := perPart
		if p == busy {
			want += extra
		}
		if have[p] < want {
			have[p]++
			out = append(out, g)
		}
	}
	return out
}

// consumer is one kgo member of a classic group with what it saw: the
// member ids and generations it held (never backwards) and the offsets
// a commit through coordhost acknowledged.
type consumer struct {
	group string
	cl    *kgo.Client

	mu      sync.Mutex
	members map[string]bool
	gen     int32
	backs   []string
	acked   map[int32]int64
	errs    []string
}

func (c *consumer) run(ctx context.Context) {
	for ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		fs := c.cl.PollFetches(pctx)
		cancel()
		c.observe()
		if fs.NumRecords() == 0 {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		c.cl.CommitOffsetsSync(cctx, c.cl.UncommittedOffsets(), c.committed)
		cancel()
	}
}

// committed keeps the offsets of an OffsetCommit coordhost acknowledged.
func (c *consumer) committed(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
	if err != nil {
		return
	}
	sent := map[int32]int64{}
	for _, tp := range req.Topics {
		for _, p := range tp.Partitions {
			sent[p.Partition] = p.Offset
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			if p.ErrorCode != 0 {
				c.errs = append(c.errs, kerr.ErrorForCode(p.ErrorCode).Error())
				continue
			}
			c.acked[p.Partition] = max(c.acked[p.Partition], sent[p.Partition])
		}
	}
}

// observe records the member id and generation kgo holds now.
func (c *consumer) observe() {
	m, g := c.cl.GroupMetadata()
	if m == "" || g < 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.members[m] = true
	if g < c.gen {
		c.backs = append(c.backs, fmt.Sprintf("generation %d after %d", g, c.gen))
	}
	c.gen = max(c.gen, g)
}

// routed sends each request to the coordinator of group: it asks the
// first seed node that answers FindCoordinator, then sends the request
// to the node named, as a Kafka Streams client does. Unlike kgo's
// routing of group requests it keeps no coordinator between requests,
// so a dead coordinator costs one failed request, never a stale cache.
type routed struct {
	cl    *kgo.Client
	group string
}

func (r routed) Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error) {
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.CoordinatorKeys = []string{r.group}
	var last error
	for _, seed := range r.cl.SeedBrokers() {
		resp, err := find.RequestWith(ctx, seed)
		if err != nil {
			last = err
			continue
		}
		if len(resp.Coordinators) != 1 {
			return nil, fmt.Errorf("find coordinator of %s: %+v", r.group, resp)
		}
		if c := resp.Coordinators[0]; c.ErrorCode != 0 {
			last = kerr.ErrorForCode(c.ErrorCode)
			continue
		}
		return r.cl.Broker(int(resp.Coordinators[0].NodeID)).Request(ctx, req)
	}
	return nil, fmt.Errorf("find coordinator of %s: %w", r.group, last)
}

// routedMember is a KIP-1071 streams member driven with kmsg through
// routed.
type routedMember struct {
	cl    *kgo.Client
	group string
	id    string

	mu     sync.Mutex
	epoch  int32
	tasks  []kmsg.TaskIDs
	backs  []string
	fenced int
}

func (m *routedMember) heartbeat(ctx context.Context) error {
	m.mu.Lock()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	if m.epoch == 0 {
		proc := "p-" + m.id
		req.RebalanceTimeoutMillis, req.ProcessID = 30000, &proc
		req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
			{SubtopologyID: "0", SourceTopics: []string{scaleOutTopic}}}}
	}
	req.ActiveTasks = append([]kmsg.TaskIDs{}, m.tasks...)
	req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	m.mu.Unlock()
	resp, err := req.RequestWith(ctx, routed{m.cl, m.group})
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch resp.ErrorCode {
	case 0:
	case kerr.FencedMemberEpoch.Code, kerr.UnknownMemberID.Code:
		m.fenced++
		return kerr.ErrorForCode(resp.ErrorCode)
	default:
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	if resp.MemberEpoch < m.epoch {
		m.backs = append(m.backs, fmt.Sprintf("epoch %d after %d", resp.MemberEpoch, m.epoch))
	}
	m.epoch = max(m.epoch, resp.MemberEpoch)
	if resp.ActiveTasks != nil {
		m.tasks = resp.ActiveTasks
	}
	return nil
}

func (m *routedMember) run(ctx context.Context) {
	for ctx.Err() == nil {
		_ = m.heartbeat(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(heartbeatIntervalMs) * time.Millisecond):
		}
	}
}

func (m *routedMember) ready() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, t := range m.tasks {
		n += len(t.Partitions)
	}
	return m.epoch > 0 && n == 6
}

// groupServed describes group through probe, routed: nil when the
// owner answers it (DescribeGroups for a classic group,
// StreamsGroupDescribe for a streams group, which Kafka does not
// describe as a classic one).
func groupServed(ctx context.Context, probe *kgo.Client, group string, streams bool) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if streams {
		req := kmsg.NewPtrStreamsGroupDescribeRequest()
		req.Groups = []string{group}
		resp, err := req.RequestWith(ctx, routed{probe, group})
		if err != nil {
			return err
		}
		if len(resp.Groups) != 1 {
			return fmt.Errorf("describe %s: %d groups", group, len(resp.Groups))
		}
		return kerr.ErrorForCode(resp.Groups[0].ErrorCode)
	}
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, routed{probe, group})
	if err != nil {
		return err
	}
	if len(resp.Groups) != 1 {
		return fmt.Errorf("describe %s: %d groups", group, len(resp.Groups))
	}
	return kerr.ErrorForCode(resp.Groups[0].ErrorCode)
}

// fetchCommitted reads group's committed offsets of the input topic
// through coordhost.
func fetchCommitted(ctx context.Context, probe *kgo.Client, group string) (map[int32]int64, error) {
	req := kmsg.NewPtrOffsetFetchRequest() // v8+: one entry per group
	rg := kmsg.NewOffsetFetchRequestGroup()
	rg.Group = group
	tp := kmsg.NewOffsetFetchRequestGroupTopic()
	tp.Topic, tp.Partitions = scaleOutTopic, []int32{0, 1, 2, 3, 4, 5}
	rg.Topics = append(rg.Topics, tp)
	req.Groups = append(req.Groups, rg)
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, routed{probe, group})
	if err != nil {
		return nil, err
	}
	if len(resp.Groups) != 1 {
		return nil, fmt.Errorf("offset fetch of %s: %d groups", group, len(resp.Groups))
	}
	if err := kerr.ErrorForCode(resp.Groups[0].ErrorCode); err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for _, t := range resp.Groups[0].Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, err
			}
			out[p.Partition] = p.Offset
		}
	}
	return out, nil
}

// probeClient reads groups and offsets; OffsetCommit and OffsetFetch
// stay below v10, which names topics by id.
func probeClient(t *testing.T, seeds ...string) *kgo.Client {
	t.Helper()
	v := kversion.Stable()
	v.SetMaxKeyVersion(int16(kmsg.OffsetFetch), 9)
	v.SetMaxKeyVersion(int16(kmsg.OffsetCommit), 9)
	v.SetMaxKeyVersion(int16(kmsg.StreamsGroupDescribe), 0)
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.MaxVersions(v))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func seedsFrom(nodes []*scaleOutNode, first int) []string {
	var out []string
	for i := range nodes {
		out = append(out, nodes[(first+i)%len(nodes)].addr)
	}
	return out
}

// TestScaleOutKill: three coordhost processes of one cluster on the
// real broker serve classic consumer groups (kgo, two members each) and
// streams groups (kmsg) whose clients were seeded with any node; the
// node owning the busiest partition is SIGKILLed while a rebalance of
// its groups is under way. Every member keeps its member id and regains
// its assignment, generations and epochs never go backwards, every
// commit coordhost acknowledged before the kill reads back after it,
// and every group is served again within the session timeout + the
// replay + 5 s (the measured figures are logged and in docs/SCALE-OUT.md).
func TestScaleOutKill(t *testing.T) {
	needInterop(t)
	dir := logDir(t)
	b := startBroker(t, dir)
	createScaleOutTopic(t, b.addr)
	nodes := startScaleOut(t, dir, b.addr, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	const busy = 0
	classic := scaleOutGroups("so-classic", 1, busy, 2)
	streams := scaleOutGroups("so-streams", 1, busy, 1)

	var wg sync.WaitGroup
	defer wg.Wait()
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	newConsumer := func(g string, i int) *consumer {
		f, err := createLog(dir, "kgo-"+g)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		cl, err := kgo.NewClient(kgo.SeedBrokers(seedsFrom(nodes, i)...), kgo.ConsumerGroup(g), kgo.ConsumeTopics(scaleOutTopic),
			kgo.WithLogger(kgo.BasicLogger(f, kgo.LogLevelInfo, nil)),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit(), kgo.FetchMaxWait(200*time.Millisecond),
			kgo.SessionTimeout(time.Duration(sessionTimeoutMs)*time.Millisecond), kgo.HeartbeatInterval(time.Duration(heartbeatIntervalMs)*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		c := &consumer{group: g, cl: cl, members: map[string]bool{}, acked: map[int32]int64{}}
		wg.Add(1)
		go func() { defer wg.Done(); c.run(runCtx) }()
		return c
	}
	var consumers []*consumer
	for i, g := range classic {
		consumers = append(consumers, newConsumer(g, i), newConsumer(g, i+1))
	}
	shared, err := kgo.NewClient(kgo.SeedBrokers(seedsFrom(nodes, 2)...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(shared.Close)
	var members []*routedMember
	for i, g := range streams {
		m := &routedMember{cl: shared, group: g, id: fmt.Sprintf("so-member-%d", i)}
		members = append(members, m)
		wg.Add(1)
		go func() { defer wg.Done(); m.run(runCtx) }()
	}
	probe := probeClient(t, seedsFrom(nodes, 1)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(probe.Close)

	// Every classic group stable with both members, having committed
	// the whole input; every streams member holding its 6 tasks.
	settle := time.Now().Add(90 * time.Second)
	for {
		var waiting []string
		for _, g := range classic {
			if off, err := fetchCommitted(ctx, probe, g); err != nil || sum(off) != 600 {
				waiting = append(waiting, fmt.Sprintf("%s: committed %d, %v", g, sum(off), err))
			}
		}
		for _, m := range members {
			if !m.ready() {
				waiting = append(waiting, m.group+" not ready")
			}
		}
		if len(waiting) == 0 {
			break
		}
		if time.Now().After(settle) {
			t.Fatalf("the workload never settled: %v", waiting)
		}
		time.Sleep(200 * time.Millisecond)
	}
	victim, vst := ownerNode(t, nodes, busy)
	t.Logf("busiest partition %d is on %s (broker id %d, partitions %+v)", busy, vst.Node, vst.BrokerID, vst.Partitions)
	acked := map[string]map[int32]int64{}
	for _, c := range consumers {
		c.mu.Lock()
		if acked[c.group] == nil {
			acked[c.group] = map[int32]int64{}
		}
		for p, o := range c.acked {
			acked[c.group][p] = max(acked[c.group][p], o)
		}
		c.mu.Unlock()
	}

	// A rebalance of the busy partition's classic groups: a third member
	// joins each, and the owner dies while they rebalance.
	for i, g := range classic {
		if runtime.PartitionFor(g, scaleOutParts) == busy {
			consumers = append(consumers, newConsumer(g, i+2))
		}
	}
	time.Sleep(300 * time.Millisecond)
	killed := time.Now()
	victim.proc.kill()
	var survivors []*scaleOutNode
	for _, n := range nodes {
		if n != victim {
			survivors = append(survivors, n)
		}
	}
	for _, g := range append(append([]string{}, classic...), streams...) {
		isStreams := strings.HasPrefix(g, "so-streams")
		for err := groupServed(ctx, probe, g, isStreams); err != nil; err = groupServed(ctx, probe, g, isStreams) {
			if time.Since(killed) > 2*time.Minute {
				t.Fatalf("%s not served 2 minutes after the kill: %v", g, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	failover := time.Since(killed)
	replay := 0.0
	for _, n := range survivors {
		st, err := n.status(t)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range st.Partitions {
			replay = max(replay, p.ReplaySeconds)
		}
	}
	bound := scaleOutSession + time.Duration(replay*float64(time.Second)) + 5*time.Second
	t.Logf("SCALEOUT failover %v (kill -> every group served again), longest replay %.3fs, bound %v", failover.Round(time.Millisecond), replay, bound)
	if failover > bound {
		t.Errorf("failover took %v, above the session timeout + replay + 5s = %v", failover, bound)
	}
	for g, want := range acked {
		got, err := fetchCommitted(ctx, probe, g)
		if err != nil {
			t.Fatalf("offsets of %s after failover: %v", g, err)
		}
		for p, o := range want {
			if got[p] < o {
				t.Errorf("%s partition %d: committed %d after failover, %d was acknowledged before", g, p, got[p], o)
			}
		}
	}

	// Everyone regains an assignment: the busy groups end stable with
	// three members, the others with two, the streams members keep
	// their tasks; nobody was given a new member id.
	waitScaleOut(t, survivors, time.Minute)
	for {
		ok := true
		for _, g := range classic {
			want := 2
			if runtime.PartitionFor(g, scaleOutParts) == busy {
				want = 3
			}
			if n, err := stableMembers(ctx, probe, g); err != nil || n != want {
				ok = false
			}
		}
		for _, m := range members {
			ok = ok && m.ready()
		}
		if ok {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the groups never settled after the failover")
		}
		time.Sleep(200 * time.Millisecond)
	}
	stopRun()
	wg.Wait()
	for _, c := range consumers {
		if len(c.members) > 1 || len(c.backs) > 0 {
			t.Errorf("%s: member ids %v, generations backwards %v", c.group, c.members, c.backs)
		}
	}
	for _, m := range members {
		if m.fenced > 0 || len(m.backs) > 0 {
			t.Errorf("%s: fenced %d times, epochs backwards %v", m.group, m.fenced, m.backs)
		}
	}
}

func sum(m map[int32]int64) int64 {
	var s int64
	for _, v := range m {
		s += max(v, 0)
	}
	return s
}

// stableMembers returns how many members group has once stable.
func stableMembers(ctx context.Context, probe *kgo.Client, group string) (int, error) {
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups = []string{group}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, routed{probe, group})
	if err != nil {
		return 0, err
	}
	g := resp.Groups[0]
	if err := kerr.ErrorForCode(g.ErrorCode); err != nil {
		return 0, err
	}
	if g.State != "Stable" {
		return 0, fmt.Errorf("%s is %s", group, g.State)
	}
	return len(g.Members), nil
}

// answer is one group response a client got: from which node, at
// which generation, with which error.
type answer struct {
	node string
	gen  int32
	err  error
}

// classicMember speaks the classic protocol to one node, on a
// connection kept open to it (kgo's connection to that broker id), with
// no routing: what a client that has not looked for a new coordinator
// yet does.
type classicMember struct {
	cl      *kgo.Client
	group   string
	member  string
	gen     int32
	answers []answer
}

func (m *classicMember) to(n cluster.Status) kmsg.Requestor { return m.cl.Broker(int(n.BrokerID)) }

func (m *classicMember) join(ctx context.Context, n cluster.Status) error {
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.SessionTimeoutMillis, join.RebalanceTimeoutMillis, join.ProtocolType = m.group, 30000, 30000, "consumer"
	proto := kmsg.NewJoinGroupRequestProtocol()
	proto.Name = "range"
	join.Protocols = append(join.Protocols, proto)
	jr, err := join.RequestWith(ctx, m.to(n))
	if err == nil && jr.ErrorCode == kerr.MemberIDRequired.Code {
		join.MemberID = jr.MemberID
		jr, err = join.RequestWith(ctx, m.to(n))
	}
	if err != nil {
		return err
	}
	if err := kerr.ErrorForCode(jr.ErrorCode); err != nil {
		return err
	}
	sync := kmsg.NewPtrSyncGroupRequest()
	sync.Group, sync.MemberID, sync.Generation = m.group, jr.MemberID, jr.Generation
	sync.ProtocolType, sync.Protocol = kmsg.StringPtr("consumer"), kmsg.StringPtr("range")
	sa := kmsg.NewSyncGroupRequestGroupAssignment()
	sa.MemberID, sa.MemberAssignment = jr.MemberID, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	sync.GroupAssignment = append(sync.GroupAssignment, sa)
	sr, err := sync.RequestWith(ctx, m.to(n))
	if err != nil {
		return err
	}
	m.member, m.gen = jr.MemberID, jr.Generation
	m.answers = append(m.answers, answer{node: n.Node, gen: jr.Generation, err: kerr.ErrorForCode(sr.ErrorCode)})
	return kerr.ErrorForCode(sr.ErrorCode)
}

func (m *classicMember) heartbeat(ctx context.Context, n cluster.Status) error {
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Group, hb.MemberID, hb.Generation = m.group, m.member, m.gen
	resp, err := hb.RequestWith(ctx, m.to(n))
	if err != nil {
		return err
	}
	m.answers = append(m.answers, answer{node: n.Node, gen: m.gen, err: kerr.ErrorForCode(resp.ErrorCode)})
	return kerr.ErrorForCode(resp.ErrorCode)
}

func (m *classicMember) commit(ctx context.Context, n cluster.Status, offset int64) error {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.MemberID, req.Generation = m.group, m.member, m.gen
	tp := kmsg.NewOffsetCommitRequestTopic()
	tp.Topic = scaleOutTopic
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset = 0, offset
	tp.Partitions = append(tp.Partitions, p)
	req.Topics = append(req.Topics, tp)
	resp, err := req.RequestWith(ctx, m.to(n))
	if err != nil {
		return err
	}
	err = kerr.ErrorForCode(resp.Topics[0].Partitions[0].ErrorCode)
	m.answers = append(m.answers, answer{node: n.Node, gen: m.gen, err: err})
	return err
}

// TestScaleOutZombie: the owner of a group's partition is stopped
// (SIGSTOP) until the other node takes its partitions over and serves
// the group at the generation it had; after SIGCONT, the connection a
// client kept open to the old owner gets NOT_COORDINATOR for a
// heartbeat at once and for its next write (an offset commit), which
// does not land: the group's offset stays what the new owner
// committed. Once the new owner answered for the group's generation,
// the old one never does again.
func TestScaleOutZombie(t *testing.T) {
	needInterop(t)
	dir := logDir(t)
	b := startBroker(t, dir)
	createScaleOutTopic(t, b.addr)
	nodes := startScaleOut(t, dir, b.addr, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const group = "zombie-group"
	zombie, zst := ownerNode(t, nodes, runtime.PartitionFor(group, scaleOutParts))
	other := nodes[0]
	if other == zombie {
		other = nodes[1]
	}
	ost, err := other.status(t)
	if err != nil {
		t.Fatal(err)
	}
	m := &classicMember{cl: probeClient(t, zombie.addr, other.addr), group: group}
	if err := m.join(ctx, zst); err != nil {
		t.Fatalf("join through the owner: %v", err)
	}
	if err := m.commit(ctx, zst, 10); err != nil {
		t.Fatalf("commit through the owner: %v", err)
	}

	pid := zombie.proc.cmd.Process.Pid
	if err := syscall.Kill(-pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	resumed := false
	defer func() {
		if !resumed {
			syscall.Kill(-pid, syscall.SIGCONT)
		}
	}()
	for { // the other node takes every partition over
		st, err := other.status(t)
		if err == nil && len(st.Partitions) == scaleOutParts && allActive(st) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%s never took the partitions over: %+v %v", ost.Node, st, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("SCALEOUT zombie: partitions moved %v after SIGSTOP", time.Since(stopped).Round(time.Millisecond))
	if err := m.heartbeat(ctx, ost); err != nil {
		t.Fatalf("heartbeat through the new owner at generation %d: %v", m.gen, err)
	}
	if err := m.commit(ctx, ost, 20); err != nil {
		t.Fatalf("commit through the new owner: %v", err)
	}

	if err := syscall.Kill(-pid, syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	resumed = true
	if err := m.heartbeat(ctx, zst); err != kerr.NotCoordinator {
		t.Fatalf("heartbeat on the connection kept to the old owner right after SIGCONT: %v, want NOT_COORDINATOR", err)
	}
	if err := m.commit(ctx, zst, 999); err != kerr.NotCoordinator {
		t.Fatalf("the old owner's next write: %v, want NOT_COORDINATOR", err)
	}
	probe := probeClient(t, other.addr)
	waitScaleOut(t, nodes, time.Minute) // the old owner rejoins and takes its share back
	off, err := fetchCommitted(ctx, probe, group)
	if err != nil || off[0] != 20 {
		t.Fatalf("committed offset after the zombie's write: %v %v, want 20", off, err)
	}
	// Per generation, the node answering may change once (the take-over)
	// and never back: the old owner never answers after the new one.
	last, gone := map[int32]string{}, map[int32]map[string]bool{}
	for _, a := range m.answers {
		if a.err != nil {
			continue
		}
		if gone[a.gen][a.node] {
			t.Fatalf("generation %d answered by %s again after %s answered it: %+v", a.gen, a.node, last[a.gen], m.answers)
		}
		if l, ok := last[a.gen]; ok && l != a.node {
			if gone[a.gen] == nil {
				gone[a.gen] = map[string]bool{}
			}
			gone[a.gen][l] = true
		}
		last[a.gen] = a.node
	}
	for _, a := range m.answers {
		t.Logf("answer from %s at generation %d: %v", a.node, a.gen, a.err)
	}
}

func allActive(st cluster.Status) bool {
	for _, p := range st.Partitions {
		if p.State != "active" {
			return false
		}
	}
	return st.LeaseValid
}
