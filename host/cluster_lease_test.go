package host_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/cluster"
	"github.com/coordhost/coordhost/host/loop"
	"github.com/coordhost/coordhost/host/runtime"
	"github.com/coordhost/coordhost/host/store/kafkalog"
	"github.com/coordhost/coordhost/host/wire"
)

// stepClock is a monotonic clock that moves only when told.
type stepClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stepClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

func (c *stepClock) advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

// TestLoopAnswersOnlyWithinLease: a loop in a cluster answers a group's
// requests while its lease holds; once the lease clock passes the lease,
// with no network event and the partitions still loaded, the same
// request is answered NOT_COORDINATOR.
func TestLoopAnswersOnlyWithinLease(t *testing.T) {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	seeds := []kgo.Opt{kgo.SeedBrokers(kc.ListenAddrs()...)}
	clk := &stepClock{now: time.Unix(1000, 0)}
	own, err := cluster.New(cluster.Config{ClientOpts: seeds, ClusterID: "t", NodeID: "n", Topic: kafkalog.DefaultTopic,
		SessionTimeout: 3 * time.Second, Heartbeat: time.Hour, Clock: clk}) // only the assignment's heartbeat renews
	if err != nil {
		t.Fatal(err)
	}
	l, err := loop.New(loop.Deps{NewCore: newTestCore, Partitions: 2, Ownership: own,
		OpenLog: func(parts int) (runtime.Log, func() error, error) {
			kl, err := kafkalog.Open(context.Background(), kafkalog.Config{ClientOpts: seeds, Partitions: parts, Timeout: 10 * time.Second})
			if err != nil {
				return nil, nil, err
			}
			return kl, kl.Close, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		l.Shutdown(ctx)
	})
	describe := func() int16 {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Version, req.Groups = 5, []string{"g"}
		resp, err := l.Handle(context.Background(), &wire.Request{Key: req.Key(), Version: req.Version, Body: req})
		if err != nil {
			t.Fatal(err)
		}
		return resp.(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode
	}
	deadline := time.Now().Add(20 * time.Second)
	for describe() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the loop never answered for g: %+v", own.Status())
		}
		time.Sleep(10 * time.Millisecond)
	}
	clk.advance(3 * time.Second) // past session timeout - margin since the renewal
	if code := describe(); code != kerr.NotCoordinator.Code {
		t.Fatalf("after the lease expired: %v, want NOT_COORDINATOR", kerr.ErrorForCode(code))
	}
	if st := own.Status(); len(st.Partitions) != 2 || st.Partitions[0].State != "active" || st.Partitions[1].State != "active" {
		t.Fatalf("partitions should stay loaded, only unanswered: %+v", st)
	}
}
