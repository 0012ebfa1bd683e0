package coordhost_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost"
	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/runtime"
)

// testConfig is config.Default on loopback ephemeral ports in a fresh data
// directory: no file, environment or flags.
func testConfig(t *testing.T) *config.Config {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Kafka.Listen, cfg.Admin.Listen = "127.0.0.1:0", "127.0.0.1:0"
	cfg.Plugins.Dir = t.TempDir() // the native builds of the built-in assignors
	return cfg
}

func started(t *testing.T, cfg *config.Config, opts ...coordhost.Option) *coordhost.Coordhost {
	t.Helper()
	ch, err := coordhost.New(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := ch.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := ch.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
	})
	return ch
}

// groupConsumer is one kgo consumer-group member and what it saw.
type groupConsumer struct {
	cl       *kgo.Client
	mu       sync.Mutex
	assigned map[int32]bool
	next     map[int32]int64 // partition -> offset after the last record consumed
}

func newGroupConsumer(t *testing.T, addr, group, topic string) *groupConsumer {
	t.Helper()
	c := &groupConsumer{assigned: map[int32]bool{}, next: map[int32]int64{}}
	set := func(ps map[string][]int32, on bool) {
		c.mu.Lock()
		defer c.mu.Unlock()
		for _, p := range ps[topic] {
			if on {
				c.assigned[p] = true
			} else {
				delete(c.assigned, p)
			}
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.FetchMaxWait(500*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { set(ps, true) }),
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { set(ps, false) }),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, ps map[string][]int32) { set(ps, false) }))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	c.cl = cl
	return c
}

func (c *groupConsumer) poll(ctx context.Context) {
	for ctx.Err() == nil {
		fs := c.cl.PollFetches(ctx)
		c.mu.Lock()
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset+1 > c.next[r.Partition] {
				c.next[r.Partition] = r.Offset + 1
			}
		})
		c.mu.Unlock()
	}
}

// caughtUp returns the partitions c holds, sorted, and whether it has
// consumed each of them up to end.
func (c *groupConsumer) caughtUp(end int64) ([]int32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ps []int32
	ok := true
	for p := range c.assigned {
		ps = append(ps, p)
		ok = ok && c.next[p] == end
	}
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	return ps, ok
}

