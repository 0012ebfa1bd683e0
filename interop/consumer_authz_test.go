package interop

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestInteropConsumerRegexAuthorization: a member whose principal may
// DESCRIBE only some of the topics its regex matches is assigned only
// those, on a SASL/ACL Kafka 4.4 broker directly and through coordhost in
// front of it (Kafka filters regex matches with the heartbeat's
// authorization context; coordhost with the topics the cluster lists for
// the client's session).
func TestInteropConsumerRegexAuthorization(t *testing.T) {
	needInterop(t)
	start := time.Now()
	dir := logDir(t)
	plain, secure := startSecureBroker(t, dir)
	admin, err := kgo.NewClient(kgo.SeedBrokers(plain))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	createTopics(t, admin, 2, "ra-1", "ra-2", "ra-3")
	createACLs(t, admin, []acl{
		{"User:exact", rGroup, "gr-", prefixed, kmsg.ACLOperationRead, allow},
		{"User:exact", rTopic, "ra-1", literal, kmsg.ACLOperationDescribe, allow},
		{"User:exact", rTopic, "ra-3", literal, kmsg.ACLOperationRead, allow}, // READ implies DESCRIBE
	})
	ch := startCoordhost(t, dir, secure, "--dataplane.sasl.mechanism=SCRAM-SHA-256",
		"--dataplane.sasl.username=admin", "--dataplane.sasl.password="+adminPassword, "--dataplane.authorization.cache.ttl=1s")
	// FindCoordinator creates the broker's offsets topic (a raw heartbeat
	// does not).
	if err := groupsServed(plain, "gr-kafka", cgSettle); err != nil {
		t.Fatal(err)
	}
	names := topicNames(t, admin)
	got := map[string][]string{}
	for _, side := range []struct{ name, addr string }{{"kafka", secure}, {"coordhost", ch.addr}} {
		c := dialKafka(t, side.addr)
		if err := c.login("exact", "SCRAM-SHA-256"); err != nil {
			t.Fatalf("%s: %v", side.name, err)
		}
		got[side.name] = regexMemberAssignment(t, c, "gr-"+side.name, "ra-.*", names)
		t.Logf("%s: the regex member holds %v", side.name, got[side.name])
	}
	want := []string{"ra-1-0", "ra-1-1", "ra-3-0", "ra-3-1"}
	if !slices.Equal(got["kafka"], want) || !slices.Equal(got["coordhost"], got["kafka"]) {
		t.Fatalf("kafka %v, coordhost %v; want both %v (ra-2 is not DESCRIBE-able)", got["kafka"], got["coordhost"], want)
	}
	t.Logf("regex authorization interop took %v", time.Since(start).Round(time.Second))
}

// regexMemberAssignment joins group with regex over c and heartbeats
// (acknowledging what it is given) until its assignment has held still
// for 3 s, returning it as sorted topic-partition names.
func regexMemberAssignment(t *testing.T, c *rawConn, group, regex string, names map[[16]byte]string) []string {
	t.Helper()
	join := consumerJoin(group, group+"-member")
	join.SubscribedTopicNames, join.SubscribedTopicRegex = nil, kmsg.StringPtr(regex)
	req := join
	var owned []kmsg.ConsumerGroupHeartbeatRequestTopic
	var held []string
	var epoch int32
	var last string
	changed := time.Now()
	deadline := time.Now().Add(cgSettle)
	for time.Since(changed) < 3*time.Second || len(held) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%s: assignment %v did not settle within %v (last heartbeat: %s)", group, held, cgSettle, last)
		}
		r, err := c.do(req)
		if err != nil {
			t.Fatalf("%s: heartbeat: %v", group, err)
		}
		resp := r.(*kmsg.ConsumerGroupHeartbeatResponse)
		last = fmt.Sprintf("%s epoch %d", errName(resp.ErrorCode), resp.MemberEpoch)
		switch kerr.ErrorForCode(resp.ErrorCode) {
		case nil:
		case kerr.NotCoordinator, kerr.CoordinatorLoadInProgress, kerr.CoordinatorNotAvailable:
			time.Sleep(200 * time.Millisecond) // the offsets topic is still being created: retry, as clients do
			continue
		default:
			t.Fatalf("%s: heartbeat: %s", group, errName(resp.ErrorCode))
		}
		epoch = resp.MemberEpoch
		if a := resp.Assignment; a != nil {
			owned, held = nil, nil
			for _, tp := range a.Topics {
				owned = append(owned, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: tp.TopicID, Partitions: tp.Partitions})
				for _, p := range tp.Partitions {
					held = append(held, fmt.Sprintf("%s-%d", names[tp.TopicID], p))
				}
			}
			sort.Strings(held)
			changed = time.Now()
		}
		req = kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.SetVersion(1)
		req.Group, req.MemberID, req.MemberEpoch, req.RebalanceTimeoutMillis = group, join.MemberID, epoch, -1
		req.Topics = append([]kmsg.ConsumerGroupHeartbeatRequestTopic{}, owned...)
		time.Sleep(250 * time.Millisecond)
	}
	return held
}

// topicNames maps every topic id of the cluster to its name.
func topicNames(t *testing.T, admin *kgo.Client) map[[16]byte]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	out := map[[16]byte]string{}
	for _, tp := range resp.Topics {
		if tp.Topic != nil {
			out[tp.TopicID] = *tp.Topic
		}
	}
	return out
}
