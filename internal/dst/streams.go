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

// streamsClient is a simulated Kafka Streams member. It misbehaves as
// hbMember says and may send "unchanged" (null) reports.
type streamsClient struct {
	hbMember[task, kmsg.StreamsGroupHeartbeatRequest]
	topology *kmsg.StreamsGroupHeartbeatRequestTopology // nil: the streams groups' topology
}

// act returns the client's next request, or nil.
func (s *sim) streamsAct(cl *streamsClient) *call {
	if !cl.wake(s) {
		return nil
	}
	if req := cl.takeRetry(); req != nil {
		return s.streamsCall(cl, req, "retry", true)
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
	cl.leaving()
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
	run := stepRequest(core.ClientInfo{ClientID: cl.name, ClientHost: "/127.0.0.1"}, req)
	check := func(msg kmsg.Response) {
		resp := msg.(*kmsg.StreamsGroupHeartbeatResponse)
		s.inv.streamsResponse(s, cl.group, member, reported, resp)
		cl.accepted(wait, member, resp.ErrorCode, resp.MemberEpoch)
		if resp.ErrorCode == 0 && resp.MemberEpoch >= 0 && resp.ActiveTasks != nil {
			s.checkTaskGrant(cl.group, member, cl.name, cl.owned, fromKmsg(resp.ActiveTasks), resp.MemberEpoch)
		}
	}
	apply := func(msg kmsg.Response) {
		resp := msg.(*kmsg.StreamsGroupHeartbeatResponse)
		var next taskSet
		if resp.ActiveTasks != nil {
			next = fromKmsg(resp.ActiveTasks)
		}
		cl.adoptResponse(resp.ErrorCode, resp.MemberEpoch, next)
	}
	return cl.wrap(fmt.Sprintf("%s %s epoch=%d owned=%s", what, member, req.MemberEpoch, rep), member, wait, run, check, apply)
}
