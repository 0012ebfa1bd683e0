package sim

// The core engine's classic members: Kafka Streams clients on the classic
// protocol. They send JoinGroup, SyncGroup, Heartbeat and LeaveGroup to
// core with ConsumerProtocol subscriptions carrying Streams'
// SubscriptionInfo, and take what SyncGroup's AssignmentInfo gives them.
// In a classic group one of them leads: it runs the assignor on what the
// JoinGroup response says of the members (as the model engine does for a
// classic group) and hands the result to core in its SyncGroup,
// withholding a task its previous owner has not revoked yet (cooperative
// rebalancing). In a streams group core bridges them: it computes their
// assignment and tells them to rejoin.

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/core/userdata"
)

// classicProtocol is Kafka Streams' JoinGroup protocol name.
const classicProtocol = "stream"

// classicClient is a classic member's protocol state.
type classicClient struct {
	rejoin   bool  // JoinGroup next
	needSync bool  // joined: SyncGroup next
	inflight bool  // a JoinGroup or SyncGroup awaits its response
	gen      int32 // the generation it last joined, -1: none
	followup int64 // scenario ms of its follow-up rejoin (AssignmentInfo's nextRebalanceMs), -1: none
	// members is the JoinGroup response's member list when it leads the
	// generation it joined; nil otherwise.
	members []kmsg.JoinGroupResponseMember
	// plan is the target it handed core as the leader, recorded when
	// core accepts its SyncGroup; nil otherwise.
	plan *leaderPlan
}

// leaderPlan is a leader's target for its generation.
type leaderPlan struct {
	gen            int32
	req            *abi.AssignRequest
	resp           *abi.AssignResponse
	probe, revoked bool
}

// classicState is the core engine's state of its classic members.
type classicState struct {
	classicIDs     map[string]bool               // member ids core gave classic members
	processes      map[userdata.ProcessID]string // process id -> process, of every member that joined
	classicProbing bool                          // a member's follow-up rejoin started this generation
	classicRevoked bool                          // a member's rejoin after revoking tasks started it
	lastPlan       *leaderPlan                   // the last target a leader installed
	activeOn       []*member                     // per task: a member it is active on (checkOwned)
}

// classicGroup says whether core holds the group as a classic group: its
// leader computes the next target (the report's reasons for it).
func (cw *coreWorld) classicGroup() bool {
	g, ok := cw.c.Group(coreGroup)
	return ok && g.Kind() == core.GroupKindClassic
}

// classicHeartbeatMs is a classic member's heartbeat interval:
// classic_rejoin_ms, the time it takes to learn of a rebalance.
func (cw *coreWorld) classicHeartbeatMs() int64 {
	return max(cw.sc.classicRejoinMs(), 1)
}

// joinClassic starts a classic client for m, with no member id yet.
func (cw *coreWorld) joinClassic(m *member) *coreClient {
	cw.processes[processID(m.process)] = m.process
	return &coreClient{m: m, nextHB: cw.now, sentRep: -1, classic: &classicClient{rejoin: true, gen: -1, followup: -1}}
}

// actClassic lets every classic client take its next step at now, a few
// rounds so that a JoinGroup answered at once is followed by its
// SyncGroup in the same tick, as a real client does within milliseconds.
func (cw *coreWorld) actClassic() {
	for range 4 {
		acted := false
		for _, cl := range slices.Clone(cw.clients) {
			if cl.classic != nil && cl.m.crashedMs < 0 && slices.Contains(cw.clients, cl) {
				acted = cw.actClassicOne(cl) || acted
			}
		}
		if !acted {
			return
		}
	}
}

