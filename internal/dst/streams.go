package dst

import (
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
)

// task is one streams task.
type task struct {
	sub  string
	part int32
}

func (t task) String() string { return fmt.Sprintf("%s_%d", t.sub, t.part) }

type taskSet map[task]bool

func (ts taskSet) sorted() []task {
	out := make([]task, 0, len(ts))
	for t := range ts {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].sub != out[j].sub {
			return out[i].sub < out[j].sub
		}
		return out[i].part < out[j].part
	})
	return out
}

func (ts taskSet) String() string {
	var b strings.Builder
	for i, t := range ts.sorted() {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(t.String())
	}
	return "[" + b.String() + "]"
}

func kmsgTasks(ts taskSet) []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for _, t := range ts.sorted() {
		if n := len(out); n > 0 && out[n-1].SubtopologyID == t.sub {
			out[n-1].Partitions = append(out[n-1].Partitions, t.part)
			continue
		}
		out = append(out, kmsg.TaskIDs{SubtopologyID: t.sub, Partitions: []int32{t.part}})
	}
	return out
}

func fromKmsg(ids []kmsg.TaskIDs) taskSet {
	out := taskSet{}
	for _, id := range ids {
		for _, p := range id.Partitions {
			out[task{id.SubtopologyID, p}] = true
		}
	}
	return out
}

var topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: 0, Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
	{SubtopologyID: "0", SourceTopics: []string{"in"}, StateChangelogTopics: []kmsg.TopicInfo{{Topic: "store-changelog"}}},
	{SubtopologyID: "1", SourceTopics: []string{"in2"}},
}}

// streamsClient is a simulated Kafka Streams member. It misbehaves: it
// may revoke tasks several heartbeats late, send "unchanged" (null)
// reports, resend an old request, retry a failed request as it was, and
// vanish without leaving.
type streamsClient struct {
	name, group string
	topology    *kmsg.StreamsGroupHeartbeatRequestTopology // nil: the streams groups' topology
	incarnation int
	memberID    string
	joined      bool
	epoch       int32
	owned       taskSet
	lateDrop    map[task]int
	lateBy      int
	lastReq     *kmsg.StreamsGroupHeartbeatRequest
	waiting     bool // a request is in flight
	retry       bool // the last request failed: send it again as it was
	gone        bool // vanished without leaving
	// staleSeen: the coordinator accepted a stale resend of this member's
	// heartbeat, so it may believe the member owns less than it does.
	staleSeen bool
}

func (cl *streamsClient) reset() {
	cl.joined, cl.epoch, cl.staleSeen, cl.owned, cl.lateDrop = false, 0, false, taskSet{}, nil
}

// act returns the client's next request, or nil.
func (s *sim) streamsAct(cl *streamsClient) *call {
	if cl.waiting {
		return nil
	}
	if cl.gone {
		if s.rng.IntN(4) > 0 {
			return nil
		}
		cl.gone, cl.retry, cl.lastReq = false, false, nil
		cl.reset()
		cl.memberID = ""
	}
	if cl.memberID == "" {
		cl.incarnation++
		cl.memberID = fmt.Sprintf("%s-%d", cl.name, cl.incarnation)
	}
	if cl.retry && cl.lastReq != nil {
		cl.retry = false
		return s.streamsCall(cl, cl.lastReq, "retry", true)
	}
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID = cl.group, cl.memberID
	if !cl.joined {
		req.MemberEpoch = 0
		req.RebalanceTimeoutMillis = 30000
		pid := cl.name
		req.ProcessID = &pid
		req.Topology = topology
		if cl.topology != nil {
			req.Topology = cl.topology
		}
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	} else {
		req.MemberEpoch = cl.epoch
		if s.rng.IntN(8) > 0 { // else null: "unchanged"
			req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = kmsgTasks(cl.owned), []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		}
		countDown(cl.owned, cl.lateDrop)
	}
	cl.lastReq = req
	return s.streamsCall(cl, req, "heartbeat", true)
}

// streamsLeave is a leave heartbeat (epoch -1).
func (s *sim) streamsLeave(cl *streamsClient) *call {
	if !cl.joined || cl.waiting || cl.gone {
		return nil
	}
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = cl.group, cl.memberID, -1
	cl.lastReq = req
	c := s.streamsCall(cl, req, "leave", false)
	// A leaving Streams client has closed its tasks; it comes back later
	// as a new member.
	cl.reset()
	cl.gone = true
	return c
}

