package core

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/core/records"
	"github.com/coordhost/coordhost/core/userdata"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// migSim drives a Coordinator with simulated Kafka Streams instances, some
// speaking the classic protocol (JoinGroup/SyncGroup/Heartbeat with real
// SubscriptionInfo/AssignmentInfo bytes), some the streams protocol, and
// checks the migration invariants after every step.
type migSim struct {
	t        simT
	c        *Coordinator
	now      int64
	log      []records.Record
	insts    []*migInst
	reqs     map[RequestID]*migInst
	nextReq  RequestID
	trace    strings.Builder
	topology *kmsg.StreamsGroupHeartbeatRequestTopology
	tasks    int32
	// Chaos (property test): the probabilities of a failed append and of
	// a lost response, drawn from rng.
	rng          *rand.Rand
	failP, loseP float64
	sentGen      map[RequestID]int32
	kind         map[RequestID]string
	// tolerateFencing: members may be fenced legitimately (timeouts); a
	// fencing error is then checked against the coordinator's state.
	tolerateFencing bool
	cur             RequestID // the request whose response is being delivered
	recording       bool      // datadriven scenarios: always trace
	assign          func(AssignInput) AssignResult
	held            *[]AssignorRun // non-nil: assignor runs wait here (hold-assignor)
	lastKind        GroupKind      // property test: the group's kind after the last step
	lastNonEmpty    bool
	failNext        bool   // the next batch with records fails to append
	loseNext        bool   // the next response is lost
	snap            string // datadriven scenarios: the placement of the last snapshot
	// overrides: the group's config overrides, given again to a restarted
	// coordinator (a host keeps them outside the log).
	overrides *StreamsGroupOverrides
	topics    []TopicMetadata // the topic metadata last given, given again after a restart
	seen      func(Response)  // non-nil: called with every response delivered
}

// migInst is one Kafka Streams instance (one thread).
type migInst struct {
	name      string
	process   userdata.ProcessID
	classic   bool
	alive     bool
	memberID  string
	gen       int32 // classic generation / streams member epoch
	owned     taskSet
	standby   taskSet // classic: standby tasks of its last assignment
	rejoin    bool    // classic: must JoinGroup next
	needSync  bool    // classic: joined, SyncGroup next
	members   []kmsg.JoinGroupResponseMember
	fenced    int  // fencing errors seen while classic
	inflight  bool // classic: a JoinGroup or SyncGroup awaits its response
	refused   bool // the policy refused it: it waits before trying again
	refusedAt int64
	followup  int64            // AssignmentInfo.nextRebalanceMs: rejoin at this time
	version   int32            // SubscriptionInfo version (default 11)
	instance  *string          // group.instance.id (static member)
	paused    bool             // alive but silent (a long GC pause): timers may fence it
	restored  map[TaskID]int64 // classic: offset sums of standby tasks (default 100)
	fullNext  bool             // streams: a heartbeat failed, the next one is a full request
	// checked: tasks of lost streams responses, checked against other
	// processes' ownership when the coordinator granted them.
	checked taskSet
	// keepDirs: classic, task directories stay on disk after a task is
	// closed, so (as real Kafka Streams' getTaskOffsetSums) it keeps
	// reporting an offset sum for every task it ever held.
	keepDirs bool
	dirs     taskSet
}

// simT is what the simulation reports failures to: a *testing.T, or the
// property test's recorder.
type simT interface {
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Fatal(args ...any)
}

func newMigSim(t simT, tasks int32) *migSim {
	return newMigSimPolicy(t, tasks, MigrationBidirectional)
}

func newMigSimPolicy(t simT, tasks int32, policy MigrationPolicy) *migSim {
	return newMigSimConfig(t, tasks, policy, 0)
}

