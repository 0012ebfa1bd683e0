package dst

import (
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
)

// classicClient is a simulated classic consumer (JoinGroup, SyncGroup,
// Heartbeat, OffsetCommit, LeaveGroup; eager protocol). It retries failed
// requests as they were and may vanish without leaving.
type classicClient struct {
	classicMember
	session int32
	owned   []int32
}

// classicMember is what the classic clients share: a member of a
// classic group that waits for one answer at a time.
type classicMember struct {
	name, group string
	memberID    string
	gen         int32
	phase       classicPhase
	members     []kmsg.JoinGroupResponseMember // set when it leads the generation
	waiting     bool
	gone        bool
	// incarnation changes when the client vanishes or leaves: answers to
	// an earlier incarnation's requests are not for it.
	incarnation int
}

// heartbeat is the member's Heartbeat request (v4).
func (m *classicMember) heartbeat() func(*core.Coordinator, int64, core.RequestID) core.Output {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Version = 4
	req.Group, req.MemberID, req.Generation = m.group, m.memberID, m.gen
	return stepRequest(core.ClientInfo{}, req)
}

// leave is the member's LeaveGroup request (v4, one member).
func (m *classicMember) leave() func(*core.Coordinator, int64, core.RequestID) core.Output {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = 4
	req.Group = m.group
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: m.memberID}}
	return stepRequest(core.ClientInfo{}, req)
}

// wrap makes a request of the member a call: the member waits for its
// answer (done) as long as it is the same incarnation; a failed request
// is retried as it was by acting again in the same phase.
func (m *classicMember) wrap(what string, run func(*core.Coordinator, int64, core.RequestID) core.Output,
	done, check func(kmsg.Response)) *call {
	m.waiting = true
	inc := m.incarnation
	mine := func() bool { return m.incarnation == inc }
	return guardedCall(m.group, what, run, check, mine,
		func(msg kmsg.Response) {
			m.waiting = false
			done(msg)
		},
		func() { m.waiting = false })
}

type classicPhase int

const (
	needJoin classicPhase = iota
	needSync
	stable
)

// The error codes the classic client reacts to.
const (
	errIllegalGeneration    = 22
	errUnknownMember        = 25
	errRebalanceInProgress  = 27
	errInconsistentProtocol = 23
	errMemberIDRequired     = 79
)

func (s *sim) classicAct(cl *classicClient) *call {
	if cl.waiting {
		return nil
	}
	if cl.gone {
		if s.rng.IntN(4) > 0 {
			return nil
		}
		cl.gone, cl.memberID, cl.phase, cl.owned = false, "", needJoin, nil
	}
	switch cl.phase {
	case needJoin:
		return s.classicJoin(cl)
	case needSync:
		return s.classicSync(cl)
	}
	if s.rng.IntN(4) == 0 {
		return s.classicCommit(cl)
	}
	return s.classicCall(cl, "heartbeat", cl.heartbeat(), func(msg kmsg.Response) {
		cl.onError(msg.(*kmsg.HeartbeatResponse).ErrorCode)
	}, nil)
}

// onError sends the client back to JoinGroup on a rebalance or fencing.
func (cl *classicClient) onError(code int16) {
	switch code {
	case errUnknownMember:
		cl.memberID = ""
		fallthrough
	case errRebalanceInProgress, errIllegalGeneration:
		cl.phase, cl.owned = needJoin, nil // eager: revoke everything
	}
}

func (s *sim) classicJoin(cl *classicClient) *call {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 9
	req.Group, req.MemberID, req.ProtocolType = cl.group, cl.memberID, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = cl.session, 30000
	meta := kmsg.ConsumerMemberMetadata{Version: 0, Topics: []string{"t"}}
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: meta.AppendTo(nil)}}
	cl.owned = nil // eager: revoke before joining
	return s.classicCall(cl, "join", stepRequest(core.ClientInfo{ClientID: cl.name, ClientHost: "/127.0.0.1"}, req), func(msg kmsg.Response) {
		resp := msg.(*kmsg.JoinGroupResponse)
		switch resp.ErrorCode {
		case 0:
			cl.memberID, cl.gen, cl.phase = resp.MemberID, resp.Generation, needSync
			cl.members = nil
			if resp.LeaderID == resp.MemberID {
				cl.members = resp.Members
			}
		case errMemberIDRequired:
			cl.memberID = resp.MemberID
		default:
			cl.onError(resp.ErrorCode)
		}
	}, nil)
}