// actClassicOne sends cl's next request, if one is due; it says whether
// it sent a JoinGroup or a SyncGroup.
func (cw *coreWorld) actClassicOne(cl *coreClient) bool {
	cs := cl.classic
	if cs.inflight || cw.stopped {
		return false
	}
	if cs.followup >= 0 && cw.now >= cs.followup && !cs.rejoin && !cs.needSync {
		cs.followup, cs.rejoin = -1, true
		cw.classicProbing = cw.classicProbing || cw.classicGroup()
	}
	switch {
	case cs.rejoin:
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = 9
		req.Group, req.MemberID, req.ProtocolType = coreGroup, cw.classicID(cl), "consumer"
		req.SessionTimeoutMillis = int32(ms(cw.sc.SessionTimeoutS))
		req.RebalanceTimeoutMillis = 300000 // Kafka Streams' max.poll.interval.ms
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: classicProtocol, Metadata: cw.subscription(cl)}}
		cs.rejoin, cs.inflight = false, true
		cw.send(cl, req)
		return true
	case cs.needSync:
		req := kmsg.NewPtrSyncGroupRequest()
		req.Version = 5
		req.Group, req.MemberID, req.Generation = coreGroup, cl.m.id, cs.gen
		pt, pn := "consumer", classicProtocol
		req.ProtocolType, req.Protocol = &pt, &pn
		if cs.members != nil {
			req.GroupAssignment = cw.lead(cs)
		}
		cs.needSync, cs.inflight, cs.members = false, true, nil
		cw.send(cl, req)
		return true
	case cw.now >= cl.nextHB && cs.gen >= 0:
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version = 4
		req.Group, req.MemberID, req.Generation = coreGroup, cl.m.id, cs.gen
		cl.nextHB = cw.now + cw.classicHeartbeatMs()
		cw.send(cl, req)
	}
	return false
}

// classicID is the member id cl joins with: core's, once core gave it one.
func (cw *coreWorld) classicID(cl *coreClient) string {
	if cw.classicIDs[cl.m.id] {
		return cl.m.id
	}
	return ""
}

// leaveClassic sends cl's LeaveGroup.
func (cw *coreWorld) leaveClassic(cl *coreClient) {
	if !cw.classicIDs[cl.m.id] {
		return // core never gave it an id: nothing to leave
	}
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Version = 5
	req.Group = coreGroup
	req.Members = []kmsg.LeaveGroupRequestMember{{MemberID: cl.m.id}}
	cw.send(cl, req)
}

// adoptClassic applies a classic response to cl as Kafka Streams' consumer
// does.
func (cw *coreWorld) adoptClassic(cl *coreClient, msg kmsg.Response) {
	cs := cl.classic
	if cs == nil || !slices.Contains(cw.clients, cl) {
		return
	}
	switch r := msg.(type) {
	case *kmsg.JoinGroupResponse:
		cs.inflight = false
		switch r.ErrorCode {
		case 0:
			cw.rename(cl.m, r.MemberID)
			cs.gen, cs.needSync, cs.members = r.Generation, true, nil
			if r.LeaderID == r.MemberID && len(r.Members) > 0 {
				cs.members = r.Members
			}
		case kerr.MemberIDRequired.Code:
			cw.rename(cl.m, r.MemberID)
			cs.rejoin = true
		case kerr.RebalanceInProgress.Code:
			cs.rejoin = true
		default:
			cw.classicError(cl, "join", r.ErrorCode)
		}
	case *kmsg.SyncGroupResponse:
		cs.inflight = false
		plan := cs.plan
		cs.plan = nil
		if r.ErrorCode != 0 {
			cw.classicError(cl, "sync", r.ErrorCode)
			return
		}
		if plan != nil {
			cw.record(plan)
		}
		cw.synced(cl, r.MemberAssignment)
	case *kmsg.HeartbeatResponse:
		if cs.inflight || cs.rejoin || cs.needSync || r.ErrorCode == 0 {
			return // a rebalancing client ignores heartbeat results
		}
		cw.classicError(cl, "heartbeat", r.ErrorCode)
	}
}

