package dst

import (
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
)

// part is one partition of a consumer group's topic.
type part struct {
	topic [16]byte
	p     int32
}

type partSet map[part]bool

func (ps partSet) sorted() []part {
	out := make([]part, 0, len(ps))
	for p := range ps {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if c := strings.Compare(string(out[i].topic[:]), string(out[j].topic[:])); c != 0 {
			return c < 0
		}
		return out[i].p < out[j].p
	})
	return out
}

func (ps partSet) String() string {
	var b strings.Builder
	for i, p := range ps.sorted() {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s-%d", topicName(p.topic), p.p)
	}
	return "[" + b.String() + "]"
}

// topicID is the simulated topic id of a topic name.
func topicID(name string) [16]byte {
	var id [16]byte
	copy(id[:], "id-"+name)
	return id
}

func topicName(id [16]byte) string {
	return strings.TrimRight(strings.TrimPrefix(string(id[:]), "id-"), "\x00")
}

// consumerTopics are the topics the consumer-group clients subscribe to.
var consumerTopics = []string{"t", "in2"}

// roundRobin is the consumer groups' server assignor in the simulation:
// every partition of every subscribed topic round-robin over the members
// subscribed to it. Not sticky, so a member joining or leaving moves
// partitions and every move is a revocation first.
type roundRobin struct{}

func (roundRobin) AssignPartitions(in core.PartitionAssignInput) ([][]core.AssignedTopic, error) {
	out := make([][]core.AssignedTopic, len(in.Members))
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
			per[subs[int(p)%len(subs)]] = append(per[subs[int(p)%len(subs)]], p)
		}
		for _, mi := range subs {
			if len(per[mi]) > 0 {
				out[mi] = append(out[mi], core.AssignedTopic{Topic: int32(ti), Partitions: per[mi]})
			}
		}
	}
	return out, nil
}

// consumerClient is a simulated KIP-848 consumer (ConsumerGroupHeartbeat).
// It misbehaves as hbMember says and may send "unchanged" (null) reports.
type consumerClient struct {
	hbMember[part, kmsg.ConsumerGroupHeartbeatRequest]
}

func ownedTopics(ps partSet) []kmsg.ConsumerGroupHeartbeatRequestTopic {
	out := []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, p := range ps.sorted() {
		if n := len(out); n > 0 && out[n-1].TopicID == p.topic {
			out[n-1].Partitions = append(out[n-1].Partitions, p.p)
			continue
		}
		out = append(out, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: p.topic, Partitions: []int32{p.p}})
	}
	return out
}

func fromAssignment(a *kmsg.ConsumerGroupHeartbeatResponseAssignment) partSet {
	out := partSet{}
	for _, t := range a.Topics {
		for _, p := range t.Partitions {
			out[part{t.TopicID, p}] = true
		}
	}
	return out
}

func (s *sim) consumerAct(cl *consumerClient) *call {
	if !cl.wake(s) {
		return nil
	}
	if req := cl.takeRetry(); req != nil {
		return s.consumerCall(cl, req, "retry", true)
	}
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID = cl.group, cl.memberID
	if !cl.joined {
		req.MemberEpoch, req.RebalanceTimeoutMillis = 0, 30000
		req.SubscribedTopicNames = consumerTopics
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	} else {
		req.MemberEpoch, req.RebalanceTimeoutMillis = cl.epoch, -1
		if s.rng.IntN(8) > 0 { // else null: "unchanged"
			req.Topics = ownedTopics(cl.owned)
		}
		countDown(cl.owned, cl.lateDrop)
	}
	cl.lastReq = req
	return s.consumerCall(cl, req, "heartbeat", true)
}

// consumerLeave is a leave heartbeat (epoch -1); the client comes back
// later as a new member.
func (s *sim) consumerLeave(cl *consumerClient) *call {
	if !cl.joined || cl.waiting || cl.gone {
		return nil
	}
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = cl.group, cl.memberID, -1
	cl.lastReq = req
	c := s.consumerCall(cl, req, "leave", false)
	cl.leaving()
	return c
}

// consumerStale resends the client's last request, not waiting for it.
func (s *sim) consumerStale(cl *consumerClient) *call {
	if cl.lastReq == nil || cl.lastReq.MemberEpoch <= 0 {
		return nil
	}
	req := *cl.lastReq
	return s.consumerCall(cl, &req, "stale resend", false)
}

func (s *sim) consumerCall(cl *consumerClient, req *kmsg.ConsumerGroupHeartbeatRequest, what string, wait bool) *call {
	member := req.MemberID
	rep := "null"
	if req.Topics != nil {
		ps := partSet{}
		for _, t := range req.Topics {
			for _, p := range t.Partitions {
				ps[part{t.TopicID, p}] = true
			}
		}
		rep = ps.String()
	}
	run := stepRequest(core.ClientInfo{ClientID: cl.name, ClientHost: "/127.0.0.1"}, req)
	check := func(msg kmsg.Response) {
		resp := msg.(*kmsg.ConsumerGroupHeartbeatResponse)
		cl.accepted(wait, member, resp.ErrorCode, resp.MemberEpoch)
		if resp.ErrorCode == 0 && resp.Assignment != nil {
			s.stats.Grants++
			s.checkPartitionGrant(cl, fromAssignment(resp.Assignment), resp.MemberEpoch)
		}
	}
	apply := func(msg kmsg.Response) {
		resp := msg.(*kmsg.ConsumerGroupHeartbeatResponse)
		var next partSet
		if resp.Assignment != nil {
			next = fromAssignment(resp.Assignment)
		}
		cl.adoptResponse(resp.ErrorCode, resp.MemberEpoch, next)
	}
	return cl.wrap(fmt.Sprintf("consumer %s %s epoch=%d owned=%s", what, member, req.MemberEpoch, rep), member, wait, run, check, apply)
}

// checkPartitionGrant checks a released consumer-group assignment: a
// partition it gives cl that cl does not own yet must not be owned by
// another consumer that the group still holds as a member (a late
// revoker counts as owning what it has not revoked yet). A member whose
// stale resend the coordinator accepted is left out: Kafka accepts a
// heartbeat at the member's previous epoch reporting a subset of its
// tasks (a client whose response was lost), so the coordinator may
// rightly believe such a member owns less than it does; the claims
// invariant covers it.
func (s *sim) checkPartitionGrant(cl *consumerClient, granted partSet, epoch int32) {
	members := s.liveMembers(cl.group)
	for _, p := range granted.sorted() {
		if cl.owned[p] {
			continue
		}
		for _, o := range s.consumers {
			if o == cl || o.group != cl.group || !o.owned[p] || !members[o.memberID] || o.staleSeen {
				continue
			}
			s.fail(fmt.Errorf("group %s: the coordinator assigned partition %s-%d to %s (epoch %d) while member %s still owns it",
				cl.group, topicName(p.topic), p.p, cl.memberID, epoch, o.memberID))
			return
		}
	}
}

// liveMembers returns the member ids group has in its partition's
// coordinator now.
func (s *sim) liveMembers(group string) map[string]bool {
	out := map[string]bool{}
	if st, ok := parseDump(s.shards[partitionOf(group)].c.Dump())[group]; ok {
		for m := range st.members {
			out[m] = true
		}
	}
	return out
}
