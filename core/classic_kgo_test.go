package core

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClassicWithKgoConsumers runs real franz-go consumer groups against a
// kfake cluster whose group requests are answered by this core: kfake
// control hooks hand every JoinGroup, SyncGroup, Heartbeat and LeaveGroup
// the clients send over the wire to a single goroutine that owns the
// Coordinator (it commits each Output, releases responses and fires timers
// at NextDeadline, as a host does). OffsetCommit and OffsetFetch are
// decided by core; an allowed commit is rewritten into an admin commit
// (generation -1, no member) and stored by kfake's own handler. The groups
// reach a stable, complete assignment, survive a member leaving, and a
// commit of the old generation is fenced (ILLEGAL_GENERATION) after the
// generation changes.
func TestClassicWithKgoConsumers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a kfake cluster and real clients")
	}
	for _, tc := range []struct {
		name     string
		balancer kgo.GroupBalancer
	}{
		{"range", kgo.RangeBalancer()},
		{"cooperative-sticky", kgo.CooperativeStickyBalancer()},
	} {
		t.Run(tc.name, func(t *testing.T) { runKgoGroup(t, tc.balancer) })
	}
}

const kgoTopic, kgoPartitions, kgoPerPartition = "t", 6, 10

// coreHost is the test's host: one goroutine owns the Coordinator.
type coreHost struct {
	c       *Coordinator
	events  chan func()
	waiting map[RequestID]chan kmsg.Response
	next    RequestID
	done    chan struct{}

	mu        sync.Mutex
	committed bool // kfake holds offsets for the group
}

func newCoreHost(t *testing.T) *coreHost {
	cfg := DefaultConfig()
	cfg.Classic.MinSessionTimeoutMs = 1000
	cfg.Classic.InitialRebalanceDelayMs = 300
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &coreHost{c: c, events: make(chan func()), waiting: map[RequestID]chan kmsg.Response{}, done: make(chan struct{})}
	go h.loop()
	t.Cleanup(func() { close(h.done) })
	return h
}

func nowMs() int64 { return time.Now().UnixMilli() }

func (h *coreHost) loop() {
	tm := time.NewTimer(time.Hour)
	for {
		wait := time.Hour
		if d, ok := h.c.NextDeadline(); ok {
			wait = time.Duration(d-nowMs()) * time.Millisecond
		}
		tm.Reset(max(wait, 0))
		select {
		case fn := <-h.events:
			fn()
		case <-tm.C:
			h.apply(h.c.tick(nowMs()))
		case <-h.done:
			return
		}
	}
}

// apply makes a batch durable (the log is in memory here) and releases its
// responses to the hooks waiting for them.
func (h *coreHost) apply(o Output) {
	h.c.Commit()
	for _, r := range o.Responses {
		if ch, ok := h.waiting[r.Request]; ok {
			delete(h.waiting, r.Request)
			ch <- r.Msg
		}
	}
}

// do runs fn on the loop goroutine and waits for it.
func (h *coreHost) do(fn func()) {
	done := make(chan struct{})
	h.events <- func() { fn(); close(done) }
	<-done
}

// call submits a group request and returns the channel its response (now
// or after the group moves on) will arrive on.
func (h *coreHost) call(req kmsg.Request) chan kmsg.Response {
	ch := make(chan kmsg.Response, 1)
	h.events <- func() {
		h.next++
		id := h.next
		h.waiting[id] = ch
		client := ClientInfo{ClientID: "kgo", ClientHost: "/127.0.0.1"}
		switch r := req.(type) {
		case *kmsg.JoinGroupRequest:
			h.apply(h.c.joinGroup(nowMs(), id, client, r))
		case *kmsg.SyncGroupRequest:
			h.apply(h.c.syncGroup(nowMs(), id, r))
		case *kmsg.HeartbeatRequest:
			h.apply(h.c.heartbeat(nowMs(), id, r))
		case *kmsg.LeaveGroupRequest:
			h.apply(h.c.leaveGroup(nowMs(), id, r))
		}
	}
	return ch
}