// classicError handles an error as the consumer does: REBALANCE_IN_PROGRESS
// rejoins keeping its tasks; a fencing error loses them (and the member id
// for UNKNOWN_MEMBER_ID) and rejoins; anything else stops the replay.
func (cw *coreWorld) classicError(cl *coreClient, what string, code int16) {
	cs := cl.classic
	switch code {
	case kerr.RebalanceInProgress.Code:
	case kerr.UnknownMemberID.Code:
		delete(cw.classicIDs, cl.m.id)
		fallthrough
	case kerr.IllegalGeneration.Code, kerr.FencedInstanceID.Code:
		cs.gen = -1
		cw.take(cl.m, abi.MemberAssignment{Active: []int32{}, Standby: []int32{}, Warmup: []int32{}})
	default:
		cw.fail(fmt.Errorf("member %s: %s: %v", cl.m.label, what, kerr.ErrorForCode(code)))
		return
	}
	cs.rejoin, cs.needSync = true, false
}

// rename makes id (core's) m's member id.
func (cw *coreWorld) rename(m *member, id string) {
	cw.classicIDs[id] = true
	if m.id == id {
		return
	}
	m.id = id
	cw.labelOf[id], cw.procOf[id] = m.label, m.process
	slices.SortFunc(cw.members, func(a, b *member) int { return strings.Compare(a.id, b.id) })
}

// synced takes the assignment of a SyncGroup response: its active tasks,
// its standby tasks (warm-ups among them: AssignmentInfo has no list of
// its own for them) and its follow-up rebalance. A client that revoked an
// active task rejoins at once (cooperative rebalancing).
func (cw *coreWorld) synced(cl *coreClient, b []byte) {
	cs := cl.classic
	a, err := userdata.DecodeAssignment(b)
	var info *userdata.AssignmentInfo
	if err == nil {
		info, err = userdata.DecodeAssignmentInfo(a.UserData)
	}
	if err != nil {
		cw.fail(fmt.Errorf("member %s: assignment: %w", cl.m.label, err))
		return
	}
	next := abi.MemberAssignment{Active: []int32{}, Standby: []int32{}, Warmup: []int32{}}
	for _, t := range info.ActiveTasks {
		next.Active = append(next.Active, cw.classicTask(t))
	}
	for _, st := range info.StandbyTasks {
		next.Standby = append(next.Standby, cw.classicTask(st.Task))
	}
	slices.Sort(next.Active)
	next.Active = slices.Compact(next.Active) // one entry per partition
	slices.Sort(next.Standby)
	cs.followup = -1
	if n := info.NextRebalanceMs; n != userdata.NoRebalance {
		cs.followup = max(n-coreEpochMs, cw.now)
	}
	revoked := slices.ContainsFunc(cl.m.target.Active, func(t int32) bool { return !slices.Contains(next.Active, t) })
	if !sameAssignment(cl.m.target, next) {
		cw.take(cl.m, next)
	}
	cl.nextHB = cw.now + cw.classicHeartbeatMs()
	if revoked {
		cs.rejoin = true
		cw.classicRevoked = cw.classicRevoked || cw.classicGroup()
	}
}

func (cw *coreWorld) classicTask(t userdata.TaskID) int32 {
	s := slices.IndexFunc(cw.sc.subs, func(x abi.Subtopology) bool { return x.ID == fmt.Sprint(t.Subtopology) })
	if s < 0 {
		cw.fail(fmt.Errorf("assignment: unknown task %s", t))
		return 0
	}
	return cw.ts.Task(int32(s), t.Partition)
}

func (cw *coreWorld) userdataTask(t int32) userdata.TaskID {
	sub, p := cw.locate(t)
	ut, err := userdata.TaskIDFromSubtopology(sub, p)
	if err != nil {
		cw.fail(fmt.Errorf("task %s_%d has no classic form: %w", sub, p, err))
	}
	return ut
}

// processID is a process's Kafka Streams process id, the same on both
// protocols as a real Kafka Streams client's: the name itself when it is
// a UUID (a recorded run names its processes by their ids), else a UUID
// made from the name.
func processID(process string) userdata.ProcessID {
	if p, err := userdata.ParseProcessID(process); err == nil {
		return p
	}
	return userdata.ProcessID(topicID("process-" + process))
}