func newMigSimConfig(t simT, tasks int32, policy MigrationPolicy, assignorWait int64) *migSim {
	cfg := DefaultConfig()
	cfg.StreamsMigrationPolicy = policy
	cfg.Streams.InitialRebalanceDelayMs = 0
	cfg.Streams.AssignmentIntervalMs = 0
	cfg.Classic.InitialRebalanceDelayMs = 0
	cfg.AssignorWaitMs = assignorWait
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := &migSim{t: t, c: c, reqs: map[RequestID]*migInst{}, tasks: tasks, now: 1000,
		sentGen: map[RequestID]int32{}, kind: map[RequestID]string{}}
	s.topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{{SubtopologyID: "0", SourceTopics: []string{"in"}}}}
	s.setTopics([]TopicMetadata{{Name: "in", Partitions: tasks}})
	return s
}

func (s *migSim) inst(name string, proc byte, classic bool) *migInst {
	in := &migInst{name: name, classic: classic, alive: true, owned: taskSet{}, rejoin: true, gen: -1}
	in.process[15] = proc
	s.insts = append(s.insts, in)
	return in
}

func (s *migSim) req(in *migInst) RequestID {
	s.nextReq++
	s.reqs[s.nextReq] = in
	s.sentGen[s.nextReq] = in.gen
	return s.nextReq
}

func (s *migSim) chance(p float64) bool { return s.rng != nil && p > 0 && s.rng.Float64() < p }

// finish commits a batch, answers assignor runs and delivers responses.
func (s *migSim) finish(o Output) {
	if err := eventsExplain(o); err != nil {
		s.t.Fatal(err)
	}
	fail := len(o.Records) > 0 && (s.failNext || s.chance(s.failP))
	if fail {
		s.failNext = false
	}
	if fail {
		ro := s.c.Rollback()
		s.debugf("append failed (%d records)", len(o.Records))
		for _, r := range o.Responses {
			s.lost(r.Request)
		}
		for _, id := range ro.Failed {
			s.lost(id)
		}
		s.check()
		s.runAssignor(ro.AssignorRuns)
		return
	}
	s.c.Commit()
	s.log = append(s.log, o.Records...)
	if s.recording {
		for _, r := range o.Records {
			s.debugf("%s", fmtClassicRecord(r))
		}
		for _, e := range o.Events {
			s.debugf("event %s", e)
		}
	}
	for _, r := range o.Responses {
		// A lost response: the client never saw it. A streams client
		// keeps its old epoch and tasks and sends a full request next.
		if s.loseNext || s.chance(s.loseP) {
			s.loseNext = false
			s.debugf("response to %s lost", s.reqs[r.Request].name)
			s.lostGrant(r)
			s.lost(r.Request)
			continue
		}
		if s.seen != nil {
			s.seen(r)
		}
		s.deliver(r)
	}
	s.runAssignor(o.AssignorRuns)
}

func (s *migSim) runAssignor(runs []AssignorRun) {
	if s.held != nil {
		*s.held = append(*s.held, runs...)
		return
	}
	for _, run := range runs {
		assign := s.assign
		if assign == nil {
			assign = ReferenceAssign
		}
		res := assign(run.Input)
		s.finish(s.c.assignorResult(s.now, run, res, nil))
		if g, ok := s.c.groups["g"].(*streamsGroup); ok && run.Probe && s.recording {
			if g.assignmentEpoch == run.Epoch {
				s.debugf("probe at epoch %d: target unchanged, nothing written, assignment epoch stays %d", run.Epoch, g.assignmentEpoch)
			} else {
				s.debugf("probe at epoch %d: new target at assignment epoch %d", run.Epoch, g.assignmentEpoch)
			}
		}
	}
}

// lost is a response the client never saw (lost, or failed with
// NOT_COORDINATOR): it retries what it was doing.
func (s *migSim) lost(id RequestID) {
	in := s.reqs[id]
	if in == nil || !in.alive {
		return
	}
	if !in.classic {
		// Like the Java client after a failed heartbeat: resend every
		// field (a full request), keeping its old epoch and tasks.
		in.fullNext = true
		return
	}
	switch s.kind[id] {
	case "join":
		in.inflight, in.rejoin = false, true
	case "sync":
		in.inflight, in.needSync = false, true
	}
}

func isFencing(code int16) bool {
	return code == errIllegalGeneration || code == errUnknownMemberID || code == errFencedInstanceID
}

