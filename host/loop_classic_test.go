package host_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// groupConsumer is a franz-go consumer in a classic group that commits
// every record it polls and remembers what it consumed and owns.
type groupConsumer struct {
	cl   *kgo.Client
	mu   sync.Mutex
	seen map[string]int // "partition/offset" -> count
	own  map[int32]bool
	errs []error
	done chan struct{}
}

func startConsumer(t *testing.T, addr, group, topic string) *groupConsumer {
	t.Helper()
	gc := &groupConsumer{seen: map[string]int{}, own: map[int32]bool{}, done: make(chan struct{})}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(300*time.Millisecond), kgo.RebalanceTimeout(10*time.Second),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.OnPartitionsAssigned(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			gc.mu.Lock()
			defer gc.mu.Unlock()
			for _, p := range m[topic] {
				gc.own[p] = true
			}
		}),
		kgo.OnPartitionsRevoked(func(ctx context.Context, cl *kgo.Client, m map[string][]int32) {
			if err := cl.CommitUncommittedOffsets(ctx); err != nil {
				gc.fail(fmt.Errorf("commit on revoke: %w", err))
			}
			gc.mu.Lock()
			defer gc.mu.Unlock()
			for _, p := range m[topic] {
				delete(gc.own, p)
			}
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
			gc.fail(fmt.Errorf("partitions lost: %v", m))
		}),
	)
	if err != nil {
		t.Fatal(err)
	}
	gc.cl = cl
	go gc.poll()
	return gc
}

func (gc *groupConsumer) fail(err error) {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	gc.errs = append(gc.errs, err)
}

func (gc *groupConsumer) poll() {
	defer close(gc.done)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		fs := gc.cl.PollFetches(ctx)
		cancel()
		if fs.IsClientClosed() {
			return
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if err != context.DeadlineExceeded {
				gc.fail(err)
			}
		})
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) {
			recs = append(recs, r)
			gc.mu.Lock()
			gc.seen[fmt.Sprintf("%d/%d", r.Partition, r.Offset)]++
			gc.mu.Unlock()
		})
		if len(recs) > 0 {
			cctx, ccancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := gc.cl.CommitRecords(cctx, recs...); err != nil {
				gc.fail(fmt.Errorf("commit: %w", err))
			}
			ccancel()
		}
	}
}

func (gc *groupConsumer) close() {
	gc.cl.Close() // leaves the group (LeaveGroup)
	<-gc.done
}

func (gc *groupConsumer) owned() []int32 {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	var out []int32
	for p := range gc.own {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func (gc *groupConsumer) consumed() map[string]int {
	gc.mu.Lock()
	defer gc.mu.Unlock()
	out := make(map[string]int, len(gc.seen))
	for k, v := range gc.seen {
		out[k] = v
	}
	return out
}

// produceSpread produces perPartition records to each of n partitions.
func produceSpread(t *testing.T, addr, topic string, n int32, perPartition int, tag string) {
	t.Helper()
	cl := newClient(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	ctx := timeout(t)
	var recs []*kgo.Record
	for p := int32(0); p < n; p++ {
		for i := 0; i < perPartition; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Value: []byte(tag + "-" + strconv.Itoa(int(p)) + "-" + strconv.Itoa(i))})
		}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// ownership checks that consumers own disjoint partition sets covering 0..n-1.
func ownership(cs []*groupConsumer, n int) error {
	seen := map[int32]int{}
	for _, c := range cs {
		for _, p := range c.owned() {
			seen[p]++
		}
	}
	if len(seen) != n {
		return fmt.Errorf("partitions owned: %v, want %d", seen, n)
	}
	for p, k := range seen {
		if k != 1 {
			return fmt.Errorf("partition %d owned by %d consumers", p, k)
		}
	}
	return nil
}

func consumedUnion(cs []*groupConsumer) map[string]int {
	u := map[string]int{}
	for _, c := range cs {
		for k, v := range c.consumed() {
			u[k] += v
		}
	}
	return u
}

// TestClassicGroupKgoOverTCP: three franz-go consumers in a classic group
// consume a 6-partition topic through coordhost (two partitions each),
// rebalance when one leaves, commit, and a new consumer resumes from the
// committed offsets.
func TestClassicGroupKgoOverTCP(t *testing.T) {
	srv := startLoopHost(t, "")
	addr := srv.KafkaAddr()
	ctx := timeout(t)
	if err := createTopic(ctx, newClient(t, addr), "cl-in", 6); err != nil {
		t.Fatal(err)
	}
	produceSpread(t, addr, "cl-in", 6, 10, "a")
	cs := []*groupConsumer{startConsumer(t, addr, "cg", "cl-in"), startConsumer(t, addr, "cg", "cl-in"), startConsumer(t, addr, "cg", "cl-in")}
	defer func() {
		for _, c := range cs {
			c.close()
		}
	}()
	waitFor(t, 30*time.Second, "three consumers own 2 partitions each", func() error {
		if err := ownership(cs, 6); err != nil {
			return err
		}
		for i, c := range cs {
			if n := len(c.owned()); n != 2 {
				return fmt.Errorf("consumer %d owns %v", i, c.owned())
			}
		}
		return nil
	})
	waitFor(t, 30*time.Second, "60 records consumed", func() error {
		if n := len(consumedUnion(cs)); n != 60 {
			return fmt.Errorf("%d distinct records consumed (errors %v)", n, allErrs(cs))
		}
		return nil
	})
	leaver := cs[2]
	leaver.close()
	cs = cs[:2]
	waitFor(t, 30*time.Second, "two consumers own all 6 partitions after a leave", func() error { return ownership(cs, 6) })
	produceSpread(t, addr, "cl-in", 6, 5, "b")
	waitFor(t, 30*time.Second, "90 records consumed", func() error {
		u := consumedUnion(append(cs, leaver))
		if len(u) != 90 {
			return fmt.Errorf("%d distinct records consumed", len(u))
		}
		return nil
	})
	for _, c := range append(cs, leaver) {
		c.mu.Lock()
		errs := c.errs
		c.mu.Unlock()
		if len(errs) > 0 {
			t.Errorf("consumer errors: %v", errs)
		}
	}
	for _, c := range cs {
		c.close()
	}
	cs = nil
	// A new consumer resumes from the committed offsets: it sees only the
	// records produced after the commits (offset 15 of each partition).
	produceSpread(t, addr, "cl-in", 6, 1, "c")
	fresh := startConsumer(t, addr, "cg", "cl-in")
	defer fresh.close()
	waitFor(t, 30*time.Second, "new consumer reads the 6 new records", func() error {
		got := fresh.consumed()
		if len(got) < 6 {
			return fmt.Errorf("consumed %v", got)
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond)
	got := fresh.consumed()
	for p := 0; p < 6; p++ {
		if got[fmt.Sprintf("%d/15", p)] != 1 {
			t.Errorf("partition %d: offset 15 not consumed once (consumed %v)", p, got)
		}
	}
	if len(got) != 6 {
		t.Errorf("new consumer consumed %d records, want only the 6 after the committed offsets: %v", len(got), got)
	}
}

func allErrs(cs []*groupConsumer) []error {
	var out []error
	for _, c := range cs {
		c.mu.Lock()
		out = append(out, c.errs...)
		c.mu.Unlock()
	}
	return out
}
