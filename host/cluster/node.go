// Package cluster shares a coordhost cluster's partitions out among its
// nodes: a Kafka consumer group over the state topic decides which node
// holds which partition, and a lease on the group's session decides how
// long a node may still answer for them (docs/SCALE-OUT.md).
package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/admin"
	"github.com/coordhost/coordhost/host/runtime"
)

// Defaults of Config.
const (
	DefaultSessionTimeout = 10 * time.Second
	// GroupPrefix starts the ownership group's name, coordhost-<cluster id>.
	GroupPrefix = "coordhost-"
	// loadRetryMax bounds the wait between attempts to load an owned
	// partition whose take-over or replay failed.
	loadRetryMax = 5 * time.Second
)

// Runtime is what a Node drives: the partitions of the host's runtime
// (*runtime.Runtime).
type Runtime interface {
	Load(ctx context.Context, p int) error
	Unload(ctx context.Context, p int) error
	Held(p int) bool
}

// Config configures a Node.
type Config struct {
	// ClientOpts reach the cluster holding the state topic.
	ClientOpts []kgo.Opt
	// ClusterID names the coordhost cluster; its nodes share the group
	// GroupPrefix + ClusterID.
	ClusterID string
	// NodeID names this node in logs and GET /v1/cluster.
	NodeID string
	// BrokerID is this node's synthetic broker id in FindCoordinator and
	// Metadata answers (BrokerIDFor(NodeID) when 0; otherwise within
	// [MinBrokerID, MaxBrokerID]).
	BrokerID int32
	// AdvertisedHost and AdvertisedPort are the Kafka listener clients
	// reach this node at; the other nodes send clients there for the
	// groups of the partitions this node owns.
	AdvertisedHost string
	AdvertisedPort int32
	// Listeners are this node's listeners for each data-plane broker
	// (AdvertisedPort's among them), advertised to the other nodes.
	Listeners []Listener
	// Topic is the state topic; its partitions are the runtime's.
	Topic string
	// SessionTimeout of the ownership group (DefaultSessionTimeout when 0).
	SessionTimeout time.Duration
	// Margin is taken off the session timeout to give the lease
	// (SessionTimeout/5 when 0).
	Margin time.Duration
	// Heartbeat is the period of the heartbeats that renew the lease and of
	// the group client's own (SessionTimeout/5 when 0).
	Heartbeat time.Duration
	// Clock is the lease's monotonic clock (time.Now when nil).
	Clock Clock
	// Metrics, when set, gets the ownership gauges.
	Metrics *admin.Metrics
	Log     *slog.Logger
}

// Node is one coordhost node's membership of the ownership group: it
// loads the partitions the group assigns it into the runtime, unloads
// the ones taken away, and gates every answer on ownership and lease.
type Node struct {
	cfg   Config
	lease *Lease
	rt    Runtime
	cl    *kgo.Client
	kick  chan struct{}
	// self is this node as clients reach it; routes the ownership group
	// as last read (routing.go), reroute asks for a new reading.
	self    Peer
	routes  atomic.Pointer[routes]
	reroute chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	parts    map[int]*owned
	stopping bool

	// fwd holds a client per other node's address (forward.go).
	fwdMu     sync.Mutex
	fwd       map[string]*kgo.Client
	fwdClosed bool

	// progress, when set, tells how far a partition's replay has read
	// (SetProgress).
	progress atomic.Pointer[Progress]

	changes     atomic.Int64
	retakes     atomic.Int64
	replays     atomic.Int64
	replayNanos atomic.Int64
}

// owned is one partition this node was assigned.
type owned struct {
	since  time.Time
	cancel context.CancelFunc
	done   chan struct{} // closed when the load goroutine ends
	// Guarded by Node.mu.
	state  string // loading, active, failed
	replay time.Duration
	err    string
}

