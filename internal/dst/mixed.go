package dst

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/core/userdata"
)

// The mixed group: classic Kafka Streams members (JoinGroup/SyncGroup with
// the Streams SubscriptionInfo and AssignmentInfo userdata) and streams
// protocol members in one group. The group is classic while only classic
// members are in it, converts to a streams group when the first streams
// member joins, and back to classic when the last streams member leaves
// or is fenced.
var mixedGroups = []string{"m1"}

// mixedTopology is the streams members' topology in the mixed group: one
// subtopology, whose tasks the classic members' leader assigns too.
var mixedTopology = &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: 0, Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
	{SubtopologyID: "0", SourceTopics: []string{"in"}},
}}

// classicStreamsClient is a simulated Kafka Streams instance speaking the
// classic protocol (cooperative, as Kafka Streams is): it reports the
// tasks it runs in its JoinGroup subscription, drops the tasks a new
// assignment revokes and then rejoins, and rejoins when its assignment
// asks for a follow-up rebalance. It retries a failed request as it was,
// may vanish without leaving and leaves.
type classicStreamsClient struct {
	classicMember
	process  userdata.ProcessID
	owned    taskSet
	followup int64
	// lateBy: heartbeats a late revoker keeps running the tasks an
	// assignment revoked before it revokes them and rejoins; revoking
	// holds them, rejoinIn counts down.
	lateBy, rejoinIn int
	revoking         taskSet
	// last is the client's last request, for a stale resend.
	last      *call
	refusedAt int64
}

func (cl *classicStreamsClient) reset() {
	cl.memberID, cl.gen, cl.phase, cl.owned, cl.followup = "", 0, needJoin, taskSet{}, 0
	cl.rejoinIn, cl.revoking = 0, nil
}

// revoke stops the tasks a late revoker still runs.
func (cl *classicStreamsClient) revoke() {
	for t := range cl.revoking {
		delete(cl.owned, t)
	}
	cl.rejoinIn, cl.revoking = 0, nil
}

func (s *sim) classicStreamsAct(cl *classicStreamsClient) *call {
	if cl.waiting {
		return nil
	}
	if cl.gone {
		if s.rng.IntN(4) > 0 {
			return nil
		}
		cl.gone = false
		cl.reset()
	}
	if cl.refusedAt != 0 && s.now < cl.refusedAt+10000 {
		return nil
	}
	cl.refusedAt = 0
	if cl.phase == stable && cl.followup != 0 && s.now >= cl.followup {
		cl.followup, cl.phase = 0, needJoin // Kafka Streams' follow-up rebalance
	}
	if cl.phase == stable && cl.rejoinIn > 0 {
		if cl.rejoinIn--; cl.rejoinIn == 0 {
			cl.phase = needJoin
		}
	}
	switch cl.phase {
	case needJoin:
		return s.classicStreamsJoin(cl)
	case needSync:
		return s.classicStreamsSync(cl)
	}
	return s.classicStreamsCall(cl, "heartbeat", cl.heartbeat(), func(msg kmsg.Response) {
		cl.onError(msg.(*kmsg.HeartbeatResponse).ErrorCode)
	}, nil)
}

// onError: a rebalance sends the client back to JoinGroup keeping its
// tasks (cooperative); fencing loses them.
func (cl *classicStreamsClient) onError(code int16) {
	switch code {
	case 0:
	case errRebalanceInProgress:
		cl.phase = needJoin
	default:
		cl.reset()
	}
}

// subscription is the client's JoinGroup metadata: the tasks it runs as
// caught-up actives, their partitions as owned partitions.
func (s *sim) subscription(cl *classicStreamsClient) []byte {
	var sums []userdata.TaskOffsetSum
	var parts []int32
	for _, t := range cl.owned.sorted() {
		ut, err := userdata.TaskIDFromSubtopology(t.sub, t.part)
		if err != nil {
			panic(err)
		}
		sums = append(sums, userdata.TaskOffsetSum{Task: ut, OffsetSum: userdata.LatestOffset})
		parts = append(parts, t.part)
	}
	var owned []kmsg.ConsumerMemberMetadataOwnedPartition
	if len(parts) > 0 {
		owned = []kmsg.ConsumerMemberMetadataOwnedPartition{{Topic: "in", Partitions: parts}}
	}
	info := &userdata.SubscriptionInfo{Version: 11, LatestSupportedVersion: 11, ProcessID: cl.process,
		UserEndPoint: fmt.Sprintf("%s:8080", cl.name), TaskOffsetSums: sums, UniqueField: int8(s.now)}
	ub, err := info.Encode()
	if err != nil {
		panic(err)
	}
	b, err := userdata.EncodeSubscription(&kmsg.ConsumerMemberMetadata{Version: 3, Topics: []string{"in"}, UserData: ub,
		OwnedPartitions: owned, Generation: cl.gen})
	if err != nil {
		panic(err)
	}
	return b
}

