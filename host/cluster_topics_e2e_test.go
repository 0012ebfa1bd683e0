package host_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host"
)

// TestClusterTakeOverSeesTopicsCreatedLater: a node that takes a
// partition over long after it started applies the data plane's topics
// as they are then, not as they were at its start. A streams group whose
// source topic was created after both nodes started keeps its tasks
// through the node that takes its partition over; with the image from
// the start the new owner finds the source topic missing and assigns
// nothing (Kafka Streams then fails with MissingSourceTopicException).
func TestClusterTakeOverSeesTopicsCreatedLater(t *testing.T) {
	const parts = 6
	dp := newObservedCluster(t, kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	nodes := startClusterNodes(t, dp, 2, parts)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	admin := newClient(t, dp.c.ListenAddrs()[0])
	create := kmsg.NewPtrCreateTopicsRequest()
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "late", 2, 1
	create.Topics = append(create.Topics, ct)
	resp, err := create.RequestWith(ctx, admin)
	if err != nil || resp.Topics[0].ErrorCode != 0 {
		t.Fatalf("create topic: %v %+v", err, resp)
	}

	const group = "late-streams"
	owner, _ := ownerOf(t, nodes, group, parts)
	other := nodes[0]
	if other == owner {
		other = nodes[1]
	}
	member := newStreamsMember(coordinatorRequestor{cl: newClient(t, other.KafkaAddr()), group: group}, group, "late")
	for epochOf(member) == 0 || len(member.partitions()) != 2 {
		if code, _, err := member.heartbeat(ctx); err != nil || code != 0 {
			t.Fatalf("streams heartbeat through the owner: %v %v", err, kerr.ErrorForCode(code))
		}
		if ctx.Err() != nil {
			t.Fatal("the streams member never got its tasks")
		}
		time.Sleep(50 * time.Millisecond)
	}

	stopHost(t, owner)
	waitRoutes(t, []*host.Server{other}, parts)
	for ok := 0; ok < 5; {
		code, _, err := member.heartbeat(ctx)
		if err == nil && code == 0 {
			ok++
		}
		if ctx.Err() != nil {
			t.Fatalf("streams member after the take-over: %v %v", err, kerr.ErrorForCode(code))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if got := member.partitions(); !slices.Equal(got, []int32{0, 1}) {
		_, errs, _ := member.state()
		t.Fatalf("after the take-over the member holds tasks of partitions %v, want [0 1] (errors %v)", got, errs)
	}
}
