package core

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestConsumerProperty drives consumer groups with random heartbeats,
// leaves, crashes, clock jumps, partition-count changes, failed appends and
// fail-overs, and checks after every step: no partition is held by two
// members; every member owns (as its client believes) only partitions the
// coordinator says it holds; member epochs never go backwards; and at
// checkpoints, replaying the log yields the live state. At the end the
// surviving clients heartbeat until the groups are stable, and every
// subscribed partition must then be assigned exactly once.
func TestConsumerProperty(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 8
	}
	for seed := uint64(1); seed <= uint64(seeds); seed++ {
		s := newConsumerSim(t, seed)
		for i := 0; i < 300; i++ {
			s.step()
			s.check(i%25 == 24)
		}
		s.converge()
	}
}

type consumerClient struct {
	group, id string
	instance  *string
	topics    []string
	regex     *string // nil: never sent one
	epoch     int32
	joined    bool
	crashed   bool
	owned     []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic
}

type consumerSim struct {
	t       *testing.T
	seed    uint64
	rng     *rand.Rand
	h       *cHarness
	clients []*consumerClient
	epochs  map[string]int32
	partsA  int32
	settle  bool // converging: no resubscriptions
	trace   strings.Builder
}

func newConsumerSim(t *testing.T, seed uint64) *consumerSim {
	cfg := consumerTestConfig()
	h := newCHarness(t, cfg)
	s := &consumerSim{t: t, seed: seed, rng: rand.New(rand.NewPCG(seed, 0xc0)), h: h, epochs: map[string]int32{}, partsA: 4}
	subs := [][]string{{"a"}, {"a", "b"}, {"b"}, {"a"}}
	for i := 0; i < 3+s.rng.IntN(4); i++ {
		cl := &consumerClient{group: []string{"g", "h"}[i%2], id: fmt.Sprintf("m%d", i), topics: subs[s.rng.IntN(len(subs))]}
		if s.rng.IntN(3) == 0 {
			inst := fmt.Sprintf("i%d", i)
			cl.instance = &inst
		}
		s.clients = append(s.clients, cl)
	}
	return s
}

func (s *consumerSim) fatalf(format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("seed %d: %s\ntrace:\n%s", s.seed, fmt.Sprintf(format, args...), tail(s.trace.String(), 4000))
}

// finish commits o, or (5%) fails the append and rolls back; it reports
// whether the output is durable.
func (s *consumerSim) finish(o Output) bool {
	if err := eventsExplain(o); err != nil {
		s.fatalf("%v", err)
	}
	if len(o.Records) > 0 && s.rng.IntN(100) < 5 {
		s.h.c.Rollback()
		s.trace.WriteString("  append failed: rolled back\n")
		return false
	}
	s.h.c.Commit()
	s.h.log = append(s.h.log, o.Records...)
	return true
}

func (s *consumerSim) step() {
	cl := s.clients[s.rng.IntN(len(s.clients))]
	switch r := s.rng.IntN(100); {
	case r < 60:
		s.heartbeat(cl)
	case r < 65:
		s.leave(cl)
	case r < 69:
		if !cl.crashed {
			fmt.Fprintf(&s.trace, "crash %s\n", cl.id)
		}
		cl.crashed, cl.joined, cl.owned = true, false, nil
	case r < 85:
		s.advance(int64(s.rng.IntN(20000)))
	case r < 89:
		s.partsA = []int32{4, 6, 8}[s.rng.IntN(3)]
		fmt.Fprintf(&s.trace, "topic a has %d partitions\n", s.partsA)
		s.h.topics = []TopicMetadata{{Name: "a", ID: topicID("a"), Partitions: s.partsA}, {Name: "b", ID: topicID("b"), Partitions: 2}}
		if s.rng.IntN(2) == 0 { // a topic only regexes match comes and goes
			s.h.topics = append(s.h.topics, TopicMetadata{Name: "bx", ID: topicID("bx"), Partitions: 2})
			s.trace.WriteString("topic bx exists\n")
		}
		s.finish(s.h.c.updateTopics(s.h.now, s.h.topics))
	case r < 92:
		s.failover()
	default:
		cl.crashed = false
		s.heartbeat(cl)
	}
}

func (s *consumerSim) heartbeat(cl *consumerClient) {
	if cl.crashed {
		return
	}
	var req *kmsg.ConsumerGroupHeartbeatRequest
	if !cl.joined {
		req = joinReq(cl.group, cl.id, cl.topics...)
		req.SubscribedTopicRegex = cl.regex
		cl.epoch = 0
	} else {
		req = ackReq(cl.group, cl.id, cl.epoch, cl.owned)
		if !s.settle && s.rng.IntN(10) == 0 { // resubscribe
			cl.topics = [][]string{{"a"}, {"a", "b"}, {"b"}}[s.rng.IntN(3)]
			req.SubscribedTopicNames = cl.topics
			if s.rng.IntN(3) == 0 { // or a regex ("" clears it)
				cl.regex = &[]string{"b.*", "a|b", ""}[s.rng.IntN(3)]
				req.SubscribedTopicRegex = cl.regex
			}
		}
	}
	req.InstanceID = cl.instance
	s.h.next++
	o := s.h.c.consumerGroupHeartbeat(s.h.now, s.h.next, ClientInfo{ClientID: cl.id}, req)
	if !s.finish(o) {
		return
	}
	resp := o.Responses[0].Msg.(*kmsg.ConsumerGroupHeartbeatResponse)
	fmt.Fprintf(&s.trace, "hb %s/%s epoch %d -> err %d epoch %d assignment %s\n", cl.group, cl.id, req.MemberEpoch,
		resp.ErrorCode, resp.MemberEpoch, fmtAssignment(resp.Assignment))
	switch resp.ErrorCode {
	case 0:
		cl.joined, cl.epoch = true, resp.MemberEpoch
		if resp.Assignment != nil {
			cl.owned = resp.Assignment.Topics
		}
	case 110, 25: // fenced or unknown: drop everything and rejoin
		cl.joined, cl.owned = false, nil
	case 111: // unreleased instance id: retry later
	default:
		s.fatalf("unexpected error %d for %s: %s", resp.ErrorCode, cl.id, deref0(resp.ErrorMessage))
	}
}