func (s *migSim) deliver(r Response) {
	in := s.reqs[r.Request]
	if in == nil || !in.alive {
		return
	}
	switch m := r.Msg.(type) {
	case *kmsg.StreamsGroupHeartbeatResponse:
		s.debugf("%s", fmtResponse(in.name, r.Msg))
	case *kmsg.SyncGroupResponse:
		if m.ErrorCode != 0 {
			s.debugf("%s: sync error=%s", in.name, errName(m.ErrorCode))
		} else {
			s.debugf("%s: sync %s", in.name, fmtAssignmentInfo(m.MemberAssignment, s.now))
		}
	default:
		s.debugf("%s: %s", in.name, fmtClassicResponse(r.Msg))
	}
	s.cur = r.Request
	switch m := r.Msg.(type) {
	case *kmsg.JoinGroupResponse:
		in.inflight = false
		switch {
		case m.ErrorCode == errMemberIDRequired:
			in.memberID, in.rejoin = m.MemberID, true
		case m.ErrorCode == errRebalanceInProgress:
			in.rejoin = true
		case m.ErrorCode == errInconsistentProtocol:
			in.refused, in.refusedAt, in.rejoin = true, s.now, true
		case m.ErrorCode != 0:
			s.fail(in, "join", m.ErrorCode)
		default:
			in.memberID, in.gen, in.rejoin, in.needSync = m.MemberID, m.Generation, false, true
			in.members = nil
			if m.LeaderID == in.memberID {
				in.members = m.Members
			}
		}
	case *kmsg.SyncGroupResponse:
		in.needSync, in.inflight = false, false
		if m.ErrorCode != 0 {
			if m.ErrorCode != errRebalanceInProgress {
				s.fail(in, "sync", m.ErrorCode)
			}
			in.rejoin = true
			return
		}
		tasks, next, standby := s.decodeAssignment(m.MemberAssignment)
		in.followup, in.standby = next, standby
		if in.keepDirs {
			if in.dirs == nil {
				in.dirs = taskSet{}
			}
			for _, set := range []taskSet{tasks, standby} {
				for t := range set {
					in.dirs[t] = struct{}{}
				}
			}
		}
		s.grant(in, tasks)
	case *kmsg.HeartbeatResponse:
		if in.inflight {
			return // a Java client ignores heartbeat results while it rebalances
		}
		if m.ErrorCode == errRebalanceInProgress {
			in.rejoin = true
		} else if m.ErrorCode != 0 {
			s.fail(in, "heartbeat", m.ErrorCode)
		} else {
			s.checkKind()
		}
	case *kmsg.StreamsGroupHeartbeatResponse:
		if m.ErrorCode != 0 {
			if m.ErrorCode == kerr.FencedMemberEpoch.Code || m.ErrorCode == kerr.UnknownMemberID.Code {
				in.gen, in.owned = 0, taskSet{}
				return
			}
			if m.ErrorCode == kerr.GroupIDNotFound.Code {
				in.refused, in.refusedAt, in.gen, in.owned = true, s.now, 0, taskSet{}
				return
			}
			s.t.Fatalf("%s: streams heartbeat error %d %s", in.name, m.ErrorCode, deref(m.ErrorMessage))
		}
		in.memberID, in.gen = m.MemberID, m.MemberEpoch
		if m.ActiveTasks != nil {
			s.grant(in, fromKmsgTasks(m.ActiveTasks))
		}
	}
}

func (s *migSim) fail(in *migInst, what string, code int16) {
	if in.classic && isFencing(code) && !s.legitFence(in, code) {
		in.fenced++
		s.t.Errorf("%s (classic) got a fencing error %s on %s at %d (member %q)\n%s", in.name, errName(code), what, s.now, in.memberID, s.trace.String())
	}
	in.memberID, in.gen, in.owned, in.rejoin = "", -1, taskSet{}, true
}

// isMember says whether the coordinator still holds the instance.
func (s *migSim) isMember(in *migInst) bool {
	switch g := s.c.groups["g"].(type) {
	case *streamsGroup:
		return g.members[in.memberID] != nil
	case *classicGroup:
		return g.members[in.memberID] != nil
	}
	return false
}