func (s *sim) classicSync(cl *classicClient) *call {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 5
	req.Group, req.MemberID, req.Generation = cl.group, cl.memberID, cl.gen
	pt, pn := "consumer", "range"
	req.ProtocolType, req.Protocol = &pt, &pn
	if cl.members != nil {
		req.GroupAssignment = leaderAssign(cl.members)
	}
	group, member, gen := cl.group, cl.memberID, cl.gen
	return s.classicCall(cl, fmt.Sprintf("sync gen=%d leader=%v", gen, cl.members != nil),
		stepRequest(core.ClientInfo{}, req), func(msg kmsg.Response) {
			resp := msg.(*kmsg.SyncGroupResponse)
			if resp.ErrorCode != 0 {
				cl.onError(resp.ErrorCode)
				return
			}
			cl.phase, cl.owned = stable, decodeAssignment(resp.MemberAssignment)
		}, func(msg kmsg.Response) {
			s.inv.classicSync(s, group, member, gen, msg.(*kmsg.SyncGroupResponse))
		})
}

// classicCommit asks the coordinator to decide an offset commit of the
// client's partitions at its generation (offsets themselves are stored by
// the data plane, not the coordinator's log).
func (s *sim) classicCommit(cl *classicClient) *call {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 9
	req.Group, req.MemberID, req.Generation = cl.group, cl.memberID, cl.gen
	t := kmsg.NewOffsetCommitRequestTopic()
	t.Topic = "t"
	for _, p := range cl.owned {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset = p, 1
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = []kmsg.OffsetCommitRequestTopic{t}
	return s.classicCall(cl, "offset commit", func(c *core.Coordinator, now int64, id core.RequestID) core.Output {
		o := mustStep(c, now, core.Request{Body: req})
		d := o.Offsets[0]
		resp := kmsg.NewPtrOffsetCommitResponse()
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = "t"
		rp := kmsg.NewOffsetCommitResponseTopicPartition()
		rp.ErrorCode = d.ErrorCode
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		o.Responses = append(o.Responses, core.Response{Request: id, Msg: resp})
		return o
	}, func(msg kmsg.Response) {
		cl.onError(msg.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode)
	}, nil)
}

// classicLeave sends LeaveGroup (v4, one member) and vanishes for a while.
func (s *sim) classicLeave(cl *classicClient) *call {
	if cl.waiting || cl.gone || cl.memberID == "" {
		return nil
	}
	c := s.classicCall(cl, "leave", cl.leave(), func(kmsg.Response) {}, nil)
	cl.waiting, cl.gone, cl.owned = false, true, nil
	cl.incarnation++
	return c
}

// classicCall wraps a request of a classic consumer.
func (s *sim) classicCall(cl *classicClient, what string, run func(*core.Coordinator, int64, core.RequestID) core.Output,
	done, check func(kmsg.Response)) *call {
	return cl.wrap(fmt.Sprintf("%s %s gen=%d", what, cl.memberID, cl.gen), run, done, check)
}

// leaderAssign is the leader's eager range-like assignment: the four
// partitions of "t" round-robin over the members sorted by id.
func leaderAssign(members []kmsg.JoinGroupResponseMember) []kmsg.SyncGroupRequestGroupAssignment {
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = m.MemberID
	}
	sort.Strings(ids)
	parts := make([][]int32, len(ids))
	for p := int32(0); p < 4; p++ {
		parts[int(p)%len(ids)] = append(parts[int(p)%len(ids)], p)
	}
	out := make([]kmsg.SyncGroupRequestGroupAssignment, len(ids))
	for i, id := range ids {
		a := kmsg.ConsumerMemberAssignment{Version: 0, Topics: []kmsg.ConsumerMemberAssignmentTopic{{Topic: "t", Partitions: parts[i]}}}
		out[i] = kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: a.AppendTo(nil)}
	}
	return out
}

func decodeAssignment(b []byte) []int32 {
	var a kmsg.ConsumerMemberAssignment
	if len(b) == 0 || a.ReadFrom(b) != nil {
		return nil
	}
	var out []int32
	for _, t := range a.Topics {
		out = append(out, t.Partitions...)
	}
	return out
}