func (s *sim) classicStreamsJoin(cl *classicStreamsClient) *call {
	cl.revoke() // a client revokes before it rejoins
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 9
	req.Group, req.MemberID, req.ProtocolType = cl.group, cl.memberID, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 30000
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "stream", Metadata: s.subscription(cl)}}
	return s.classicStreamsCall(cl, "join", stepRequest(core.ClientInfo{ClientID: cl.name, ClientHost: "/127.0.0.1"}, req), func(msg kmsg.Response) {
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
		case errRebalanceInProgress:
		case errInconsistentProtocol:
			cl.refusedAt = s.now
		default:
			cl.reset()
		}
	}, nil)
}

func (s *sim) classicStreamsSync(cl *classicStreamsClient) *call {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Version = 5
	req.Group, req.MemberID, req.Generation = cl.group, cl.memberID, cl.gen
	pt, pn := "consumer", "stream"
	req.ProtocolType, req.Protocol = &pt, &pn
	if cl.members != nil {
		req.GroupAssignment = s.streamsLeaderAssign(cl.members)
	}
	return s.classicStreamsCall(cl, fmt.Sprintf("sync leader=%v", cl.members != nil),
		stepRequest(core.ClientInfo{}, req), func(msg kmsg.Response) {
			resp := msg.(*kmsg.SyncGroupResponse)
			if resp.ErrorCode != 0 {
				cl.onError(resp.ErrorCode)
				return
			}
			tasks, next, err := decodeStreamsAssignment(resp.MemberAssignment)
			if err != nil {
				s.fail(fmt.Errorf("group %s: member %s: unreadable Streams assignment: %w", cl.group, cl.memberID, err))
				return
			}
			cl.phase, cl.followup = stable, 0
			if next > 0 && next != userdata.NoRebalance {
				cl.followup = next
			}
			revoked := taskSet{}
			for t := range cl.owned {
				if !tasks[t] {
					revoked[t] = true
				}
			}
			switch {
			case len(revoked) == 0:
				cl.owned = tasks
			case cl.lateBy == 0:
				cl.owned, cl.phase = tasks, needJoin // cooperative: rejoin after revoking
			default:
				// A late revoker keeps running what it lost for a while.
				for t := range tasks {
					cl.owned[t] = true
				}
				cl.revoking, cl.rejoinIn = revoked, cl.lateBy
			}
		}, func(msg kmsg.Response) {
			resp := msg.(*kmsg.SyncGroupResponse)
			if resp.ErrorCode != 0 {
				return
			}
			s.stats.Grants++
			if tasks, _, err := decodeStreamsAssignment(resp.MemberAssignment); err == nil {
				s.checkTaskGrant(cl.group, cl.memberID, cl.name, cl.owned, tasks, cl.gen)
			}
		})
}

func (s *sim) classicStreamsLeave(cl *classicStreamsClient) *call {
	if cl.waiting || cl.gone || cl.memberID == "" {
		return nil
	}
	c := s.classicStreamsCall(cl, "leave", cl.leave(), func(kmsg.Response) {}, nil)
	cl.waiting, cl.gone = false, true
	cl.reset()
	cl.incarnation++
	return c
}

func (s *sim) classicStreamsCall(cl *classicStreamsClient, what string, run func(*core.Coordinator, int64, core.RequestID) core.Output,
	done, check func(kmsg.Response)) *call {
	c := cl.wrap(fmt.Sprintf("classic streams %s %s gen=%d owned=%s", what, cl.memberID, cl.gen, cl.owned), run, done, check)
	cl.last = c
	return c
}

// classicStreamsStale resends the client's last request (a delayed
// duplicate): the coordinator answers it, the client does not wait for
// the answer nor read it.
func (s *sim) classicStreamsStale(cl *classicStreamsClient) *call {
	if cl.last == nil {
		return nil
	}
	last := cl.last
	return &call{group: last.group, what: "stale resend of " + last.what, run: last.run, check: last.check,
		done: func(kmsg.Response) {}, failed: func() {}}
}