// legitFence says whether a fencing error is one the coordinator may
// give: the member is really gone, or really behind. Never when the
// coordinator holds the member at the generation the client sent.
func (s *migSim) legitFence(in *migInst, code int16) bool {
	if !s.tolerateFencing {
		return false
	}
	sent := s.sentGen[s.cur]
	isJoin := s.kind[s.cur] == "join"
	switch g := s.c.groups["g"].(type) {
	case *streamsGroup:
		m := g.members[in.memberID]
		return m == nil || m.classic == nil || (!isJoin && m.epoch != sent)
	case *classicGroup:
		m := g.members[in.memberID]
		if m == nil {
			return true
		}
		if isJoin {
			return code != errUnknownMemberID
		}
		return g.generation != sent && !s.c.downgradedRejoin(g, in.memberID, sent)
	}
	return true
}

// lostGrant checks the tasks of a lost streams response when the
// coordinator granted them (the grant rule below); a later full response
// re-sending them is not a new grant.
func (s *migSim) lostGrant(r Response) {
	in := s.reqs[r.Request]
	m, ok := r.Msg.(*kmsg.StreamsGroupHeartbeatResponse)
	if !ok || in == nil || !in.alive || m.ErrorCode != 0 || m.ActiveTasks == nil {
		return
	}
	tasks := fromKmsgTasks(m.ActiveTasks)
	s.checkGrant(in, tasks)
	if in.checked == nil {
		in.checked = taskSet{}
	}
	for t := range tasks {
		in.checked[t] = struct{}{}
	}
}

// checkGrant checks that no task of tasks that in does not own yet is still
// owned by a live member instance of another process.
func (s *migSim) checkGrant(in *migInst, tasks taskSet) {
	for t := range tasks {
		if in.owned.has(t) || in.checked.has(t) {
			continue
		}
		for _, o := range s.insts {
			if o != in && o.alive && o.process != in.process && o.owned.has(t) && s.isMember(o) {
				s.t.Errorf("at %d %s was granted %s still owned by %s", s.now, in.name, t, o.name)
			}
		}
	}
}

// grant installs a new active set, checking that no task it adds is still
// owned by an instance of another process.
func (s *migSim) grant(in *migInst, tasks taskSet) {
	s.checkGrant(in, tasks)
	in.checked = nil
	revoked := false
	for t := range in.owned {
		if !tasks.has(t) {
			revoked = true
		}
	}
	in.owned = tasks
	if revoked && in.classic {
		in.rejoin = true // cooperative: rejoin after revoking
	}
}

func (s *migSim) decodeAssignment(b []byte) (taskSet, int64, taskSet) {
	out := taskSet{}
	a, err := userdata.DecodeAssignment(b)
	if err != nil {
		s.t.Fatalf("assignment: %v", err)
	}
	info, err := userdata.DecodeAssignmentInfo(a.UserData)
	if err != nil {
		s.t.Fatalf("assignment info: %v", err)
	}
	n := 0
	for _, tp := range a.Topics {
		n += len(tp.Partitions)
	}
	if n != len(info.ActiveTasks) || info.ErrorCode != 0 {
		s.t.Fatalf("assignment: %d partitions, %d active tasks, errCode %d", n, len(info.ActiveTasks), info.ErrorCode)
	}
	for _, t := range info.ActiveTasks {
		out[classicTaskID(t)] = struct{}{}
	}
	standby := taskSet{}
	for _, st := range info.StandbyTasks {
		standby[classicTaskID(st.Task)] = struct{}{}
	}
	return out, info.NextRebalanceMs, standby
}