// subscription is cl's JoinGroup metadata: the source topics, the
// partitions of the actives it owns, and SubscriptionInfo with its
// process and the offset sums of the state its process holds — the
// actives it runs as caught up, every other copy on disk that no other
// member of its process holds.
func (cw *coreWorld) subscription(cl *coreClient) []byte {
	m := cl.m
	var topics []string
	for _, s := range cw.sc.subs {
		topics = append(topics, sourceTopic(s.ID))
	}
	var owned []kmsg.ConsumerMemberMetadataOwnedPartition
	var sums []userdata.TaskOffsetSum
	for _, t := range m.target.Active {
		sub, p := cw.locate(t)
		if n := len(owned); n > 0 && owned[n-1].Topic == sourceTopic(sub) {
			owned[n-1].Partitions = append(owned[n-1].Partitions, p)
		} else {
			owned = append(owned, kmsg.ConsumerMemberMetadataOwnedPartition{Topic: sourceTopic(sub), Partitions: []int32{p}})
		}
		if cw.stateful[t] {
			sums = append(sums, userdata.TaskOffsetSum{Task: cw.userdataTask(t), OffsetSum: userdata.LatestOffset})
		}
	}
	for t, o := range cw.local[m.process] {
		if o >= 0 && cw.stateful[t] && !slices.Contains(m.target.Active, int32(t)) && !cw.heldByOther(m, int32(t)) {
			sums = append(sums, userdata.TaskOffsetSum{Task: cw.userdataTask(int32(t)), OffsetSum: o})
		}
	}
	info := &userdata.SubscriptionInfo{Version: userdata.LatestSupportedVersion, LatestSupportedVersion: userdata.LatestSupportedVersion,
		ProcessID: processID(m.process), UserEndPoint: m.process + ":8080", TaskOffsetSums: sums, UniqueField: int8(cw.now / 1000)}
	ub, err := info.Encode()
	var b []byte
	if err == nil {
		b, err = userdata.EncodeSubscription(&kmsg.ConsumerMemberMetadata{Version: userdata.ConsumerProtocolVersion, Topics: topics,
			UserData: ub, OwnedPartitions: owned, Generation: cl.classic.gen})
	}
	if err != nil {
		cw.fail(fmt.Errorf("member %s: subscription: %w", m.label, err))
	}
	return b
}

// heldByOther says whether another member of m's process holds t: its
// thread has the task's state directory locked.
func (cw *coreWorld) heldByOther(m *member, t int32) bool {
	for _, o := range cw.members {
		if o != m && o.process == m.process && o.holds(t) {
			return true
		}
	}
	return false
}

// leaderMember is one member as the leader reads it from the JoinGroup
// response.
type leaderMember struct {
	id      string
	process string
	owned   []int32
	sums    map[int32]int64
}

// lead is the leader's SyncGroup assignment of a classic group: the
// assignor run on the members the JoinGroup response lists, with what
// their subscriptions say (process, owned actives, offset sums); a task
// assigned away from the member that still owns it is withheld from its
// new owner until the owner revoked it and rejoined. The target is
// cs.plan until core accepts the SyncGroup.
func (cw *coreWorld) lead(cs *classicClient) []kmsg.SyncGroupRequestGroupAssignment {
	members, err := cw.readMembers(cs.members)
	if err != nil {
		cw.fail(fmt.Errorf("leader: %w", err))
		return nil
	}
	cw.epoch = cs.gen
	req := cw.leaderRequest(members)
	resp, err := cw.a.Assign(req)
	if err == nil {
		err = abi.ValidateAssignment(req, resp)
	}
	if err != nil {
		cw.fail(fmt.Errorf("generation %d: %w", cs.gen, err))
		return nil
	}
	cs.plan = &leaderPlan{gen: cs.gen, req: req, resp: resp, probe: cw.classicProbing, revoked: cw.classicRevoked}
	ownerOf := map[int32]string{}
	for _, lm := range members {
		for _, t := range lm.owned {
			ownerOf[t] = lm.id
		}
	}
	next := userdata.NoRebalance
	if resp.NextProbeMs > 0 {
		next = coreEpochMs + cw.now + resp.NextProbeMs
	} else if hasWarmups(resp.Members) {
		next = coreEpochMs + cw.now + cw.sc.Assignment.ProbingIntervalMs
	}
	var out []kmsg.SyncGroupRequestGroupAssignment
	for i, am := range req.Members {
		b, err := cw.classicAssignment(resp.Members[i], func(t int32) bool {
			o, ok := ownerOf[t]
			return ok && o != am.ID
		}, next)
		if err != nil {
			cw.fail(fmt.Errorf("leader: %w", err))
			return nil
		}
		out = append(out, kmsg.SyncGroupRequestGroupAssignment{MemberID: am.ID, MemberAssignment: b})
	}
	return out
}

