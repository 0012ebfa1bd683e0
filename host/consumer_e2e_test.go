package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/coordhost/coordhost/host/loop"
)

// partOwners tracks which client owns which partition, from kgo's own
// assign/revoke/lose callbacks, and records every moment a partition is
// given to a client while another still owns it.
type partOwners struct {
	mu         sync.Mutex
	owner      map[int32]string
	violations []string
}

func (o *partOwners) assigned(client string, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range ps {
		if cur, ok := o.owner[p]; ok && cur != client {
			o.violations = append(o.violations, fmt.Sprintf("partition %d given to %s while %s owns it", p, client, cur))
		}
		o.owner[p] = client
	}
}

func (o *partOwners) released(client string, ps []int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range ps {
		if o.owner[p] == client {
			delete(o.owner, p)
		}
	}
}

func (o *partOwners) of(client string) []int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []int32
	for p, c := range o.owner {
		if c == client {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// start848Consumer starts a kgo KIP-848 consumer (server-side uniform
// assignor) polling in the background; its partitions are tracked in own.
func start848Consumer(t *testing.T, addr, name, group, topic string, own *partOwners) *kgo.Client {
	t.Helper()
	track := func(f func(string, []int32)) func(context.Context, *kgo.Client, map[string][]int32) {
		return func(_ context.Context, _ *kgo.Client, m map[string][]int32) { f(name, m[topic]) }
	}
	cl := newClient(t, addr, kgo.ClientID(name), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
		kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(track(own.assigned)), kgo.OnPartitionsRevoked(track(own.released)),
		kgo.OnPartitionsLost(track(own.released)), kgo.MaxVersions(consumerVersions()))
	go func() {
		for {
			fs := cl.PollFetches(context.Background())
			if fs.IsClientClosed() {
				return
			}
		}
	}()
	return cl
}

// TestConsumerGroupKgo runs real kgo KIP-848 consumers against coordhost:
// three reach a stable, complete, balanced assignment; one leaves and one
// joins, and each time the group settles again; at no observed point does
// a partition have two owners, neither in coordhost's ConsumerGroupDescribe
// nor in the clients' own callbacks; offset commits are fenced by member
// epoch.
func TestConsumerGroupKgo(t *testing.T) {
	srv := startLoopHost(t, "", quickConsumerHeartbeat)
	ctx := timeout(t)
	admin := newClient(t, srv.KafkaAddr())
	const group, topic, parts = "kg", "kc", 6
	if err := createTopic(ctx, admin, topic, parts); err != nil {
		t.Fatal(err)
	}
	own := &partOwners{owner: map[int32]string{}}

	// Watch coordhost's own view: no partition in two members' current
	// assignments, at any described point.
	var mu sync.Mutex
	var describeViolations []string
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			g, err := describeConsumer(ctx, admin, group)
			if err != nil {
				continue
			}
			seen := map[int32]string{}
			for _, m := range g.Members {
				for _, tp := range m.Assignment.TopicPartitions {
					for _, p := range tp.Partitions {
						if other, dup := seen[p]; dup {
							mu.Lock()
							describeViolations = append(describeViolations, fmt.Sprintf("epoch %d: partition %d held by %s and %s", g.Epoch, p, other, m.MemberID))
							mu.Unlock()
						}
						seen[p] = m.MemberID
					}
				}
			}
		}
	}()

	clients := map[string]*kgo.Client{}
	for _, name := range []string{"c1", "c2", "c3"} {
		clients[name] = start848Consumer(t, srv.KafkaAddr(), name, group, topic, own)
	}
	settled := func(names ...string) func() error {
		return func() error {
			g, err := describeConsumer(ctx, admin, group)
			if err != nil {
				return err
			}
			if g.State != "Stable" || g.Epoch != g.AssignmentEpoch || len(g.Members) != len(names) {
				return fmt.Errorf("state %s epoch %d/%d members %d", g.State, g.Epoch, g.AssignmentEpoch, len(g.Members))
			}
			total := 0
			for _, name := range names {
				n := len(own.of(name))
				if n < parts/len(names) || n > (parts+len(names)-1)/len(names) {
					return fmt.Errorf("%s owns %v: not balanced", name, own.of(name))
				}
				total += n
			}
			if total != parts {
				return fmt.Errorf("clients own %d partitions, want %d", total, parts)
			}
			return nil
		}
	}
	waitFor(t, 25*time.Second, "three consumers stable", settled("c1", "c2", "c3"))

	// Offset commits carry the member epoch: the member's own epoch is
	// accepted, a newer one is STALE_MEMBER_EPOCH.
	g, err := describeConsumer(ctx, admin, group)
	if err != nil {
		t.Fatal(err)
	}
	m := g.Members[0]
	if code := commitAt(ctx, t, admin, group, m.MemberID, m.MemberEpoch, topic, m.Assignment.TopicPartitions[0].Partitions[0]); code != 0 {
		t.Fatalf("commit at the member epoch: %v", kerr.ErrorForCode(code))
	}
	if code := commitAt(ctx, t, admin, group, m.MemberID, m.MemberEpoch+1, topic, 0); code != kerr.StaleMemberEpoch.Code {
		t.Fatalf("commit at a newer epoch: %v, want STALE_MEMBER_EPOCH", kerr.ErrorForCode(code))
	}
	if code := commitAt(ctx, t, admin, group, "nobody", m.MemberEpoch, topic, 0); code != kerr.UnknownMemberID.Code {
		t.Fatalf("commit by a non-member: %v, want UNKNOWN_MEMBER_ID", kerr.ErrorForCode(code))
	}

	// A member leaves (kgo sends the leave heartbeat on close).
	clients["c3"].Close()
	waitFor(t, 25*time.Second, "two consumers stable after a leave", settled("c1", "c2"))

	// A member joins: partitions move only after their owner revoked them.
	clients["c4"] = start848Consumer(t, srv.KafkaAddr(), "c4", group, topic, own)
	waitFor(t, 25*time.Second, "three consumers stable after a join", settled("c1", "c2", "c4"))

	// The admin API describes the group as a consumer group.
	var detail loop.GroupDetail
	resp, err := http.Get("http://" + srv.AdminAddr() + "/v1/groups/" + group)
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&detail)
	resp.Body.Close()
	if err != nil || detail.Type != "consumer" || detail.Assignor != "uniform" || detail.Consumer == nil || len(detail.Consumer.Members) != 3 {
		t.Fatalf("admin detail %+v (%v)", detail, err)
	}

	// kgo's own commit goes through with its current epoch.
	if err := clients["c1"].CommitUncommittedOffsets(ctx); err != nil {
		t.Fatalf("kgo commit: %v", err)
	}

	close(stop)
	<-watched
	mu.Lock()
	defer mu.Unlock()
	if len(describeViolations) > 0 {
		t.Fatalf("coordhost described a partition with two owners: %v", describeViolations)
	}
	own.mu.Lock()
	defer own.mu.Unlock()
	if len(own.violations) > 0 {
		t.Fatalf("clients saw a partition with two owners: %v", own.violations)
	}
}