// hook wires core into kfake for the group keys.
func (h *coreHost) hook(cl *kfake.Cluster) {
	for _, key := range []int16{11, 12, 13, 14} {
		cl.ControlKey(key, func(req kmsg.Request) (kmsg.Response, error, bool) {
			cl.KeepControl()
			ch := h.call(req)
			var resp kmsg.Response
			cl.SleepControl(func() { resp = <-ch }) // a parked JoinGroup must not block other connections
			return resp, nil, true
		})
	}
	cl.ControlKey(8, func(kr kmsg.Request) (kmsg.Response, error, bool) {
		cl.KeepControl()
		req := kr.(*kmsg.OffsetCommitRequest)
		var d OffsetDecision
		h.do(func() {
			var o Output
			d, o = h.c.decideOffsetCommit(nowMs(), req)
			h.apply(o)
		})
		if d.ErrorCode != 0 {
			resp := req.ResponseKind().(*kmsg.OffsetCommitResponse)
			for _, tp := range req.Topics {
				rt := kmsg.OffsetCommitResponseTopic{Topic: tp.Topic}
				for _, p := range tp.Partitions {
					rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: d.ErrorCode})
				}
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil, true
		}
		// Allowed: kfake stores it as an admin commit.
		req.Generation, req.MemberID, req.InstanceID = -1, "", nil
		h.mu.Lock()
		h.committed = true
		h.mu.Unlock()
		return nil, nil, false
	})
	cl.ControlKey(9, func(kr kmsg.Request) (kmsg.Response, error, bool) {
		cl.KeepControl()
		var ds []OffsetDecision
		h.do(func() { ds = h.c.decideOffsetFetch(kr.(*kmsg.OffsetFetchRequest)) })
		for _, d := range ds {
			if d.ErrorCode != 0 {
				return nil, fmt.Errorf("offset fetch refused: %d", d.ErrorCode), true
			}
		}
		h.mu.Lock()
		stored := h.committed
		h.mu.Unlock()
		if !stored {
			// kfake answers GROUP_ID_NOT_FOUND for a group it holds no
			// offsets for; Kafka answers "no offset" (-1). Answer that.
			return noOffsets(kr.(*kmsg.OffsetFetchRequest)), nil, true
		}
		return nil, nil, false
	})
}

// groupView is the group as core sees it.
type groupView struct {
	state   classicState
	gen     int32
	members []string
}

func (h *coreHost) view(id string) groupView {
	var v groupView
	h.do(func() {
		if g, ok := h.c.groups[id].(*classicGroup); ok {
			v = groupView{state: g.state, gen: g.generation, members: append([]string(nil), g.order...)}
		}
	})
	return v
}

// owned tracks what each consumer owns through kgo's callbacks.
type owned struct {
	mu sync.Mutex
	by map[int]map[int32]bool
}

func (o *owned) opts(i int) []kgo.Opt {
	o.mu.Lock()
	o.by[i] = map[int32]bool{}
	o.mu.Unlock()
	update := func(add bool) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			o.mu.Lock()
			defer o.mu.Unlock()
			for _, p := range m[kgoTopic] {
				if add {
					o.by[i][p] = true
				} else {
					delete(o.by[i], p)
				}
			}
		}
	}
	return []kgo.Opt{kgo.OnPartitionsAssigned(update(true)), kgo.OnPartitionsRevoked(update(false)), kgo.OnPartitionsLost(update(false))}
}

// complete reports whether the live consumers own every partition exactly
// once, each owning at least one.
func (o *owned) complete(live []int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	seen := map[int32]int{}
	for _, i := range live {
		if len(o.by[i]) == 0 {
			return false
		}
		for p := range o.by[i] {
			seen[p]++
		}
	}
	if len(seen) != kgoPartitions {
		return false
	}
	for _, n := range seen {
		if n != 1 {
			return false
		}
	}
	return true
}