// record records the target a leader's SyncGroup installed: as a
// rebalance at its generation when it differs from the previous one or
// events preceded it, else as a probe that changed nothing, if it was
// one.
func (cw *coreWorld) record(p *leaderPlan) {
	cw.classicProbing, cw.classicRevoked = false, false
	if p.probe && cw.started {
		cw.out.Totals.ProbingRounds++
	}
	changed := cw.targetChanged(p)
	cw.lastPlan = p
	if !changed && len(cw.reasons) == 0 && cw.started {
		if p.probe {
			cw.out.Totals.ProbesUnchanged++
		}
		return
	}
	if p.revoked && len(cw.reasons) == 0 {
		// The generation a member started when it rejoined after giving
		// up tasks, the rest of its cooperative rebalance.
		cw.reasons = []string{"tasks-revoked"}
	}
	cw.installed(core.AssignorRun{Probe: p.probe && len(cw.reasons) == 0}, p.gen, p.req, p.resp)
}

// targetChanged says whether p's target differs from the installed one:
// its actives from core's last target or the last leader's, its standbys
// and warm-ups from the last leader's.
func (cw *coreWorld) targetChanged(p *leaderPlan) bool {
	last := cw.lastPlan
	if last == nil || len(last.req.Members) != len(p.req.Members) {
		return true
	}
	n := 0
	for i, am := range p.req.Members {
		for _, t := range p.resp.Members[i].Active {
			if cw.owner[t] != am.ID {
				return true
			}
			n++
		}
		if last.req.Members[i].ID != am.ID || !slices.Equal(last.resp.Members[i].Standby, p.resp.Members[i].Standby) ||
			!slices.Equal(last.resp.Members[i].Warmup, p.resp.Members[i].Warmup) {
			return true
		}
	}
	return n != len(cw.owner)
}

// readMembers decodes the JoinGroup response's members, sorted by id.
func (cw *coreWorld) readMembers(jm []kmsg.JoinGroupResponseMember) ([]leaderMember, error) {
	var out []leaderMember
	for _, m := range jm {
		sub, err := userdata.DecodeSubscription(m.ProtocolMetadata)
		if err != nil {
			return nil, fmt.Errorf("member %s: %w", m.MemberID, err)
		}
		info, err := userdata.DecodeSubscriptionInfo(sub.UserData)
		if err != nil {
			return nil, fmt.Errorf("member %s: %w", m.MemberID, err)
		}
		lm := leaderMember{id: m.MemberID, process: cw.processes[info.ProcessID], sums: map[int32]int64{}}
		if lm.process == "" {
			return nil, fmt.Errorf("member %s: unknown process %x", m.MemberID, info.ProcessID[:])
		}
		for _, tp := range sub.OwnedPartitions {
			s := slices.IndexFunc(cw.sc.subs, func(x abi.Subtopology) bool { return sourceTopic(x.ID) == tp.Topic })
			for _, p := range tp.Partitions {
				if s >= 0 {
					lm.owned = append(lm.owned, cw.ts.Task(int32(s), p))
				}
			}
		}
		slices.Sort(lm.owned)
		for _, ts := range info.TaskOffsetSums {
			lm.sums[cw.classicTask(ts.Task)] = ts.OffsetSum
		}
		out = append(out, lm)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].id < out[j].id })
	return out, nil
}