// TestServesKgoConsumerGroup: coordhost embedded in this test program with
// no configuration file serves a real kgo consumer group: two consumers
// join, split all partitions between them, consume, commit, and the
// committed offsets are read back.
func TestServesKgoConsumerGroup(t *testing.T) {
	const topic, group, parts, perPartition = "orders", "order-readers", 4, 2
	cfg := testConfig(t)
	cfg.DataPlane.Partitions = parts
	ch := started(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	prod, err := kgo.NewClient(kgo.SeedBrokers(ch.KafkaAddr()), kgo.AllowAutoTopicCreation(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for p := int32(0); p < parts; p++ {
		for i := 0; i < perPartition; i++ {
			r := &kgo.Record{Topic: topic, Partition: p, Value: []byte(fmt.Sprintf("order %d/%d", p, i))}
			if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}

	consumers := []*groupConsumer{newGroupConsumer(t, ch.KafkaAddr(), group, topic), newGroupConsumer(t, ch.KafkaAddr(), group, topic)}
	pctx, stopPolling := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, c := range consumers {
		wg.Add(1)
		go func() { defer wg.Done(); c.poll(pctx) }()
	}
	defer func() { stopPolling(); wg.Wait() }()

	// Wait until the group is balanced (each consumer holds some
	// partitions, together all of them, none twice) and each consumer
	// has read its partitions to the end; then commit.
	var split [][]int32
	for {
		split = split[:0]
		seen, all := map[int32]int{}, true
		for _, c := range consumers {
			ps, ok := c.caughtUp(perPartition)
			split = append(split, ps)
			all = all && ok && len(ps) > 0
			for _, p := range ps {
				seen[p]++
			}
		}
		if all && len(seen) == parts && len(split[0])+len(split[1]) == parts {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("group not balanced and caught up: assignments %v", split)
		case <-time.After(100 * time.Millisecond):
		}
	}
	for i, c := range consumers {
		if err := c.cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatalf("consumer %d (partitions %v): commit: %v", i, split[i], err)
		}
	}

	got, err := fetchCommitted(ctx, ch.KafkaAddr(), group, topic, parts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]int64{0: perPartition, 1: perPartition, 2: perPartition, 3: perPartition}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("committed offsets %v, want %v (assignments %v)", got, want, split)
	}
}

// TestLifecycle: Shutdown is idempotent (twice, concurrently, before
// Start), Serve returns when Shutdown is called or its context ends, and
// a closed Coordhost does not start again.
func TestLifecycle(t *testing.T) {
	t.Run("shutdown twice and concurrently", func(t *testing.T) {
		ch := started(t, testConfig(t))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		errs := make(chan error, 3)
		for i := 0; i < 3; i++ {
			go func() { errs <- ch.Shutdown(ctx) }()
		}
		for i := 0; i < 3; i++ {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
		if err := ch.Start(ctx); !errors.Is(err, coordhost.ErrClosed) {
			t.Fatalf("Start after Shutdown = %v, want ErrClosed", err)
		}
		if _, err := http.Get("http://" + ch.AdminAddr() + "/healthz"); err == nil {
			t.Fatal("admin server still answers after Shutdown")
		}
	})
	t.Run("serve until shutdown", func(t *testing.T) {
		ch, err := coordhost.New(testConfig(t))
		if err != nil {
			t.Fatal(err)
		}
		served := make(chan error, 1)
		go func() { served <- ch.Serve(context.Background()) }()
		waitAddr(t, ch)
		if err := ch.Start(context.Background()); err != nil {
			t.Fatalf("Start on a serving Coordhost = %v, want nil", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := ch.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-served:
			if err != nil {
				t.Fatalf("Serve = %v", err)
			}
		case <-ctx.Done():
			t.Fatal("Serve did not return after Shutdown")
		}
	})
	t.Run("serve until its context ends", func(t *testing.T) {
		ch, err := coordhost.New(testConfig(t))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		served := make(chan error, 1)
		go func() { served <- ch.Serve(ctx) }()
		waitAddr(t, ch)
		cancel()
		select {
		case err := <-served:
			if err != nil {
				t.Fatalf("Serve = %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Serve did not return after its context ended")
		}
		if err := ch.Serve(context.Background()); !errors.Is(err, coordhost.ErrClosed) {
			t.Fatalf("Serve after a drain = %v, want ErrClosed", err)
		}
	})
	t.Run("shutdown before start", func(t *testing.T) {
		ch, err := coordhost.New(testConfig(t))
		if err != nil {
			t.Fatal(err)
		}
		if err := ch.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := ch.Serve(context.Background()); !errors.Is(err, coordhost.ErrClosed) {
			t.Fatalf("Serve after Shutdown = %v, want ErrClosed", err)
		}
	})
}

func waitAddr(t *testing.T, ch *coordhost.Coordhost) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ch.KafkaAddr() == ""; {
		if time.Now().After(deadline) {
			t.Fatal("not serving after 30 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestNewRefuses: New checks the configuration with the options applied
// and the options themselves, before any I/O.
func TestNewRefuses(t *testing.T) {
	noop := func(*abi.AssignRequest) (*abi.AssignResponse, error) { return nil, nil }
	cases := []struct {
		name string
		cfg  func(*config.Config)
		opts []coordhost.Option
		want string
	}{
		{"nil config", nil, nil, "nil config"},
		{"bad listener", func(c *config.Config) { c.Kafka.Listen = "9092" }, nil, `kafka.listen = "9092"`},
		{"bad bootstrap", nil, []coordhost.Option{coordhost.WithDataPlane("broker")}, `dataplane.bootstrap entry "broker"`},
		{"built-in name", nil, []coordhost.Option{coordhost.WithAssignor("sticky", noop)}, `WithAssignor("sticky")`},
		{"nil assignor", nil, []coordhost.Option{coordhost.WithAssignor("mine", nil)}, `WithAssignor("mine")`},
		{"record log and state topic", func(c *config.Config) { c.Store.Kind = "kafka" },
			[]coordhost.Option{coordhost.WithDataPlane("127.0.0.1:9092"), coordhost.WithRecordLog(coordhost.MemRecordLog(runtime.NewMemLog()))},
			"WithRecordLog cannot be combined"},
	}
	for _, tc := range cases {
		var cfg *config.Config
		if tc.name != "nil config" {
			cfg = testConfig(t)
			if tc.cfg != nil {
				tc.cfg(cfg)
			}
		}
		if _, err := coordhost.New(cfg, tc.opts...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestNewCopiesConfig: options change New's copy, never the caller's
// configuration.
func TestNewCopiesConfig(t *testing.T) {
	cfg := testConfig(t)
	if _, err := coordhost.New(cfg, coordhost.WithDataPlane("127.0.0.1:1"), coordhost.WithPluginsDir("elsewhere")); err != nil {
		t.Fatal(err)
	}
	if !cfg.DataPlane.Embedded || len(cfg.DataPlane.Bootstrap) != 0 || cfg.Plugins.Dir == "elsewhere" {
		t.Fatalf("New changed the caller's config: %+v %+v", cfg.DataPlane, cfg.Plugins)
	}
}

// TestShutdownCancelsStart: a Shutdown while Start waits for the data plane
// (here a listener that accepts and never answers) ends the start-up, and
// both return promptly.
func TestShutdownCancelsStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	ch, err := coordhost.New(testConfig(t), coordhost.WithDataPlane(ln.Addr().String()))
	if err != nil {
		t.Fatal(err)
	}
	startErr := make(chan error, 1)
	go func() { startErr <- ch.Start(context.Background()) }()
	time.Sleep(200 * time.Millisecond) // Start is waiting for the data plane
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := ch.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	select {
	case err := <-startErr:
		if err == nil {
			t.Fatal("Start succeeded against a data plane that never answers")
		}
	case <-ctx.Done():
		t.Fatal("Start did not return after Shutdown")
	}
}

// heartbeatConsumer sends one ConsumerGroupHeartbeat (KIP-848) joining
// member to group, straight to group's coordinator, and returns the
// answer's error code.
func heartbeatConsumer(t *testing.T, addr, group, member string) int16 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	fc := kmsg.NewPtrFindCoordinatorRequest()
	fc.CoordinatorKey = group
	fresp, err := fc.RequestWith(ctx, cl)
	if err != nil || fresp.ErrorCode != 0 {
		t.Fatalf("FindCoordinator: %v, code %d", err, fresp.ErrorCode)
	}
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch = group, member, 0
	req.RebalanceTimeoutMillis = 30000
	req.SubscribedTopicNames = []string{"greetings"}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp, err := req.RequestWith(ctx, cl.Broker(int(fresp.NodeID)))
	if err != nil {
		t.Fatal(err)
	}
	return resp.ErrorCode
}

// TestRecordLogAppendFailure: on a custom record log whose appends fail
// with a storage error, a consumer joining a group is answered
// NOT_COORDINATOR (retriable, as a failed store append is answered) and
// nothing reaches the log; once appends succeed the same join is
// answered and its records are in the group's partition of the log. No
// bbolt store is created under the data directory.
func TestRecordLogAppendFailure(t *testing.T) {
	mem := runtime.NewMemLog()
	fault := runtime.NewFaultLog(mem)
	cfg := testConfig(t)
	cfg.StorePartitions = 4
	ch := started(t, cfg, coordhost.WithRecordLog(coordhost.MemRecordLog(fault)))
	p := runtime.PartitionFor("g", 4)

	fault.FailAppends(-1, -1, errors.Join(errors.New("no space left on device"), runtime.ErrStorage))
	if code := heartbeatConsumer(t, ch.KafkaAddr(), "g", "m1-0123456789abcdefghij"); code != kerr.NotCoordinator.Code {
		t.Fatalf("join with failing appends: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
	if fault.Appends(p) == 0 {
		t.Fatal("the join was answered without an append to the group's partition")
	}
	for q := range 4 {
		if n := mem.Len(q); n != 0 {
			t.Fatalf("partition %d holds %d records after failed appends", q, n)
		}
	}

	fault.Clear()
	if code := heartbeatConsumer(t, ch.KafkaAddr(), "g", "m1-0123456789abcdefghij"); code != 0 {
		t.Fatalf("join once appends succeed: %v", kerr.ErrorForCode(code))
	}
	if mem.Len(p) == 0 {
		t.Fatalf("no record of the join in partition %d", p)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, host.StoreFile)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("store file with a custom record log: %v", err)
	}
}

// TestRecordLogPartitionCount: a custom record log keeps the partition
// count it was first run with, as the store does: started again with
// another store.partitions it is refused with ErrPartitionCount, and with
// its own count it replays the group it holds.
func TestRecordLogPartitionCount(t *testing.T) {
	rl := coordhost.MemRecordLog(runtime.NewMemLog())
	run := func(parts int) (*coordhost.Coordhost, error) {
		cfg := testConfig(t)
		cfg.StorePartitions = parts
		ch, err := coordhost.New(cfg, coordhost.WithRecordLog(rl))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return ch, ch.Start(ctx)
	}
	stop := func(ch *coordhost.Coordhost) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := ch.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := run(4)
	if err != nil {
		t.Fatal(err)
	}
	if code := heartbeatConsumer(t, ch.KafkaAddr(), "g", "m1-0123456789abcdefghij"); code != 0 {
		t.Fatal(kerr.ErrorForCode(code))
	}
	stop(ch)
	if rl.Partitions() != 4 {
		t.Fatalf("recorded partition count %d, want 4", rl.Partitions())
	}

	ch, err = run(8)
	if !errors.Is(err, coordhost.ErrPartitionCount) || !strings.Contains(err.Error(), "written with 4 partitions and cannot be run with 8") {
		t.Fatalf("start with 8 partitions on a log of 4: %v, want ErrPartitionCount naming both", err)
	}
	stop(ch)

	ch, err = run(4)
	if err != nil {
		t.Fatal(err)
	}
	defer stop(ch)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(ch.KafkaAddr()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{"g"}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if g := resp.Groups[0]; g.ErrorCode != 0 || len(g.Members) != 1 || g.Members[0].MemberID != "m1-0123456789abcdefghij" {
		t.Fatalf("group after a restart on the same log: %+v", g)
	}
}
