package host_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestExternalClusterGroups: coordhost fronting an existing 3-broker
// cluster coordinates a franz-go consumer group itself (no group request
// reaches the cluster) and stores the group's commits in the cluster's own
// offsets log, where a client talking to the cluster directly reads them.
func TestExternalClusterGroups(t *testing.T) {
	dp := newObservedCluster(t, kfake.NumBrokers(3), kfake.SeedTopics(3, "ext-in"))
	srv := startLoopHost(t, "", "--dataplane.mode=external", dp.bootstrap())
	addr := srv.KafkaAddr()
	produceSpread(t, addr, "ext-in", 3, 4, "e")
	cs := []*groupConsumer{startConsumer(t, addr, "extg", "ext-in"), startConsumer(t, addr, "extg", "ext-in")}
	defer func() {
		for _, c := range cs {
			c.close()
		}
	}()
	waitFor(t, 30*time.Second, "two consumers share 3 partitions and consumed 12", func() error {
		if err := ownership(cs, 3); err != nil {
			return err
		}
		if n := len(consumedUnion(cs)); n != 12 {
			return fmt.Errorf("%d consumed (errors %v)", n, allErrs(cs))
		}
		return nil
	})
	direct := newClient(t, dp.c.ListenAddrs()[0])
	ctx := timeout(t)
	waitFor(t, 10*time.Second, "commits visible in the cluster", func() error {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Group = "extg"
		resp, err := req.RequestWith(ctx, direct)
		if err != nil {
			return err
		}
		got := map[int32]int64{}
		for _, tp := range resp.Topics {
			for _, p := range tp.Partitions {
				got[p.Partition] = p.Offset
			}
		}
		for p := int32(0); p < 3; p++ {
			if got[p] != 4 {
				return fmt.Errorf("cluster has offsets %v, want 4 on each partition", got)
			}
		}
		return nil
	})
	for _, k := range []kmsg.Key{kmsg.JoinGroup, kmsg.SyncGroup, kmsg.Heartbeat, kmsg.LeaveGroup} {
		if n := dp.saw(k); n != 0 {
			t.Errorf("%v reached the cluster %d times", k, n)
		}
	}
}