// consumerVersions are the test clients' versions with
// ConsumerGroupHeartbeat v1, which kgo requires for KIP-848 (kversion's
// tip lists v0 only).
func consumerVersions() *kversion.Versions {
	v := clientVersions()
	v.SetMaxKeyVersion(68, 1) // ConsumerGroupHeartbeat
	v.SetMaxKeyVersion(69, 1) // ConsumerGroupDescribe
	return v
}

func describeConsumer(ctx context.Context, cl *kgo.Client, group string) (kmsg.ConsumerGroupDescribeResponseGroup, error) {
	req := kmsg.NewPtrConsumerGroupDescribeRequest()
	req.Groups = []string{group}
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		return kmsg.ConsumerGroupDescribeResponseGroup{}, err
	}
	g := resp.Groups[0]
	if g.ErrorCode != 0 {
		return g, kerr.ErrorForCode(g.ErrorCode)
	}
	return g, nil
}

func commitAt(ctx context.Context, t *testing.T, cl *kgo.Client, group, member string, epoch int32, topic string, partition int32) int16 {
	t.Helper()
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 9
	req.Group, req.MemberID, req.Generation = group, member, epoch
	tp := kmsg.NewOffsetCommitRequestTopic()
	tp.Topic = topic
	p := kmsg.NewOffsetCommitRequestTopicPartition()
	p.Partition, p.Offset = partition, 0
	tp.Partitions = append(tp.Partitions, p)
	req.Topics = append(req.Topics, tp)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// TestConsumerGroupKgoRegex: a kgo KIP-848 consumer subscribing by regex
// (kgo sends SubscribedTopicRegex) and one subscribing by name share a
// group on coordhost: the regex is resolved on the coordinator against
// the topics that exist, the regex member gets every partition of the
// matching topics and the other member its named topic; an invalid regex
// is INVALID_REGULAR_EXPRESSION.
func TestConsumerGroupKgoRegex(t *testing.T) {
	srv := startLoopHost(t, "", quickConsumerHeartbeat)
	ctx := timeout(t)
	admin := newClient(t, srv.KafkaAddr())
	for name, parts := range map[string]int32{"rx-1": 2, "rx-2": 2, "plain": 3} {
		if err := createTopic(ctx, admin, name, parts); err != nil {
			t.Fatal(err)
		}
	}
	const group = "kgrx"
	for _, c := range []struct{ name, topic string }{{"byregex", "rx-.*"}, {"byname", "plain"}} {
		opts := []kgo.Opt{kgo.ClientID(c.name), kgo.ConsumerGroup(group), kgo.ConsumeTopics(c.topic),
			kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()), kgo.DisableAutoCommit(),
			kgo.MaxVersions(consumerVersions())}
		if c.name == "byregex" {
			opts = append(opts, kgo.ConsumeRegex())
		}
		cl := newClient(t, srv.KafkaAddr(), opts...)
		go func() {
			for !cl.PollFetches(context.Background()).IsClientClosed() {
			}
		}()
	}
	waitFor(t, 25*time.Second, "regex and name members stable", func() error {
		g, err := describeConsumer(ctx, admin, group)
		if err != nil {
			return err
		}
		if g.State != "Stable" || g.Epoch != g.AssignmentEpoch || len(g.Members) != 2 {
			return fmt.Errorf("state %s epoch %d/%d members %d", g.State, g.Epoch, g.AssignmentEpoch, len(g.Members))
		}
		held := map[string]string{}
		for _, m := range g.Members {
			var parts []string
			for _, tp := range m.Assignment.TopicPartitions {
				for _, p := range tp.Partitions {
					parts = append(parts, fmt.Sprintf("%s-%d", tp.Topic, p))
				}
			}
			sort.Strings(parts)
			held[m.ClientID] = fmt.Sprint(parts)
			if m.ClientID == "byregex" && (m.SubscribedTopicRegex == nil || *m.SubscribedTopicRegex == "") {
				return fmt.Errorf("the regex member shows no regex")
			}
		}
		if held["byregex"] != "[rx-1-0 rx-1-1 rx-2-0 rx-2-1]" || held["byname"] != "[plain-0 plain-1 plain-2]" {
			return fmt.Errorf("assignments %v", held)
		}
		return nil
	})

	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.MemberID, req.RebalanceTimeoutMillis = group, "bad-regex", 30000
	req.SubscribedTopicRegex, req.Topics = kmsg.StringPtr("rx-("), []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp, err := req.RequestWith(ctx, newClient(t, srv.KafkaAddr(), kgo.MaxVersions(consumerVersions()))) // the regex is a v1 field
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != kerr.InvalidRegularExpression.Code {
		t.Fatalf("invalid regex: %v (%v), want INVALID_REGULAR_EXPRESSION", kerr.ErrorForCode(resp.ErrorCode), *resp.ErrorMessage)
	}
}

// quickConsumerHeartbeat gives consumer groups a 200 ms heartbeat interval,
// so the tests' rebalances are quick.
const quickConsumerHeartbeat = "--groups.defaults.consumer.heartbeat.interval.ms=200"