func (o *owned) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	var keys []int
	for i := range o.by {
		keys = append(keys, i)
	}
	sort.Ints(keys)
	s := ""
	for _, i := range keys {
		var ps []int
		for p := range o.by[i] {
			ps = append(ps, int(p))
		}
		sort.Ints(ps)
		s += fmt.Sprintf("c%d=%v ", i, ps)
	}
	return s
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool, info func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s: %s", what, info())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func runKgoGroup(t *testing.T, balancer kgo.GroupBalancer) {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(kgoPartitions, kgoTopic))
	if err != nil {
		t.Fatal(err)
	}
	defer cluster.Close()
	h := newCoreHost(t)
	h.hook(cluster)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	admin, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for p := int32(0); p < kgoPartitions; p++ {
		for i := 0; i < kgoPerPartition; i++ {
			if err := admin.ProduceSync(ctx, &kgo.Record{Topic: kgoTopic, Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}

	own := &owned{by: map[int]map[int32]bool{}}
	var consumers []*kgo.Client
	for i := 0; i < 3; i++ {
		opts := append([]kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumerGroup("g"), kgo.ConsumeTopics(kgoTopic),
			kgo.Balancers(balancer), kgo.SessionTimeout(3 * time.Second), kgo.HeartbeatInterval(100 * time.Millisecond),
			kgo.RebalanceTimeout(1500 * time.Millisecond), kgo.DisableAutoCommit(), kgo.FetchMaxWait(100 * time.Millisecond),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}, own.opts(i)...)
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		consumers = append(consumers, cl)
	}
	// Everyone polls (kgo joins in the background, callbacks run in polls).
	var wg sync.WaitGroup
	pollCtx, stopPolls := context.WithCancel(ctx)
	counts := make([]int, 3)
	var countMu sync.Mutex
	for i, cl := range consumers {
		wg.Add(1)
		go func(i int, cl *kgo.Client) {
			defer wg.Done()
			for pollCtx.Err() == nil {
				fs := cl.PollFetches(pollCtx)
				countMu.Lock()
				counts[i] += fs.NumRecords()
				countMu.Unlock()
			}
		}(i, cl)
	}
	all := []int{0, 1, 2}
	info := func() string {
		v := h.view("g")
		return fmt.Sprintf("core %s gen=%d members=%d; kgo %s", v.state, v.gen, len(v.members), own)
	}
	waitFor(t, "a stable complete assignment over 3 members", 20*time.Second, func() bool {
		v := h.view("g")
		return v.state == classicStable && len(v.members) == 3 && own.complete(all)
	}, info)
	waitFor(t, "every record consumed", 20*time.Second, func() bool {
		countMu.Lock()
		defer countMu.Unlock()
		return counts[0]+counts[1]+counts[2] >= kgoPartitions*kgoPerPartition
	}, info)
	for _, cl := range consumers {
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("commit through core: %v", err)
		}
	}
	for p := int32(0); p < kgoPartitions; p++ {
		if got := fetchOffset(t, ctx, admin, p); got != kgoPerPartition {
			t.Errorf("partition %d: committed offset %d, want %d", p, got, kgoPerPartition)
		}
	}

	// A member leaves: the other two take over every partition in a new
	// generation.
	before := h.view("g")
	stopPolls()
	wg.Wait()
	consumers[2].Close()
	pollCtx, stopPolls = context.WithCancel(ctx)
	defer stopPolls()
	for _, i := range []int{0, 1} {
		wg.Add(1)
		go func(cl *kgo.Client) {
			defer wg.Done()
			for pollCtx.Err() == nil {
				cl.PollFetches(pollCtx)
			}
		}(consumers[i])
	}
	waitFor(t, "a stable complete assignment after a member left", 20*time.Second, func() bool {
		v := h.view("g")
		return v.state == classicStable && len(v.members) == 2 && v.gen > before.gen && own.complete([]int{0, 1})
	}, info)
	after := h.view("g")

	// Fencing: a commit from a current member at the old generation is
	// refused and stores nothing; at the current generation it is stored.
	meta := kmsg.NewPtrMetadataRequest()
	meta.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr(kgoTopic)}}
	mresp, err := meta.RequestWith(ctx, admin)
	if err != nil || len(mresp.Topics) != 1 {
		t.Fatalf("metadata: %v", err)
	}
	commit := func(gen int32, offset int64) int16 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.MemberID, req.Generation = "g", after.members[0], gen
		req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: kgoTopic, TopicID: mresp.Topics[0].TopicID,
			Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: offset}}}}
		resp, err := req.RequestWith(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Topics[0].Partitions[0].ErrorCode
	}
	if code := commit(before.gen, 3); code != errIllegalGeneration {
		t.Errorf("commit at old generation %d: error %d, want ILLEGAL_GENERATION", before.gen, code)
	}
	if got := fetchOffset(t, ctx, admin, 0); got != kgoPerPartition {
		t.Errorf("a fenced commit changed the offset to %d", got)
	}
	if code := commit(after.gen, 7); code != 0 {
		t.Errorf("commit at current generation %d: error %d", after.gen, code)
	}
	if got := fetchOffset(t, ctx, admin, 0); got != 7 {
		t.Errorf("offset after an allowed commit: %d, want 7", got)
	}
	staleKgoCommit(t, ctx, h, cluster, admin, balancer, own, consumers[1])
	stopPolls()
	wg.Wait()
}

