package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/admin"
	"github.com/coordhost/coordhost/host/cluster"
	"github.com/coordhost/coordhost/host/runtime"
	"github.com/coordhost/coordhost/host/store/kafkalog"
)

const parts = 6

// kvShard is a partition's coordinator in these tests: a map that put
// events write through the log and get events read.
type kvShard struct {
	m map[string]string
	// fenced is called when an append failed with ErrFenced.
	fenced func()
}

type put struct{ k, v string }

type get struct {
	k   string
	out chan string
}

func (s *kvShard) Replay(r runtime.Record) error { s.m[string(r.Key)] = string(r.Value); return nil }
func (s *kvShard) Step(_ int64, in any) []runtime.Record {
	switch in := in.(type) {
	case put:
		s.m[in.k] = in.v
		return []runtime.Record{{Key: []byte(in.k), Value: []byte(in.v)}}
	case get:
		in.out <- s.m[in.k]
	}
	return nil
}
func (s *kvShard) Commit() {}
func (s *kvShard) Rollback(err error) {
	if errors.Is(err, runtime.ErrFenced) && s.fenced != nil {
		s.fenced()
	}
}
func (s *kvShard) NextDeadline() (int64, bool) { return 0, false }
func (s *kvShard) Unload()                     {}

// node is one in-process coordhost node: its own state topic log,
// runtime and ownership membership.
type node struct {
	name string
	log  *kafkalog.Log
	rt   *runtime.Runtime
	own  *cluster.Node
	m    *admin.Metrics
}