// streamsStale resends the client's last request: a duplicated, delayed
// packet with an old epoch and owned set. The client does not wait for it.
func (s *sim) streamsStale(cl *streamsClient) *call {
	if cl.lastReq == nil || cl.lastReq.MemberEpoch <= 0 {
		return nil
	}
	req := *cl.lastReq
	return s.streamsCall(cl, &req, "stale resend", false)
}

func (s *sim) streamsCall(cl *streamsClient, req *kmsg.StreamsGroupHeartbeatRequest, what string, wait bool) *call {
	member := req.MemberID
	var reported taskSet
	if req.ActiveTasks != nil {
		reported = fromKmsg(req.ActiveTasks)
	}
	rep := "null"
	if reported != nil {
		rep = reported.String()
	}
	incarnation := cl.incarnation
	mine := func() bool { return wait && cl.memberID == member && cl.incarnation == incarnation && !cl.gone }
	if wait {
		cl.waiting = true
	}
	return &call{
		group: cl.group,
		what:  fmt.Sprintf("%s %s epoch=%d owned=%s", what, member, req.MemberEpoch, rep),
		run: func(c *core.Coordinator, now int64, id core.RequestID) core.Output {
			return c.StreamsGroupHeartbeat(now, id, core.ClientInfo{ClientID: cl.name, ClientHost: "/127.0.0.1"}, req)
		},
		check: func(msg kmsg.Response) {
			resp := msg.(*kmsg.StreamsGroupHeartbeatResponse)
			s.inv.streamsResponse(s, cl.group, member, reported, resp)
			if !wait && resp.ErrorCode == 0 && resp.MemberEpoch >= 0 && member == cl.memberID {
				cl.staleSeen = true
			}
			if resp.ErrorCode == 0 && resp.MemberEpoch >= 0 && resp.ActiveTasks != nil {
				s.checkTaskGrant(cl.group, member, cl.name, cl.owned, fromKmsg(resp.ActiveTasks), resp.MemberEpoch)
			}
		},
		done: func(msg kmsg.Response) {
			if mine() {
				cl.waiting = false
				cl.apply(msg.(*kmsg.StreamsGroupHeartbeatResponse))
			}
		},
		failed: func() {
			if mine() {
				cl.waiting, cl.retry = false, true
			}
		},
	}
}

// apply updates the client from a heartbeat response.
func (cl *streamsClient) apply(resp *kmsg.StreamsGroupHeartbeatResponse) {
	switch resp.ErrorCode {
	case 0:
	case 110, 25: // FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID: drop everything, rejoin
		cl.reset()
		return
	default:
		return
	}
	if resp.MemberEpoch < 0 {
		return
	}
	cl.joined, cl.epoch = true, resp.MemberEpoch
	if resp.ActiveTasks == nil {
		return
	}
	next := fromKmsg(resp.ActiveTasks)
	if cl.owned == nil {
		cl.owned = taskSet{}
	}
	if cl.lateDrop == nil {
		cl.lateDrop = map[task]int{}
	}
	adopt(cl.owned, cl.lateDrop, next, cl.lateBy)
}

// adopt installs a new assignment next over owned: what next no longer
// holds is dropped at once, or by a late revoker lateBy heartbeats later
// (lateDrop counts them down).
func adopt[K comparable](owned map[K]bool, lateDrop map[K]int, next map[K]bool, lateBy int) {
	for k := range owned {
		if !next[k] {
			if lateBy == 0 {
				delete(owned, k)
			} else if _, ok := lateDrop[k]; !ok {
				lateDrop[k] = lateBy
			}
		}
	}
	for k := range next {
		owned[k] = true
		delete(lateDrop, k)
	}
}

// countDown is one heartbeat of a late revoker: what it has revoked late
// enough is dropped.
func countDown[K comparable](owned map[K]bool, lateDrop map[K]int) {
	for k := range lateDrop {
		if lateDrop[k]--; lateDrop[k] <= 0 {
			delete(lateDrop, k)
			delete(owned, k)
		}
	}
}
