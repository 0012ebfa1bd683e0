package core

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rrAssignor is a deterministic test assignor: every partition of every
// topic, in (topic index, partition) order, goes round-robin to the
// members subscribed to its topic. It is not sticky, so a member joining
// moves partitions and exercises revocation.
type rrAssignor struct{ calls *int }

func (a rrAssignor) AssignPartitions(in PartitionAssignInput) ([][]AssignedTopic, error) {
	if a.calls != nil {
		*a.calls++
	}
	out := make([][]AssignedTopic, len(in.Members))
	for ti, t := range in.Topics {
		var subs []int
		for mi, m := range in.Members {
			for _, s := range m.Subscribed {
				if s == int32(ti) {
					subs = append(subs, mi)
				}
			}
		}
		if len(subs) == 0 {
			continue
		}
		per := map[int][]int32{}
		for p := int32(0); p < t.Partitions; p++ {
			mi := subs[int(p)%len(subs)]
			per[mi] = append(per[mi], p)
		}
		for mi, ps := range per {
			out[mi] = append(out[mi], AssignedTopic{Topic: int32(ti), Partitions: ps})
		}
	}
	return out, nil
}

// failingAssignor always fails.
type failingAssignor struct{}

func (failingAssignor) AssignPartitions(PartitionAssignInput) ([][]AssignedTopic, error) {
	return nil, fmt.Errorf("boom")
}

func consumerTestConfig() Config {
	cfg := DefaultConfig()
	cfg.Consumer = ConsumerConfig{SessionTimeoutMs: 45000, HeartbeatIntervalMs: 5000, AssignmentIntervalMs: -1,
		Assignors: []NamedPartitionAssignor{{Name: "uniform", Assignor: rrAssignor{}}, {Name: "range", Assignor: rrAssignor{}}}}
	return cfg
}

func topicID(name string) [16]byte {
	var id [16]byte
	copy(id[:], "id-"+name)
	return id
}

// cHarness drives a Coordinator with consumer-group requests, committing
// every Output, keeping the log and checking each Output's events.
type cHarness struct {
	t      testing.TB
	c      *Coordinator
	cfg    Config
	now    int64
	log    []records.Record
	topics []TopicMetadata
	next   RequestID
}

func newCHarness(t testing.TB, cfg Config) *cHarness {
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &cHarness{t: t, c: c, cfg: cfg}
	h.setTopics(TopicMetadata{Name: "a", ID: topicID("a"), Partitions: 4}, TopicMetadata{Name: "b", ID: topicID("b"), Partitions: 2})
	return h
}

func (h *cHarness) setTopics(ts ...TopicMetadata) {
	h.topics = ts
	h.commit(h.c.updateTopics(h.now, ts))
}

func (h *cHarness) commit(o Output) Output {
	h.t.Helper()
	if err := eventsExplain(o); err != nil {
		h.t.Fatal(err)
	}
	h.c.Commit()
	h.log = append(h.log, o.Records...)
	return o
}

// hb sends a heartbeat and returns the response.
func (h *cHarness) hb(req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	h.t.Helper()
	h.next++
	o := h.commit(h.c.consumerGroupHeartbeat(h.now, h.next, ClientInfo{ClientID: "cli", ClientHost: "/127.0.0.1"}, req))
	if len(o.Responses) != 1 {
		h.t.Fatalf("%d responses", len(o.Responses))
	}
	return o.Responses[0].Msg.(*kmsg.ConsumerGroupHeartbeatResponse)
}

func (h *cHarness) tick(ms int64) Output {
	h.now += ms
	return h.commit(h.c.tick(h.now))
}

func (h *cHarness) group(id string) *consumerGroup {
	g, _ := h.c.groups[id].(*consumerGroup)
	return g
}

// checkReplay rebuilds a Coordinator from the log and compares dumps.
func (h *cHarness) checkReplay() {
	h.t.Helper()
	fresh, err := replayLog(h.cfg, h.log)
	if err != nil {
		h.t.Fatal(err)
	}
	if got, want := fresh.Dump(), h.c.Dump(); got != want {
		h.t.Fatalf("replayed state differs\nlive:\n%s\nreplayed:\n%s", want, got)
	}
}

func joinReq(group, member string, topics ...string) *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version = 1
	r.Group, r.MemberID, r.MemberEpoch = group, member, 0
	r.RebalanceTimeoutMillis = 30000
	r.SubscribedTopicNames = append([]string{}, topics...)
	r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	return r
}

// ackReq is a steady heartbeat reporting owned partitions.
func ackReq(group, member string, epoch int32, owned []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic) *kmsg.ConsumerGroupHeartbeatRequest {
	r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	r.Version = 1
	r.Group, r.MemberID, r.MemberEpoch = group, member, epoch
	r.RebalanceTimeoutMillis = -1
	r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, t := range owned {
		r.Topics = append(r.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t.TopicID, Partitions: t.Partitions})
	}
	return r
}

// fmtAssignment prints a response assignment as "a:0,2 b:1" (topic ids of
// the harness are "id-<name>").
func fmtAssignment(a *kmsg.ConsumerGroupHeartbeatResponseAssignment) string {
	if a == nil {
		return "<none>"
	}
	var parts []string
	for _, t := range a.Topics {
		name := strings.TrimRight(strings.TrimPrefix(string(t.TopicID[:]), "id-"), "\x00")
		ps := append([]int32{}, t.Partitions...)
		sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
		parts = append(parts, fmt.Sprintf("%s:%v", name, ps))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// checkOwners verifies that no partition is held (assigned or pending
// revocation) by two members, and that the owner index matches members.
func checkOwners(t testing.TB, g *consumerGroup) {
	t.Helper()
	seen := map[topicPart]string{}
	for _, id := range g.sortedMemberIDs() {
		for _, tp := range g.members[id].held() {
			if other, dup := seen[tp]; dup {
				t.Fatalf("partition %x-%d held by %s and %s", tp.topic[:4], tp.partition, other, id)
			}
			seen[tp] = id
			if g.owner[tp] != id {
				t.Fatalf("owner index says %q for %x-%d held by %s", g.owner[tp], tp.topic[:4], tp.partition, id)
			}
		}
	}
	if len(seen) != len(g.owner) {
		t.Fatalf("owner index has %d entries, members hold %d", len(g.owner), len(seen))
	}
}