func newCluster(t *testing.T) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func startNode(t *testing.T, c *kfake.Cluster, name string, mod func(*cluster.Config)) *node {
	t.Helper()
	seeds := []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}
	l, err := kafkalog.Open(context.Background(), kafkalog.Config{ClientOpts: seeds, Partitions: parts, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	var own *cluster.Node
	rt, err := runtime.New(runtime.Config{Partitions: parts, Workers: 2, Log: l,
		NewShard: func(p int) (runtime.Shard, error) {
			return &kvShard{m: map[string]string{}, fenced: func() { own.Retake(p) }}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := cluster.Config{ClientOpts: seeds, ClusterID: "test", NodeID: name, Topic: kafkalog.DefaultTopic,
		SessionTimeout: 1500 * time.Millisecond, Margin: 300 * time.Millisecond, Heartbeat: 150 * time.Millisecond,
		Metrics: admin.NewMetrics()}
	if mod != nil {
		mod(&cfg)
	}
	own, err = cluster.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := own.Start(rt); err != nil {
		t.Fatal(err)
	}
	n := &node{name: name, log: l, rt: rt, own: own, m: cfg.Metrics}
	t.Cleanup(func() { n.stop(t) })
	return n
}

var stopped sync.Map

func (n *node) stop(t *testing.T) {
	if _, done := stopped.LoadOrStore(n, true); done {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.own.Stop(ctx); err != nil {
		t.Errorf("%s: stop: %v", n.name, err)
	}
	n.rt.Close(ctx)
	// The log stays open: a test may still append through it, as a
	// process that lost its partitions might.
	t.Cleanup(func() { n.log.Close() })
}

// serving reports whether n answers for p: owned, lease valid, loaded.
func (n *node) serving(p int) bool { return n.own.Serving(p) == nil && n.rt.Held(p) }

// waitSplit waits until every partition is served by exactly one of
// nodes, each serving an even share (the cooperative-sticky balancer's
// outcome), and returns which.
func waitSplit(t *testing.T, nodes ...*node) map[int]*node {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		by, ok := map[int]*node{}, true
		for p := 0; p < parts && ok; p++ {
			for _, n := range nodes {
				if n.serving(p) {
					if by[p] != nil {
						ok = false // both still answer: wait for the revoke
					}
					by[p] = n
				}
			}
			ok = ok && by[p] != nil
		}
		for _, n := range nodes {
			ok = ok && count(by, n) == parts/len(nodes)
		}
		if ok {
			return by
		}
		if time.Now().After(deadline) {
			for _, n := range nodes {
				t.Logf("%s: %+v", n.name, n.own.Status())
			}
			t.Fatal("partitions not split among the nodes within 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func submitWait(t *testing.T, n *node, p int, in any) {
	t.Helper()
	if err := n.own.Serving(p); err != nil {
		t.Fatalf("%s: partition %d: %v", n.name, p, err)
	}
	if err := n.rt.Submit(p, runtime.Event{Input: in}); err != nil {
		t.Fatalf("%s: partition %d: %v", n.name, p, err)
	}
}

func read(t *testing.T, n *node, p int, k string) string {
	t.Helper()
	out := make(chan string, 1)
	if err := n.rt.Submit(p, runtime.Event{Input: get{k: k, out: out}, Read: true}); err != nil {
		t.Fatalf("%s: partition %d: %v", n.name, p, err)
	}
	select {
	case v := <-out:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: partition %d: read not answered", n.name, p)
		return ""
	}
}

// firstOf returns the first partition n serves.
func firstOf(by map[int]*node, n *node) int {
	for p := 0; p < parts; p++ {
		if by[p] == n {
			return p
		}
	}
	return -1
}

func count(by map[int]*node, n *node) int {
	c := 0
	for _, o := range by {
		if o == n {
			c++
		}
	}
	return c
}

// TestNodesSplitAndFailOver: two nodes split the partitions; state one
// writes is served by the other after the first stops, and the stopped
// node's late append is fenced.
func TestNodesSplitAndFailOver(t *testing.T) {
	c := newCluster(t)
	a := startNode(t, c, "a", nil)
	waitSplit(t, a) // alone, a holds everything
	b := startNode(t, c, "b", nil)
	by := waitSplit(t, a, b)
	pa := firstOf(by, a)
	submitWait(t, a, pa, put{"group-x", "written by a"})
	if got := read(t, a, pa, "group-x"); got != "written by a" {
		t.Fatalf("a reads %q", got)
	}
	if err := b.own.Serving(pa); !errors.Is(err, runtime.ErrNotCoordinator) {
		t.Fatalf("b answers for a's partition %d: %v", pa, err)
	}

	a.stop(t)
	if a.own.Serving(pa) == nil {
		t.Fatal("a still answers after it stopped")
	}
	waitSplit(t, b)
	if got := read(t, b, pa, "group-x"); got != "written by a" {
		t.Fatalf("b serves %q for a group a wrote, want %q", got, "written by a")
	}
	// a, paused and woken, appends through its old writer: fenced.
	err := a.log.Append(pa, []runtime.Record{{Key: []byte("group-x"), Value: []byte("late")}})
	if !errors.Is(err, runtime.ErrFenced) {
		t.Fatalf("a's late append: %v, want ErrFenced", err)
	}
	if got := read(t, b, pa, "group-x"); got != "written by a" {
		t.Fatalf("after a's late append b serves %q", got)
	}
	st := b.own.Status()
	if len(st.Partitions) != parts || !st.LeaseValid {
		t.Fatalf("b's status: %+v", st)
	}
	// b gained half the partitions when it joined and the rest when a left.
	var text strings.Builder
	b.m.WriteTo(&text)
	for _, want := range []string{"coordhost_cluster_ownership_changes_total 6\n", "coordhost_cluster_partitions_owned 6\n"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("b's metrics lack %q:\n%s", want, text.String())
		}
	}
}

// TestThreeNodes: three nodes share the partitions; when one stops, the
// other two take its partitions over and serve what it wrote.
func TestThreeNodes(t *testing.T) {
	c := newCluster(t)
	nodes := []*node{startNode(t, c, "a", nil), startNode(t, c, "b", nil), startNode(t, c, "c", nil)}
	by := waitSplit(t, nodes...)
	for _, n := range nodes {
		if count(by, n) != parts/3 {
			t.Fatalf("%s holds %d partitions, want %d", n.name, count(by, n), parts/3)
		}
	}
	victim := by[0]
	var theirs []int
	for p := 0; p < parts; p++ {
		if by[p] == victim {
			theirs = append(theirs, p)
			submitWait(t, victim, p, put{"k", fmt.Sprintf("p%d", p)})
		}
	}
	for _, p := range theirs {
		if got := read(t, victim, p, "k"); got != fmt.Sprintf("p%d", p) {
			t.Fatalf("partition %d: %q", p, got)
		}
	}
	victim.stop(t)
	rest := slices.DeleteFunc(slices.Clone(nodes), func(n *node) bool { return n == victim })
	by = waitSplit(t, rest...)
	for _, p := range theirs {
		if got := read(t, by[p], p, "k"); got != fmt.Sprintf("p%d", p) {
			t.Fatalf("partition %d on %s after failover: %q", p, by[p].name, got)
		}
	}
	if count(by, rest[0]) != parts/2 || count(by, rest[1]) != parts/2 {
		t.Fatalf("after failover: %s %d, %s %d", rest[0].name, count(by, rest[0]), rest[1].name, count(by, rest[1]))
	}
}

// fakeClock is a monotonic clock that moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *fakeClock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// TestLeaseExpiryAnswersNotCoordinator: a node whose lease runs out (its
// clock jumps past it, as after a pause) stops answering for its
// partitions at once, with no network event, and answers again once a
// heartbeat renews it.
func TestLeaseExpiryAnswersNotCoordinator(t *testing.T) {
	c := newCluster(t)
	clk := &fakeClock{now: time.Unix(1000, 0)}
	a := startNode(t, c, "a", func(cfg *cluster.Config) {
		cfg.Clock = clk
		cfg.SessionTimeout = 3 * time.Second
		cfg.Heartbeat = time.Hour // only the heartbeat on assignment renews it
	})
	waitSplit(t, a)
	if rem := a.own.Status().LeaseRemainingMs; rem <= 0 || rem > 3000 {
		t.Fatalf("lease remaining %dms", rem)
	}
	clk.Advance(3 * time.Second) // past session - margin
	for p := 0; p < parts; p++ {
		if err := a.own.Serving(p); !errors.Is(err, runtime.ErrNotCoordinator) {
			t.Fatalf("partition %d after the lease expired: %v", p, err)
		}
		if !a.rt.Held(p) {
			t.Fatalf("partition %d unloaded: the expiry should be seen without any event", p)
		}
	}
	if st := a.own.Status(); st.LeaseValid || st.LeaseRemainingMs != 0 {
		t.Fatalf("status after expiry: %+v", st)
	}
}

// TestCutOffNodeStopsBeforeTakeOver: node a loses the group coordinator
// (its heartbeats and joins go unanswered, as for a paused or cut-off
// process) without leaving. Its lease runs out before the broker expires
// its session, so at no sample do a and b both answer for a partition;
// b then takes every partition over and serves what a wrote, and a's
// late append is fenced.
func TestCutOffNodeStopsBeforeTakeOver(t *testing.T) {
	c := newCluster(t)
	a := startNode(t, c, "a", nil)
	b := startNode(t, c, "b", nil)
	by := waitSplit(t, a, b)
	pa := firstOf(by, a)
	submitWait(t, a, pa, put{"group-y", "from a"})
	read(t, a, pa, "group-y")

	bMember := b.own.Status().Member
	var cut sync.Mutex
	cutOff := true
	for _, key := range []int16{kmsg.Heartbeat.Int16(), kmsg.JoinGroup.Int16(), kmsg.SyncGroup.Int16()} {
		c.ControlKey(key, func(req kmsg.Request) (kmsg.Response, error, bool) {
			c.KeepControl()
			cut.Lock()
			defer cut.Unlock()
			if cutOff && memberOf(req) != bMember {
				return nil, errors.New("a is cut off"), true
			}
			return nil, nil, false
		})
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		both, bAll := -1, true
		for p := 0; p < parts; p++ {
			if a.serving(p) && b.serving(p) {
				both = p
			}
			bAll = bAll && b.serving(p)
		}
		if both >= 0 {
			t.Fatalf("a and b both answer for partition %d", both)
		}
		if bAll {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b did not take every partition over: %+v", b.own.Status())
		}
		time.Sleep(5 * time.Millisecond)
	}
	for p := 0; p < parts; p++ {
		if err := a.own.Serving(p); !errors.Is(err, runtime.ErrNotCoordinator) {
			t.Fatalf("cut-off a answers for partition %d: %v", p, err)
		}
	}
	if got := read(t, b, pa, "group-y"); got != "from a" {
		t.Fatalf("b serves %q", got)
	}
	if err := a.log.Append(pa, []runtime.Record{{Key: []byte("group-y"), Value: []byte("late")}}); !errors.Is(err, runtime.ErrFenced) {
		t.Fatalf("a's late append: %v, want ErrFenced", err)
	}
	cut.Lock()
	cutOff = false
	cut.Unlock()
}

func memberOf(req kmsg.Request) string {
	switch r := req.(type) {
	case *kmsg.HeartbeatRequest:
		return r.MemberID
	case *kmsg.JoinGroupRequest:
		return r.MemberID
	case *kmsg.SyncGroupRequest:
		return r.MemberID
	}
	return ""
}

// TestFencedOwnerTakesOver: a writer outside the group fences a
// partition node a owns; a's next append fails ErrFenced, and a takes
// the partition over again, replaying what the intruder wrote, fencing
// it in turn, and serving writes again.
func TestFencedOwnerTakesOver(t *testing.T) {
	c := newCluster(t)
	a := startNode(t, c, "a", nil)
	waitSplit(t, a)
	submitWait(t, a, 1, put{"k", "a1"})
	if got := read(t, a, 1, "k"); got != "a1" {
		t.Fatalf("a reads %q", got)
	}
	intruder, err := kafkalog.Open(context.Background(), kafkalog.Config{ClientOpts: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, Partitions: parts, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer intruder.Close()
	if err := intruder.Replay(1, func(runtime.Record) error { return nil }); err != nil { // fences a's writer
		t.Fatal(err)
	}
	if err := intruder.Append(1, []runtime.Record{{Key: []byte("k"), Value: []byte("intruder")}}); err != nil {
		t.Fatal(err)
	}
	submitWait(t, a, 1, put{"k", "a2"}) // fenced: rolled back, a takes p over again
	deadline := time.Now().Add(20 * time.Second)
	for {
		if a.rt.Held(1) {
			if got := read(t, a, 1, "k"); got == "intruder" {
				break // replayed what the intruder wrote
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("a did not take partition 1 over again: %+v", a.own.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
	submitWait(t, a, 1, put{"k", "a3"})
	if got := read(t, a, 1, "k"); got != "a3" {
		t.Fatalf("after the retake a reads %q", got)
	}
	if err := intruder.Append(1, []runtime.Record{{Key: []byte("k"), Value: []byte("late")}}); !errors.Is(err, runtime.ErrFenced) {
		t.Fatalf("intruder's append after a's retake: %v, want ErrFenced", err)
	}
	var text strings.Builder
	a.m.WriteTo(&text)
	if !strings.Contains(text.String(), "coordhost_cluster_retakes_total 1\n") {
		t.Errorf("metrics: %s", text.String())
	}
}