func (s *consumerSim) leave(cl *consumerClient) {
	if cl.crashed || !cl.joined {
		return
	}
	epoch := int32(-1)
	if cl.instance != nil && s.rng.IntN(2) == 0 {
		epoch = -2
	}
	req := ackReq(cl.group, cl.id, epoch, nil)
	req.InstanceID = cl.instance
	s.h.next++
	o := s.h.c.consumerGroupHeartbeat(s.h.now, s.h.next, ClientInfo{ClientID: cl.id}, req)
	if !s.finish(o) {
		return
	}
	fmt.Fprintf(&s.trace, "leave %s epoch %d -> %d\n", cl.id, epoch, o.Responses[0].Msg.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode)
	cl.joined, cl.owned = false, nil
	if epoch == -2 { // a static member comes back under a new member id
		cl.id += "'"
	}
}

func (s *consumerSim) advance(ms int64) {
	target := s.h.now + ms
	for {
		d, ok := s.h.c.NextDeadline()
		if !ok || d > target {
			break
		}
		if d > s.h.now {
			s.h.now = d
		}
		o := s.h.c.tick(s.h.now)
		fmt.Fprintf(&s.trace, "tick @%d: %d records\n", s.h.now, len(o.Records))
		s.finish(o)
	}
	s.h.now = target
}

func (s *consumerSim) failover() {
	fresh, err := replayLog(s.h.cfg, s.h.log)
	if err != nil {
		s.fatalf("fail-over replay: %v", err)
	}
	s.trace.WriteString("fail-over\n")
	s.h.c = fresh
	s.h.c.updateTopics(s.h.now, s.h.topics)
	s.h.c.Commit()
	s.finish(s.h.c.Loaded(s.h.now))
}

func (s *consumerSim) check(replay bool) {
	for _, gid := range []string{"g", "h"} {
		g, ok := s.h.c.groups[gid].(*consumerGroup)
		if !ok {
			continue
		}
		checkOwners(s.t, g)
		for _, id := range g.sortedMemberIDs() {
			m := g.members[id]
			if last, ok := s.epochs[gid+"/"+id]; ok && m.epoch < last && m.epoch != staticLeaveEpoch && m.epoch != 0 {
				s.fatalf("member %s epoch went back %d -> %d", id, last, m.epoch)
			}
			s.epochs[gid+"/"+id] = m.epoch
		}
		for _, cl := range s.clients {
			m := g.members[cl.id]
			if cl.group != gid || m == nil || !cl.joined || m.epoch != cl.epoch {
				continue
			}
			held := m.assigned.set()
			for tp := range m.pending {
				held[tp] = struct{}{}
			}
			for tp := range s.h.c.ownedFromConsumerRequest(ackReq(gid, cl.id, 0, cl.owned)) {
				if _, ok := held[tp]; !ok {
					s.fatalf("client %s owns %x-%d which the coordinator does not give it", cl.id, tp.topic[:4], tp.partition)
				}
			}
		}
	}
	if replay {
		fresh, err := replayLog(s.h.cfg, s.h.log)
		if err != nil {
			s.fatalf("replay: %v", err)
		}
		if got, want := fresh.Dump(), s.h.c.Dump(); got != want {
			s.fatalf("replayed state differs\nlive:\n%s\nreplayed:\n%s", want, got)
		}
	}
}

// converge revives every client and heartbeats until no assignment
// changes, then checks that each group's subscribed partitions are all
// assigned, once.
func (s *consumerSim) converge() {
	s.settle = true
	for _, cl := range s.clients {
		cl.crashed = false
	}
	// Long enough for the sessions of members whose clients are gone
	// (a static client retrying under its held instance id) to expire.
	for round := 0; round < 40; round++ {
		for _, cl := range s.clients {
			s.heartbeat(cl)
			s.check(false)
		}
		s.advance(3000)
	}
	for _, gid := range []string{"g", "h"} {
		g, ok := s.h.c.groups[gid].(*consumerGroup)
		if !ok || len(g.members) == 0 {
			continue
		}
		if g.state != ConsumerStable {
			s.fatalf("group %s is %s after convergence:\n%s", gid, g.state, s.h.c.Dump())
		}
		want := 0
		for _, name := range g.subscribedTopics() {
			for _, t := range s.h.topics {
				if t.Name == name {
					want += int(t.Partitions)
				}
			}
		}
		var got []string
		for _, id := range g.sortedMemberIDs() {
			for _, tp := range g.members[id].held() {
				got = append(got, fmt.Sprintf("%x-%d", tp.topic[:4], tp.partition))
			}
		}
		sort.Strings(got)
		if len(got) != want {
			s.fatalf("group %s holds %d partitions, subscriptions cover %d: %v", gid, len(got), want, got)
		}
	}
}