// subscription builds a classic Streams JoinGroup metadata.
func (s *migSim) subscription(in *migInst) []byte {
	var sums []userdata.TaskOffsetSum
	var owned []kmsg.ConsumerMemberMetadataOwnedPartition
	var parts []int32
	for _, t := range in.owned.sorted() {
		ut, _ := userdata.TaskIDFromSubtopology(t.Subtopology, t.Partition)
		sums = append(sums, userdata.TaskOffsetSum{Task: ut, OffsetSum: userdata.LatestOffset})
		parts = append(parts, t.Partition)
	}
	if len(parts) > 0 {
		owned = []kmsg.ConsumerMemberMetadataOwnedPartition{{Topic: "in", Partitions: parts}}
	}
	onDisk := in.standby
	if in.keepDirs {
		onDisk = taskSet{}
		for t := range in.dirs {
			onDisk[t] = struct{}{}
		}
		for t := range in.standby {
			onDisk[t] = struct{}{}
		}
	}
	for _, t := range onDisk.sorted() {
		if !in.owned.has(t) {
			ut, _ := userdata.TaskIDFromSubtopology(t.Subtopology, t.Partition)
			off, ok := in.restored[t]
			if !ok {
				off = 100 // restoring state
			}
			sums = append(sums, userdata.TaskOffsetSum{Task: ut, OffsetSum: off})
		}
	}
	v := in.version
	if v == 0 {
		v = 11
	}
	info := &userdata.SubscriptionInfo{Version: v, LatestSupportedVersion: max(v, 11), ProcessID: in.process,
		UserEndPoint: fmt.Sprintf("host%d:8080", in.process[15]), TaskOffsetSums: sums, UniqueField: int8(s.now)}
	if v < 3 {
		info.LatestSupportedVersion = userdata.UnknownVersion
	}
	if v < 2 {
		info.UserEndPoint = ""
	}
	ub, err := info.Encode()
	if err != nil {
		s.t.Fatal(err)
	}
	b, err := userdata.EncodeSubscription(&kmsg.ConsumerMemberMetadata{Version: 3, Topics: []string{"in"}, UserData: ub,
		OwnedPartitions: owned, Generation: in.gen})
	if err != nil {
		s.t.Fatal(err)
	}
	return b
}

// leaderAssign is a classic leader's assignment: tasks round-robin over
// members sorted by id, as AssignmentInfo v11.
func (s *migSim) leaderAssign(members []kmsg.JoinGroupResponseMember) []kmsg.SyncGroupRequestGroupAssignment {
	sort.Slice(members, func(i, j int) bool { return members[i].MemberID < members[j].MemberID })
	per := make([]map[userdata.TaskID][]userdata.TopicPartition, len(members))
	for i := range per {
		per[i] = map[userdata.TaskID][]userdata.TopicPartition{}
	}
	// Sticky like Kafka Streams' leader: a task stays with the member that
	// reports owning it; the others go to the least loaded member.
	owner := map[int32]int{}
	for i, m := range members {
		sub, err := userdata.DecodeSubscription(m.ProtocolMetadata)
		if err != nil {
			s.t.Fatalf("leader: %v", err)
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
	for p := int32(0); p < s.tasks; p++ {
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
		parts, active, _ := userdata.ActiveTaskList(per[i])
		info := &userdata.AssignmentInfo{Version: 11, CommonlySupportedVersion: 11, ActiveTasks: active, NextRebalanceMs: userdata.NoRebalance}
		ub, _ := info.Encode()
		b, _ := userdata.EncodeAssignment(&kmsg.ConsumerMemberAssignment{Version: 3, Topics: userdata.AssignmentTopics(parts), UserData: ub})
		out = append(out, kmsg.SyncGroupRequestGroupAssignment{MemberID: m.MemberID, MemberAssignment: b})
	}
	return out
}

// act makes one instance take its next step.
func (s *migSim) act(in *migInst) {
	if !in.alive || in.paused || in.refused && s.now < in.refusedAt+10000 {
		return
	}
	in.refused = false // a refused instance tries again every 10 s
	// Kafka Streams' scheduled follow-up rebalance — not between a
	// JoinGroup and its SyncGroup: the Java client sends both in one poll,
	// and the assignment it gets replaces the schedule.
	if in.classic && !in.inflight && !in.needSync && in.followup != 0 && s.now >= in.followup {
		in.followup, in.rejoin = 0, true
	}
	ci := ClientInfo{ClientID: in.name, ClientHost: "/10.0.0.1"}
	if !in.classic {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = "g", in.memberID, in.gen
		if in.gen <= 0 {
			in.gen = 0
			req.MemberEpoch = 0
			if in.memberID == "" {
				in.memberID = in.name + "-id"
				req.MemberID = in.memberID
			}
			pid := processIDString(in.process)
			req.ProcessID = &pid
			req.InstanceID = in.instance
			req.Topology = s.topology
			req.RebalanceTimeoutMillis = 30000
			req.UserEndpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: fmt.Sprintf("host%d", in.process[15]), Port: 8080}
		}
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = kmsgTasks(in.owned), []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		if in.fullNext {
			req.RebalanceTimeoutMillis, in.fullNext = 30000, false
		}
		s.finish(s.c.streamsGroupHeartbeat(s.now, s.req(in), ci, req))
		return
	}
	switch {
	case in.rejoin:
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = 9
		req.Group, req.MemberID, req.ProtocolType = "g", in.memberID, "consumer"
		req.InstanceID = in.instance
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 30000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "stream", Metadata: s.subscription(in)}}
		// A client that rejoins abandons the SyncGroup of its last join.
		in.rejoin, in.needSync, in.inflight = false, false, true
		id := s.req(in)
		s.kind[id] = "join"
		s.finish(s.c.joinGroup(s.now, id, ci, req))
	case in.needSync:
		req := kmsg.NewPtrSyncGroupRequest()
		req.Version = 5
		req.Group, req.MemberID, req.Generation = "g", in.memberID, in.gen
		req.InstanceID = in.instance
		pt, pn := "consumer", "stream"
		req.ProtocolType, req.Protocol = &pt, &pn
		if in.members != nil {
			req.GroupAssignment = s.leaderAssign(in.members)
		}
		in.needSync, in.inflight = false, true
		id := s.req(in)
		s.kind[id] = "sync"
		s.finish(s.c.syncGroup(s.now, id, req))
	default:
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version = 4
		req.Group, req.MemberID, req.Generation = "g", in.memberID, in.gen
		req.InstanceID = in.instance
		s.finish(s.c.heartbeat(s.now, s.req(in), req))
	}
}