// leaderRequest is the assignor's input the leader builds: the group's
// settings as the model hands them, the members as their subscriptions
// say — an active's caught-up sentinel read as the changelog's end, the
// other tasks with an offset sum as its previous standbys.
func (cw *coreWorld) leaderRequest(members []leaderMember) *abi.AssignRequest {
	req := cw.request(nil)
	ends := cw.endOffsets(nil)
	var procs map[string]int32
	req.Processes, procs = processIndex(len(members), func(i int) string { return members[i].process })
	req.Members = nil
	for _, lm := range members {
		am := abi.Member{ID: lm.id, Process: procs[lm.process], Active: lm.owned, Standby: []int32{}, Warmup: []int32{}, TaskEndOffsets: ends}
		if m := cw.memberOrNil(lm.id); m != nil {
			am.Rack = m.rack
		}
		for _, t := range slices.Sorted(maps.Keys(lm.sums)) {
			o := lm.sums[t]
			if o == userdata.LatestOffset {
				o = cw.knownEnd(t) // caught up: at the end the host knows
			}
			if !slices.Contains(lm.owned, t) {
				am.Standby = append(am.Standby, t)
			}
			if o >= 0 {
				am.TaskOffsets = append(am.TaskOffsets, abi.TaskOffset{Task: t, Offset: o})
			}
		}
		req.Members = append(req.Members, am)
	}
	return req
}

// classicAssignment encodes one member's share as Kafka Streams' leader
// does: ConsumerProtocol assignment of its actives' source partitions,
// AssignmentInfo with its actives (withheld ones left out), its standbys
// and warm-ups as standby tasks, and the follow-up rebalance time.
func (cw *coreWorld) classicAssignment(a abi.MemberAssignment, withheld func(int32) bool, next int64) ([]byte, error) {
	tasks := map[userdata.TaskID][]userdata.TopicPartition{}
	for _, t := range a.Active {
		if withheld(t) {
			continue
		}
		sub, p := cw.locate(t)
		tasks[cw.userdataTask(t)] = []userdata.TopicPartition{{Topic: sourceTopic(sub), Partition: p}}
	}
	parts, active, err := userdata.ActiveTaskList(tasks)
	if err != nil {
		return nil, err
	}
	info := &userdata.AssignmentInfo{Version: userdata.LatestSupportedVersion, CommonlySupportedVersion: userdata.LatestSupportedVersion,
		ActiveTasks: active, NextRebalanceMs: next}
	passive := slices.Concat(a.Standby, a.Warmup)
	slices.Sort(passive)
	for _, t := range passive {
		sub, p := cw.locate(t)
		info.StandbyTasks = append(info.StandbyTasks, userdata.StandbyTask{Task: cw.userdataTask(t),
			Partitions: []userdata.TopicPartition{{Topic: sourceTopic(sub), Partition: p}}})
	}
	ub, err := info.Encode()
	if err != nil {
		return nil, err
	}
	return userdata.EncodeAssignment(&kmsg.ConsumerMemberAssignment{Version: userdata.ConsumerProtocolVersion,
		Topics: userdata.AssignmentTopics(parts), UserData: ub})
}

// checkOwned stops the replay when a task is active on members of two
// processes at once: core hands a task over only after its previous
// owner gave it up, and a classic leader withholds it until then.
func (cw *coreWorld) checkOwned() {
	if cw.activeOn == nil {
		cw.activeOn = make([]*member, len(cw.end))
	}
	owner := cw.activeOn
	clear(owner)
	for _, m := range cw.members {
		for _, t := range m.target.Active {
			if o := owner[t]; o != nil && o.process != m.process {
				cw.fail(fmt.Errorf("task %d is active on %s and %s, members of two processes", t, o.label, m.label))
				return
			}
			owner[t] = m
		}
	}
}