// New checks cfg and returns a Node that owns nothing until Start.
func New(cfg Config) (*Node, error) {
	if cfg.ClusterID == "" || cfg.Topic == "" {
		return nil, errors.New("cluster: ClusterID and Topic are required")
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.Margin <= 0 {
		cfg.Margin = cfg.SessionTimeout / 5
	}
	if cfg.Margin >= cfg.SessionTimeout {
		return nil, fmt.Errorf("cluster: lease margin %v must be below the session timeout %v", cfg.Margin, cfg.SessionTimeout)
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = cfg.SessionTimeout / 5
	}
	if cfg.Clock == nil {
		cfg.Clock = systemClock{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.BrokerID == 0 {
		cfg.BrokerID = BrokerIDFor(cfg.NodeID)
	}
	if cfg.BrokerID < MinBrokerID || cfg.BrokerID > MaxBrokerID {
		return nil, fmt.Errorf("cluster: broker id %d must be within [%d, %d]", cfg.BrokerID, MinBrokerID, MaxBrokerID)
	}
	n := &Node{cfg: cfg, lease: NewLease(cfg.Clock, cfg.SessionTimeout, cfg.Margin), kick: make(chan struct{}, 1), parts: map[int]*owned{},
		self: Peer{Node: cfg.NodeID, BrokerID: cfg.BrokerID, Host: cfg.AdvertisedHost, Port: cfg.AdvertisedPort, Listeners: cfg.Listeners}, reroute: make(chan struct{}, 1)}
	n.ctx, n.cancel = context.WithCancel(context.Background())
	if cfg.Metrics != nil {
		n.registerMetrics(cfg.Metrics)
	}
	return n, nil
}

// Progress tells how far the last (or current) replay of partition p
// has read the state topic: the offset after the last record read and
// the last stable offset it reads to; ok is false while that is not
// known (kafkalog.Log.ReplayProgress).
type Progress func(p int) (replayed, end int64, ok bool)

// SetProgress makes Status and the metrics report each owned
// partition's replay progress from f.
func (n *Node) SetProgress(f Progress) { n.progress.Store(&f) }

// replayProgress is p's replay progress, if known.
func (n *Node) replayProgress(p int) (replayed, end int64, ok bool) {
	f := n.progress.Load()
	if f == nil {
		return 0, 0, false
	}
	return (*f)(p)
}

// Group returns the ownership group's name.
func (n *Node) Group() string { return GroupPrefix + n.cfg.ClusterID }

// Start joins the ownership group; from then on the partitions it
// assigns are loaded into rt (each load fences the partition's previous
// writer, then replays it) and the ones it takes away are unloaded.
func (n *Node) Start(rt Runtime) error {
	n.rt = rt
	hb := min(n.cfg.Heartbeat, n.cfg.SessionTimeout/3)
	opts := append(append([]kgo.Opt(nil), n.cfg.ClientOpts...), kgo.ClientID(n.self.clientID()),
		kgo.ConsumerGroup(n.Group()), kgo.ConsumeTopics(n.cfg.Topic),
		kgo.Balancers(kgo.CooperativeStickyBalancer()),
		kgo.SessionTimeout(n.cfg.SessionTimeout), kgo.HeartbeatInterval(hb),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()),
		kgo.OnPartitionsAssigned(n.assigned), kgo.OnPartitionsRevoked(n.revoked), kgo.OnPartitionsLost(n.lost))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("cluster %q: ownership group client: %w", n.cfg.ClusterID, err)
	}
	// The group only shares partitions out: the records are read by the
	// take-over's replay, never by this client.
	cl.PauseFetchTopics(n.cfg.Topic)
	n.cl = cl
	n.wg.Add(2)
	go n.heartbeats()
	go n.routeLoop()
	return nil
}

// Serving returns nil when this node may answer for partition p now: the
// group assigned it p and the lease holds. Otherwise it returns an error
// wrapping runtime.ErrNotCoordinator. The runtime's load state comes on
// top (COORDINATOR_LOAD_IN_PROGRESS while p replays).
func (n *Node) Serving(p int) error {
	n.mu.Lock()
	_, ok := n.parts[p]
	n.mu.Unlock()
	if !ok {
		return fmt.Errorf("partition %d is not owned by node %q: %w", p, n.cfg.NodeID, runtime.ErrNotCoordinator)
	}
	if !n.lease.Valid() {
		return fmt.Errorf("node %q: ownership lease expired: %w", n.cfg.NodeID, runtime.ErrNotCoordinator)
	}
	return nil
}

// Stop stops answering for every partition, unloads them, then leaves
// the group so the other nodes take them over.
func (n *Node) Stop(ctx context.Context) error {
	n.mu.Lock()
	n.stopping = true
	ps := make([]int, 0, len(n.parts))
	for p := range n.parts {
		ps = append(ps, p)
	}
	n.mu.Unlock()
	n.lease.Drop()
	err := n.release(ctx, ps)
	n.cancel()
	n.wg.Wait()
	n.closeForward()
	if n.cl != nil {
		n.cl.Close() // leaves the group
	}
	return err
}

func (n *Node) assigned(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.stopping {
		return
	}
	for _, p32 := range m[n.cfg.Topic] {
		p := int(p32)
		if _, ok := n.parts[p]; ok {
			continue
		}
		ctx, cancel := context.WithCancel(n.ctx)
		o := &owned{since: n.cfg.Clock.Now(), cancel: cancel, done: make(chan struct{}), state: "loading"}
		n.parts[p] = o
		n.changes.Add(1)
		n.cfg.Log.Info("partition assigned: taking it over", "node", n.cfg.NodeID, "partition", p)
		go n.load(ctx, p, o)
	}
	select { // renew the lease now rather than a heartbeat period later
	case n.kick <- struct{}{}:
	default:
	}
	n.rerouteSoon()
}

// rerouteSoon asks for a new reading of the ownership group (routing.go).
func (n *Node) rerouteSoon() {
	select {
	case n.reroute <- struct{}{}:
	default:
	}
}

// load takes partition p over through the runtime (fence, replay,
// active), retrying with backoff while p stays assigned.
func (n *Node) load(ctx context.Context, p int, o *owned) {
	defer close(o.done)
	wait := 100 * time.Millisecond
	for {
		start := time.Now()
		err := n.rt.Load(ctx, p)
		took := time.Since(start)
		n.replays.Add(1)
		n.replayNanos.Add(took.Nanoseconds())
		n.mu.Lock()
		o.replay = took
		if err == nil {
			o.state, o.err = "active", ""
			n.mu.Unlock()
			n.cfg.Log.Info("partition taken over and replayed", "node", n.cfg.NodeID, "partition", p, "replay", took)
			return
		}
		o.state, o.err = "failed", err.Error()
		n.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		n.cfg.Log.Error("partition take-over failed; retrying", "node", n.cfg.NodeID, "partition", p, "retry_in", wait, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, loadRetryMax)
	}
}

// Retake takes partition p over again (unload, then fence and replay)
// when this node owns it and its writer was fenced, or lost track of a
// commit: the replay fences whoever wrote since and shows whether that
// commit is in the log. Calls while p is loading do nothing.
func (n *Node) Retake(p int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	o, ok := n.parts[p]
	if !ok || n.stopping || o.state != "active" {
		return
	}
	ctx, cancel := context.WithCancel(n.ctx)
	again := &owned{since: o.since, cancel: cancel, done: make(chan struct{}), state: "loading"}
	n.parts[p] = again
	n.retakes.Add(1)
	n.cfg.Log.Warn("partition writer fenced while owned: taking the partition over again", "node", n.cfg.NodeID, "partition", p)
	go func() {
		if err := n.rt.Unload(ctx, p); err != nil && !errors.Is(err, runtime.ErrNotCoordinator) {
			cancel()
			close(again.done)
			return // released meanwhile
		}
		n.load(ctx, p, again)
	}()
}

func (n *Node) revoked(ctx context.Context, _ *kgo.Client, m map[string][]int32) {
	ps := make([]int, 0, len(m[n.cfg.Topic]))
	for _, p := range m[n.cfg.Topic] {
		ps = append(ps, int(p))
	}
	if err := n.release(ctx, ps); err != nil {
		n.cfg.Log.Error("unloading revoked partitions", "node", n.cfg.NodeID, "err", err)
	}
	n.rerouteSoon()
}

// lost: the session ended (the broker expired it, or a fatal group
// error); the partitions may already be another node's.
func (n *Node) lost(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
	n.lease.Drop()
	n.revoked(ctx, cl, m)
}

// release stops answering for ps at once, ends their loads and unloads
// the ones the runtime holds, before the group hands them on.
func (n *Node) release(ctx context.Context, ps []int) error {
	n.mu.Lock()
	var gone []int
	var own []*owned
	for _, p := range ps {
		if o, ok := n.parts[p]; ok {
			delete(n.parts, p)
			n.changes.Add(1)
			gone, own = append(gone, p), append(own, o)
		}
	}
	n.mu.Unlock()
	errs := make([]error, len(gone))
	var wg sync.WaitGroup
	for i, p := range gone {
		wg.Add(1)
		go func() {
			defer wg.Done()
			own[i].cancel()
			<-own[i].done
			if n.rt.Held(p) {
				if err := n.rt.Unload(ctx, p); err != nil && !errors.Is(err, runtime.ErrNotCoordinator) {
					errs[i] = fmt.Errorf("partition %d: %w", p, err)
				}
			}
			n.cfg.Log.Info("partition given up", "node", n.cfg.NodeID, "partition", p)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// heartbeats renews the lease: every period (and when kicked) it sends
// a Heartbeat for the member and generation the group client holds, and
// an answer that keeps the member (no error, or REBALANCE_IN_PROGRESS,
// which also restarts its session) renews the lease from the send time.
// kgo v1.22.3 has no hook reporting its own heartbeats' answers
// (HookGroupManageError reports only errors that end a session, and
// HookBrokerE2E only the transport), so the lease sends its own.
func (n *Node) heartbeats() {
	defer n.wg.Done()
	t := time.NewTicker(n.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		case <-n.kick:
		}
		n.heartbeat()
	}
}

func (n *Node) heartbeat() {
	member, gen := n.cl.GroupMetadata()
	if member == "" || gen < 0 {
		return
	}
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.MemberID, req.Generation = n.Group(), member, gen
	sent := n.cfg.Clock.Now()
	ctx, cancel := context.WithTimeout(n.ctx, n.cfg.SessionTimeout)
	defer cancel()
	resp, err := req.RequestWith(ctx, n.cl)
	if err != nil {
		return
	}
	switch err := kerr.ErrorForCode(resp.ErrorCode); err {
	case nil, kerr.RebalanceInProgress:
		n.lease.Renew(sent)
	default:
		n.cfg.Log.Debug("ownership heartbeat refused; the lease is not renewed", "node", n.cfg.NodeID, "err", err)
	}
}

// PartitionStatus is one owned partition in Status.
type PartitionStatus struct {
	Partition int    `json:"partition"`
	State     string `json:"state"` // loading, active, failed
	// Since is when the group assigned the partition to this node.
	Since time.Time `json:"since"`
	// LoadingMs is how long the take-over has been running (loading).
	LoadingMs int64 `json:"loading_ms,omitempty"`
	// ReplaySeconds is how long the last take-over and replay took.
	ReplaySeconds float64 `json:"replay_seconds,omitempty"`
	// ReplayOffset is the state-topic offset the replay has read to (the
	// offset after the last record read), ReplayEndOffset the last stable
	// offset it reads to, ReplayLag the offsets left: 0 once the
	// partition is active. Absent until the replay has learned the end.
	ReplayOffset    *int64 `json:"replay_offset,omitempty"`
	ReplayEndOffset *int64 `json:"replay_end_offset,omitempty"`
	ReplayLag       *int64 `json:"replay_lag,omitempty"`
	Error           string `json:"error,omitempty"`
}

// String shows the partition's state and replay progress in logs.
func (p PartitionStatus) String() string {
	out := fmt.Sprintf("partition %d %s since %s", p.Partition, p.State, p.Since.Format(time.RFC3339Nano))
	if p.ReplaySeconds > 0 {
		out += fmt.Sprintf(", replay %.3fs", p.ReplaySeconds)
	}
	if p.ReplayOffset != nil && p.ReplayEndOffset != nil && p.ReplayLag != nil {
		out += fmt.Sprintf(", replayed to offset %d of %d (lag %d)", *p.ReplayOffset, *p.ReplayEndOffset, *p.ReplayLag)
	}
	if p.Error != "" {
		out += ": " + p.Error
	}
	return out
}

// Status is this node's view of the ownership group (GET /v1/cluster).
type Status struct {
	Cluster string `json:"cluster"`
	Node    string `json:"node"`
	// BrokerID, Host and Port are this node as clients reach it.
	BrokerID int32  `json:"broker_id"`
	Host     string `json:"host"`
	Port     int32  `json:"port"`
	// Listeners are this node's listeners, one per data-plane broker.
	Listeners  []Listener `json:"listeners"`
	Group      string     `json:"group"`
	Member     string     `json:"member_id"`
	Generation int32      `json:"generation"`
	LeaseValid bool       `json:"lease_valid"`
	// LeaseRemainingMs is how long this node may still answer without a
	// renewal (0 when expired).
	LeaseRemainingMs int64             `json:"lease_remaining_ms"`
	SessionTimeoutMs int64             `json:"session_timeout_ms"`
	LeaseMarginMs    int64             `json:"lease_margin_ms"`
	Partitions       []PartitionStatus `json:"partitions"`
	// Nodes are the cluster's nodes as this node last read the
	// ownership group, with the partitions each was assigned: where
	// FindCoordinator sends clients.
	Nodes []PeerStatus `json:"nodes"`
}

// Status returns this node's view.
func (n *Node) Status() Status {
	s := Status{Cluster: n.cfg.ClusterID, Node: n.cfg.NodeID, Group: n.Group(), Generation: -1,
		SessionTimeoutMs: n.cfg.SessionTimeout.Milliseconds(), LeaseMarginMs: n.cfg.Margin.Milliseconds(),
		Partitions: []PartitionStatus{}, Nodes: n.routeStatus(),
		BrokerID: n.self.BrokerID, Host: n.self.Host, Port: n.self.Port, Listeners: n.self.Listeners}
	if n.cl != nil {
		s.Member, s.Generation = n.cl.GroupMetadata()
	}
	if rem := n.lease.Remaining(); rem > 0 {
		s.LeaseValid, s.LeaseRemainingMs = true, rem.Milliseconds()
	}
	now := n.cfg.Clock.Now()
	n.mu.Lock()
	for p, o := range n.parts {
		ps := PartitionStatus{Partition: p, State: o.state, Since: o.since.Round(0).UTC(), Error: o.err}
		if o.replay > 0 {
			ps.ReplaySeconds = o.replay.Seconds()
		}
		if o.state == "loading" {
			ps.LoadingMs = now.Sub(o.since).Milliseconds()
		}
		if at, end, ok := n.replayProgress(p); ok {
			lag := max(end-at, 0)
			ps.ReplayOffset, ps.ReplayEndOffset, ps.ReplayLag = &at, &end, &lag
		}
		s.Partitions = append(s.Partitions, ps)
	}
	n.mu.Unlock()
	sort.Slice(s.Partitions, func(i, j int) bool { return s.Partitions[i].Partition < s.Partitions[j].Partition })
	return s
}

// loading counts the owned partitions that are not active.
func (n *Node) loading() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, o := range n.parts {
		if o.state != "active" {
			c++
		}
	}
	return c
}

// replayLag sums the offsets the replays of the owned partitions that
// are not active have yet to read.
func (n *Node) replayLag() int64 {
	var lag int64
	n.mu.Lock()
	defer n.mu.Unlock()
	for p, o := range n.parts {
		if o.state == "active" {
			continue
		}
		if at, end, ok := n.replayProgress(p); ok {
			lag += max(end-at, 0)
		}
	}
	return lag
}

// Owned returns the partitions the group assigned this node, in order.
func (n *Node) Owned() []int {
	n.mu.Lock()
	defer n.mu.Unlock()
	ps := make([]int, 0, len(n.parts))
	for p := range n.parts {
		ps = append(ps, p)
	}
	sort.Ints(ps)
	return ps
}

func (n *Node) registerMetrics(m *admin.Metrics) {
	m.Gauge("coordhost_cluster_ownership_changes_total", "Partitions this node gained or gave up through the ownership group.",
		func() float64 { return float64(n.changes.Load()) })
	m.Gauge("coordhost_cluster_replays_total", "Take-overs (fence, then replay) this node ran for partitions it gained, retries included.",
		func() float64 { return float64(n.replays.Load()) })
	m.Gauge("coordhost_cluster_replay_seconds_total", "Seconds spent in those take-overs.",
		func() float64 { return time.Duration(n.replayNanos.Load()).Seconds() })
	m.Gauge("coordhost_cluster_retakes_total", "Owned partitions taken over again after their writer was fenced or lost track of a commit.",
		func() float64 { return float64(n.retakes.Load()) })
	m.Gauge("coordhost_cluster_replay_lag_offsets", "State-topic offsets the replays of this node's loading partitions have yet to read.",
		func() float64 { return float64(n.replayLag()) })
	m.Gauge("coordhost_cluster_partitions_loading", "Partitions this node was assigned that are not active yet (taking over, replaying, or failed and retrying).",
		func() float64 { return float64(n.loading()) })
	m.Gauge("coordhost_cluster_partitions_owned", "Partitions the ownership group assigns this node.",
		func() float64 { return float64(len(n.Owned())) })
	m.Gauge("coordhost_cluster_lease_remaining_seconds", "How long this node may still answer for its partitions without a renewed lease (0: expired).",
		func() float64 { return max(n.lease.Remaining(), 0).Seconds() })
}

// Handler serves GET /v1/cluster: Status as JSON.
func (n *Node) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.Encode(n.Status())
	})
}

// Settled reports whether the statuses of every node of a cluster (one
// each, read from GET /v1/cluster) show a settled cluster of parts
// partitions: each node holds an even share with a valid lease, every
// partition is active on exactly one node, and every node's routes name,
// for each partition, the node that holds it.
func Settled(sts []Status, parts int) bool {
	held := map[int]int32{} // partition -> broker id, from each node's own partitions
	for _, st := range sts {
		if !st.LeaseValid || len(st.Partitions) != parts/len(sts) { // cooperative-sticky splits evenly
			return false
		}
		for _, p := range st.Partitions {
			if p.State != "active" {
				return false
			}
			held[p.Partition] = st.BrokerID
		}
	}
	if len(held) != parts {
		return false
	}
	for _, st := range sts {
		if len(st.Nodes) != len(sts) {
			return false
		}
		for _, peer := range st.Nodes {
			for _, p := range peer.Partitions {
				if held[p] != peer.BrokerID {
					return false
				}
			}
		}
	}
	return true
}