// round lets every live instance act once, advances time and checks.
func (s *migSim) round() {
	for _, in := range s.insts {
		s.act(in)
		s.check()
	}
	if cg, ok := s.c.groups["g"].(*classicGroup); ok {
		s.debugf("classic state=%s prev=%s gen=%d awaiting=%d pendingJoin=%d members=%d", cg.state, cg.previousState, cg.generation, cg.numAwaitingJoin(), len(cg.pendingJoin), len(cg.members))
	}
	s.now += 1000
	s.finish(s.c.tick(s.now))
	s.check()
}

// check verifies the coordinator-state invariants, and that no task runs
// on two processes whose instances the streams group both holds as members.
func (s *migSim) check() {
	g, ok := s.c.groups["g"].(*streamsGroup)
	if !ok {
		return
	}
	if err := checkIndexes(g); err != nil {
		s.t.Errorf("at %d: %v", s.now, err)
	}
	runs := map[TaskID]*migInst{}
	for _, in := range s.insts {
		if !in.alive || g.members[in.memberID] == nil {
			continue
		}
		for t := range in.owned {
			if o := runs[t]; o != nil && o.process != in.process {
				s.t.Errorf("at %d task %s runs on members %s and %s of two processes", s.now, t, o.name, in.name)
			}
			runs[t] = in
		}
	}
	holder := map[TaskID]string{}
	for _, id := range g.sortedMemberIDs() {
		m := g.members[id]
		for _, o := range []ownedTasks{m.assigned, m.pending} {
			for t := range o.active {
				if p, ok := holder[t]; ok && p != m.processID {
					s.t.Errorf("at %d task %s active on processes %s and %s", s.now, t, p, m.processID)
				}
				holder[t] = m.processID
			}
		}
	}
}

// settled runs rounds until every task is active exactly once on live
// instances and the group is stable.
func (s *migSim) settle(max int) {
	for i := 0; i < max; i++ {
		s.round()
		if s.stable() {
			return
		}
	}
	s.t.Fatalf("did not settle by %d: %s\n%s", s.now, s.describe(), s.trace.String())
}