// decodeStreamsAssignment reads a classic Streams member's SyncGroup
// assignment: its active tasks and the follow-up rebalance time.
func decodeStreamsAssignment(b []byte) (taskSet, int64, error) {
	out := taskSet{}
	if len(b) == 0 {
		return out, 0, nil
	}
	a, err := userdata.DecodeAssignment(b)
	if err != nil {
		return nil, 0, err
	}
	info, err := userdata.DecodeAssignmentInfo(a.UserData)
	if err != nil {
		return nil, 0, err
	}
	for _, t := range info.ActiveTasks {
		out[task{strconv.Itoa(int(t.Subtopology)), t.Partition}] = true
	}
	return out, info.NextRebalanceMs, nil
}

// streamsLeaderAssign is the classic leader's assignment (Kafka Streams'
// assignor, simplified): a task stays with the member that reports
// running it (the first in member order when two do), the others go to
// the least loaded member; AssignmentInfo v11.
func (s *sim) streamsLeaderAssign(members []kmsg.JoinGroupResponseMember) []kmsg.SyncGroupRequestGroupAssignment {
	members = append([]kmsg.JoinGroupResponseMember(nil), members...)
	sort.Slice(members, func(i, j int) bool { return members[i].MemberID < members[j].MemberID })
	owner := map[int32]int{}
	for i, m := range members {
		sub, err := userdata.DecodeSubscription(m.ProtocolMetadata)
		if err != nil {
			continue
		}
		for _, tp := range sub.OwnedPartitions {
			for _, p := range tp.Partitions {
				if _, taken := owner[p]; !taken {
					owner[p] = i
				}
			}
		}
	}
	load := make([]int, len(members))
	for _, i := range owner {
		load[i]++
	}
	per := make([]map[userdata.TaskID][]userdata.TopicPartition, len(members))
	for i := range per {
		per[i] = map[userdata.TaskID][]userdata.TopicPartition{}
	}
	for p := int32(0); p < s.topics[0].Partitions; p++ {
		i, ok := owner[p]
		if !ok {
			i = 0
			for j := range load {
				if load[j] < load[i] {
					i = j
				}
			}
			load[i]++
		}
		per[i][userdata.TaskID{Partition: p}] = []userdata.TopicPartition{{Topic: "in", Partition: p}}
	}
	var out []kmsg.SyncGroupRequestGroupAssignment
	for i, m := range members {
		parts, active, err := userdata.ActiveTaskList(per[i])
		if err != nil {
			panic(err)
		}
		info := &userdata.AssignmentInfo{Version: 11, CommonlySupportedVersion: 11, ActiveTasks: active, NextRebalanceMs: userdata.NoRebalance}
		ub, err := info.Encode()
		if err != nil {
			panic(err)
		}
		b, err := userdata.EncodeAssignment(&kmsg.ConsumerMemberAssignment{Version: 3, Topics: userdata.AssignmentTopics(parts), UserData: ub})
		if err != nil {
			panic(err)
		}
		out = append(out, kmsg.SyncGroupRequestGroupAssignment{MemberID: m.MemberID, MemberAssignment: b})
	}
	return out
}

// checkTaskGrant checks a released grant of active tasks in a streams or
// mixed group, across both protocols: a task it gives member (of the
// client named name, which owns owned) that the client does not run yet
// must not run on another client — streams or classic — that the group
// still holds as a member (a late revoker runs what it has not revoked).
// A streams member whose stale resend the coordinator accepted is left
// out, as in checkPartitionGrant.
func (s *sim) checkTaskGrant(group, member, name string, owned, granted taskSet, epoch int32) {
	live := s.liveMembers(group)
	for _, t := range granted.sorted() {
		if owned[t] {
			continue
		}
		for _, o := range s.streams {
			if o.group == group && o.name != name && o.owned[t] && live[o.memberID] && !o.staleSeen {
				s.fail(fmt.Errorf("group %s: the coordinator granted active task %s to %s (epoch %d) while streams member %s still runs it",
					group, t, member, epoch, o.memberID))
				return
			}
		}
		for _, o := range s.classicStreams {
			if o.group == group && o.name != name && o.owned[t] && live[o.memberID] {
				s.fail(fmt.Errorf("group %s: the coordinator granted active task %s to %s (epoch %d) while classic member %s still runs it",
					group, t, member, epoch, o.memberID))
				return
			}
		}
	}
}