// staleKgoCommit has a kgo consumer's own commit fenced: a consumer that
// blocks rebalances while it holds a poll misses the next generation (the
// join phase completes without it at the rebalance timeout), then commits
// with the generation it knows; core refuses and kfake keeps the offset.
func staleKgoCommit(t *testing.T, ctx context.Context, h *coreHost, cluster *kfake.Cluster, admin *kgo.Client,
	balancer kgo.GroupBalancer, own *owned, leaving *kgo.Client) {
	opts := append([]kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumerGroup("g"), kgo.ConsumeTopics(kgoTopic),
		kgo.Balancers(balancer), kgo.SessionTimeout(3 * time.Second), kgo.HeartbeatInterval(100 * time.Millisecond),
		kgo.RebalanceTimeout(1500 * time.Millisecond), kgo.DisableAutoCommit(), kgo.FetchMaxWait(100 * time.Millisecond),
		kgo.BlockRebalanceOnPoll()}, own.opts(3)...)
	blocked, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer blocked.Close()
	pollOnce := func() {
		pctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		blocked.PollFetches(pctx)
		cancel()
	}
	info := func() string {
		v := h.view("g")
		return fmt.Sprintf("core %s gen=%d members=%d; kgo %s", v.state, v.gen, len(v.members), own)
	}
	waitFor(t, "a stable complete assignment with the blocking consumer", 20*time.Second, func() bool {
		pollOnce()
		blocked.AllowRebalance()
		v := h.view("g")
		return v.state == classicStable && len(v.members) == 3 && own.complete([]int{0, 1, 3})
	}, info)
	joined := h.view("g")
	pollOnce() // hold the poll: no rebalance until AllowRebalance
	own.mu.Lock()
	var part int32 = -1
	for p := range own.by[3] {
		part = p
	}
	own.mu.Unlock()
	before := fetchOffset(t, ctx, admin, part)

	leaving.Close() // a rebalance the blocked consumer cannot take part in
	waitFor(t, "a generation without the blocked consumer", 20*time.Second, func() bool {
		v := h.view("g")
		return v.state == classicStable && v.gen > joined.gen && len(v.members) == 1
	}, info)
	var code int16 = -1
	var sentGen int32
	blocked.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{kgoTopic: {part: {Epoch: -1, Offset: 3}}},
		func(_ *kgo.Client, req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
			if err != nil || len(resp.Topics) == 0 || len(resp.Topics[0].Partitions) == 0 {
				t.Errorf("stale kgo commit: %v", err)
				return
			}
			sentGen, code = req.Generation, resp.Topics[0].Partitions[0].ErrorCode
			t.Logf("kgo committed at generation %d as %q: error %d", req.Generation, req.MemberID, code)
		})
	if sentGen != joined.gen || (code != errIllegalGeneration && code != errUnknownMemberID) {
		t.Errorf("kgo's commit at generation %d (group at %d): error %d, want ILLEGAL_GENERATION or UNKNOWN_MEMBER_ID",
			sentGen, h.view("g").gen, code)
	}
	if after := fetchOffset(t, ctx, admin, part); after != before {
		t.Errorf("a fenced kgo commit changed partition %d's offset from %d to %d", part, before, after)
	}
	blocked.AllowRebalance()
}

// fetchOffset reads group g's committed offset of a partition through the
// OffsetFetch hook (core decides, kfake answers).
func fetchOffset(t *testing.T, ctx context.Context, cl *kgo.Client, p int32) int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = "g"
	req.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: kgoTopic, Partitions: []int32{p}}}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range resp.Groups {
		for _, tp := range g.Topics {
			for _, pp := range tp.Partitions {
				if pp.Partition == p {
					return pp.Offset
				}
			}
		}
	}
	for _, tp := range resp.Topics {
		for _, pp := range tp.Partitions {
			if pp.Partition == p {
				return pp.Offset
			}
		}
	}
	return -2
}

// noOffsets answers an OffsetFetch for a group without committed offsets.
func noOffsets(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := req.ResponseKind().(*kmsg.OffsetFetchResponse)
	parts := func(ps []int32) []kmsg.OffsetFetchResponseGroupTopicPartition {
		var out []kmsg.OffsetFetchResponseGroupTopicPartition
		for _, p := range ps {
			out = append(out, kmsg.OffsetFetchResponseGroupTopicPartition{Partition: p, Offset: -1, LeaderEpoch: -1})
		}
		return out
	}
	if req.Version < 8 {
		for _, t := range req.Topics {
			rt := kmsg.OffsetFetchResponseTopic{Topic: t.Topic}
			for _, p := range t.Partitions {
				rt.Partitions = append(rt.Partitions, kmsg.OffsetFetchResponseTopicPartition{Partition: p, Offset: -1, LeaderEpoch: -1})
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp
	}
	for _, g := range req.Groups {
		rg := kmsg.OffsetFetchResponseGroup{Group: g.Group}
		for _, t := range g.Topics {
			rg.Topics = append(rg.Topics, kmsg.OffsetFetchResponseGroupTopic{Topic: t.Topic, TopicID: t.TopicID, Partitions: parts(t.Partitions)})
		}
		resp.Groups = append(resp.Groups, rg)
	}
	return resp
}