func (s *migSim) stable() bool {
	seen := taskSet{}
	for _, in := range s.insts {
		if !in.alive || in.refused {
			continue
		}
		if in.classic && (in.rejoin || in.needSync || in.inflight) {
			return false
		}
		for t := range in.owned {
			if seen.has(t) {
				return false
			}
			seen[t] = struct{}{}
		}
	}
	if int32(len(seen)) != s.tasks {
		return false
	}
	switch g := s.c.groups["g"].(type) {
	case *streamsGroup:
		return g.state == StreamsStable
	case *classicGroup:
		return g.state == classicStable
	}
	return false
}

func (s *migSim) describe() string {
	var b strings.Builder
	g, _ := s.c.Group("g")
	if g != nil {
		fmt.Fprintf(&b, "group kind=%s state=%s\n", g.Kind(), g.StateName())
	}
	for _, in := range s.insts {
		fmt.Fprintf(&b, "%s alive=%v classic=%v gen=%d owned=[%s] rejoin=%v sync=%v refused=%v paused=%v\n", in.name, in.alive, in.classic, in.gen, formatTasks(in.owned), in.rejoin, in.needSync, in.refused, in.paused)
	}
	return b.String() + s.c.Dump()
}

// replayCheck proves the log rebuilds the live durable state.
func (s *migSim) replayCheck() {
	r, err := replayLog(s.c.cfg, s.log)
	if err != nil {
		s.t.Fatalf("replay: %v", err)
	}
	if a, b := s.c.Dump(), r.Dump(); a != b {
		s.t.Fatalf("replayed state differs:\nlive:\n%s\nreplayed:\n%s", a, b)
	}
}

// TestMigrationRollingUpgrade: a 3-member classic Streams
// group is upgraded by replacing each instance with a streams-protocol one
// of the same process id (no LeaveGroup: classic Streams does not send
// one), checking the invariants after every request.
func TestMigrationRollingUpgrade(t *testing.T) {
	s := newMigSim(t, 6)
	var classic []*migInst
	for i := 1; i <= 3; i++ {
		classic = append(classic, s.inst(fmt.Sprintf("c%d", i), byte(i), true))
	}
	s.settle(20)
	if g, _ := s.c.Group("g"); g.Kind() != GroupKindClassic {
		t.Fatalf("start: %s", s.describe())
	}
	for i, old := range classic {
		old.alive = false // stopped without LeaveGroup
		s.inst(fmt.Sprintf("s%d", i+1), byte(i+1), false)
		s.settle(40)
		s.replayCheck()
		g, _ := s.c.Group("g")
		if g.Kind() != GroupKindStreams {
			t.Fatalf("after replacing %s: %s", old.name, s.describe())
		}
	}
	g := s.c.groups["g"].(*streamsGroup)
	for _, m := range g.members {
		if m.classic != nil {
			t.Fatalf("classic member left: %s", s.describe())
		}
	}
	if len(g.members) != 3 {
		t.Fatalf("members: %s", s.describe())
	}
}

// TestMigrationRollback: the reverse roll from a streams
// group back to classic, ending as a classic group with a classic leader.
func TestMigrationRollback(t *testing.T) {
	s := newMigSim(t, 6)
	var streams []*migInst
	for i := 1; i <= 3; i++ {
		streams = append(streams, s.inst(fmt.Sprintf("s%d", i), byte(i), false))
	}
	s.settle(20)
	for i, old := range streams {
		s.inst(fmt.Sprintf("c%d", i+1), byte(i+1), true)
		s.settle(40)
		// The streams instance shuts down with a leave heartbeat.
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID, req.MemberEpoch = "g", old.memberID, -1
		old.alive = false
		s.finish(s.c.streamsGroupHeartbeat(s.now, s.req(old), ClientInfo{}, req))
		s.settle(40)
		s.replayCheck()
	}
	cg, ok := s.c.groups["g"].(*classicGroup)
	if !ok || cg.leader == nil || cg.state != classicStable || len(cg.members) != 3 {
		t.Fatalf("end: %s", s.describe())
	}
}

func (s *migSim) debugf(format string, args ...any) {
	if *migrationDebug || s.rng != nil || s.recording {
		fmt.Fprintf(&s.trace, "@%d "+format+"\n", append([]any{s.now}, args...)...)
	}
}

var migrationSeed = flag.Uint64("migration-seed", 0, "seed for TestMigrationPropertyTrace")

var migrationDebug = flag.Bool("migration-debug", false, "trace the migration simulation")

// fmtAssignmentInfo renders a classic Streams SyncGroup assignment.
func fmtAssignmentInfo(b []byte, now int64) string {
	a, err := userdata.DecodeAssignment(b)
	if err != nil {
		return "undecodable: " + err.Error()
	}
	info, err := userdata.DecodeAssignmentInfo(a.UserData)
	if err != nil {
		return "undecodable info: " + err.Error()
	}
	var parts, stand, hosts []string
	for _, t := range a.Topics {
		for _, p := range t.Partitions {
			parts = append(parts, fmt.Sprintf("%s-%d", t.Topic, p))
		}
	}
	for _, st := range info.StandbyTasks {
		stand = append(stand, st.Task.String())
	}
	for _, h := range info.PartitionsByHost {
		hosts = append(hosts, fmt.Sprintf("%s:%d=%v", h.Host, h.Port, h.Partitions))
	}
	next := "none"
	if info.NextRebalanceMs != userdata.NoRebalance {
		next = fmt.Sprintf("now%+d", info.NextRebalanceMs-now)
	}
	return fmt.Sprintf("v%d/%d partitions=%v active=%v standby=%v err=%d next=%s hosts=%v",
		info.Version, info.CommonlySupportedVersion, parts, info.ActiveTasks, stand, info.ErrorCode, next, hosts)
}

// useHA makes the sim answer assignor runs with the real HA assignor
// through the native ABI adapter (toABI/fromABI), with a stateful topology
// (changelog store-changelog) and the scenario's warm-up settings:
// standbys=, warmups=, acceptable-lag=, probing-interval=.
func (s *migSim) useHA(t *testing.T, args map[string]string) {
	o := StreamsGroupOverrides{}
	if v, ok := args["warmups"]; ok {
		n, _ := strconv.Atoi(v)
		x := int32(n)
		o.NumWarmupReplicas = &x
	}
	if v, ok := args["standbys"]; ok {
		n, _ := strconv.Atoi(v)
		x := int32(n)
		o.NumStandbyReplicas = &x
	}
	if v, ok := args["acceptable-lag"]; ok {
		n, _ := strconv.ParseInt(v, 10, 64)
		o.AcceptableRecoveryLag = &n
	}
	if v, ok := args["probing-interval"]; ok {
		n, _ := strconv.ParseInt(v, 10, 64)
		o.ProbingIntervalMs = &n
	}
	s.setGroupConfig(o)
	s.topology.Subtopologies[0].StateChangelogTopics = []kmsg.TopicInfo{{Topic: "store-changelog"}}
	s.setTopics([]TopicMetadata{{Name: "in", Partitions: s.tasks}, {Name: "store-changelog", Partitions: s.tasks}})
	s.assign = func(in AssignInput) AssignResult {
		res, _, _, err := haAssign(AssignorRun{Group: "g", Input: in})
		if err != nil {
			t.Fatalf("HA assignor: %v", err)
		}
		return res
	}
}

// useStandbys gives the reference assignor n standby replicas of a
// stateful topology (changelog store-changelog).
func (s *migSim) useStandbys(n int32) {
	s.setGroupConfig(StreamsGroupOverrides{NumStandbyReplicas: &n})
	s.topology.Subtopologies[0].StateChangelogTopics = []kmsg.TopicInfo{{Topic: "store-changelog"}}
	s.setTopics([]TopicMetadata{{Name: "in", Partitions: s.tasks}, {Name: "store-changelog", Partitions: s.tasks}})
}

func (s *migSim) setGroupConfig(o StreamsGroupOverrides) {
	s.overrides = &o
	s.c.setStreamsGroupConfig("g", o)
}

func (s *migSim) setTopics(topics []TopicMetadata) {
	s.topics = topics
	s.finish(s.c.updateTopics(s.now, topics))
}
