package core

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The property test drives a streams group with random joins, heartbeats,
// leaves, crashes, clock ticks, topic changes, delayed, stale and failing
// assignor results and failed appends, with misbehaving simulated clients
// (revocations applied several heartbeats late, lost responses, resent
// stale requests, null owned lists). After every step it checks invariants
// on the coordinator's own state; the whole run is traced, and running a
// seed twice must give byte-identical traces.

var (
	propSeeds = flag.Int("prop.seeds", 1000, "number of property-test seeds")
	propSteps = flag.Int("prop.steps", 120, "steps per property-test seed")
	propSeed  = flag.Int("prop.seed", -1, "run only this seed and print its trace")
)

func TestStreamsProperty(t *testing.T) {
	seeds, steps := *propSeeds, *propSteps
	if testing.Short() {
		seeds = 200
	}
	if *propSeed >= 0 {
		trace, err := runProperty(uint64(*propSeed), steps)
		t.Log(trace)
		if err != nil {
			t.Fatal(err)
		}
		return
	}
	for seed := 0; seed < seeds; seed++ {
		trace, err := runProperty(uint64(seed), steps)
		if err != nil {
			t.Fatalf("seed %d: %v\n(rerun: go test ./core -run TestStreamsProperty -prop.seed=%d -v)\ntrace tail:\n%s",
				seed, err, seed, tail(trace, 6000))
		}
	}
}

func TestStreamsPropertyDeterministic(t *testing.T) {
	for seed := uint64(0); seed < 5; seed++ {
		a, errA := runProperty(seed, *propSteps)
		b, errB := runProperty(seed, *propSteps)
		if a != b || fmt.Sprint(errA) != fmt.Sprint(errB) {
			t.Fatalf("seed %d: two runs differ (%d vs %d bytes of trace)", seed, len(a), len(b))
		}
		if len(a) < 1000 {
			t.Fatalf("seed %d: trace suspiciously short:\n%s", seed, a)
		}
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// propClient is a simulated Kafka Streams member.
type propClient struct {
	group      string
	name       string
	memberID   string
	process    string
	instance   *string
	joined     bool
	crashed    bool
	epoch      int32
	generation int
	owned      taskSet        // active tasks it actually runs
	standby    taskSet        // standby tasks
	warmup     taskSet        // warm-up tasks
	lateDrop   map[TaskID]int // active tasks it should have dropped: heartbeats left
	lateBy     int            // how many heartbeats late this client revokes (0 = on time)
	lastReq    *kmsg.StreamsGroupHeartbeatRequest
	inflight   bool
}

type propSim struct {
	rng       *rand.Rand
	wrng      *rand.Rand // warm-up extension's own stream, so rng's sequence is unchanged
	c         *Coordinator
	cfg       Config
	now       int64
	trace     strings.Builder
	log       []records.Record
	clients   []*propClient
	byReq     map[RequestID]*propClient
	reqReport map[RequestID]taskSet // active tasks each request reported (nil: not reported)
	reports   map[string]taskSet    // member id -> active tasks of its last accepted report
	runs      []AssignorRun
	nextReq   RequestID
	partsIn   int32
	last      map[string]propSnapshot
	reqMember map[RequestID]string // member id each request was sent as
	before    map[string]taskSet   // committed active tasks per member before the step
	err       error
	topics    []TopicMetadata
}

// propSnapshot holds committed epochs, to check they never go backwards.
type propSnapshot struct {
	groupEpoch, assignmentEpoch int32
	members                     map[string]int32
}

func runProperty(seed uint64, steps int) (string, error) { return runPropertySliced(seed, steps, 0) }

// runPropertySliced runs a seed with assignor results written slice
// members at a time (0: the default).
func runPropertySliced(seed uint64, steps, slice int) (string, error) {
	s := newPropSim(seed)
	s.c.targetSlice = slice
	for i := 0; i < steps; i++ {
		fmt.Fprintf(&s.trace, "-- step %d now=%d\n", i, s.now)
		s.before = s.activeByMember()
		s.step()
		if err := s.check(i%20 == 19 || i == steps-1); err != nil {
			return s.trace.String(), fmt.Errorf("step %d: %w", i, err)
		}
	}
	return s.trace.String(), nil
}

func newPropSim(seed uint64) *propSim {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	cfg := DefaultConfig()
	cfg.Streams.InitialRebalanceDelayMs = []int32{0, 3000}[rng.IntN(2)]
	cfg.Streams.AssignmentIntervalMs = []int32{0, 1000}[rng.IntN(2)]
	cfg.Streams.NumStandbyReplicas = int32(rng.IntN(2))
	cfg.AssignorWaitMs = []int64{0, 500}[rng.IntN(2)]
	wrng := rand.New(rand.NewPCG(seed, 0x3a1))
	cfg.Streams.ProbingIntervalMs = []int64{0, 5000, 600000}[wrng.IntN(3)]
	cfg.Streams.AcceptableRecoveryLag = []int64{100, 10000}[wrng.IntN(2)]
	c, err := New(cfg)
	if err != nil {
		panic(err)
	}
	s := &propSim{rng: rng, wrng: wrng, c: c, cfg: cfg, byReq: map[RequestID]*propClient{}, reqReport: map[RequestID]taskSet{},
		reports: map[string]taskSet{}, reqMember: map[RequestID]string{}, partsIn: 4, last: map[string]propSnapshot{}}
	n := 3 + rng.IntN(4)
	for i := 0; i < n; i++ {
		cl := &propClient{group: []string{"g", "h"}[i%2], name: fmt.Sprintf("c%d", i), process: fmt.Sprintf("p%d", i%3),
			lateBy: []int{0, 0, 1, 3}[rng.IntN(4)]}
		if rng.IntN(3) == 0 {
			inst := fmt.Sprintf("i%d", i)
			cl.instance = &inst
		}
		cl.memberID = cl.name + "-0"
		s.clients = append(s.clients, cl)
	}
	fmt.Fprintf(&s.trace, "seed=%d config=%+v clients=%d\n", seed, cfg.Streams, n)
	s.setTopics()
	return s
}

func (s *propSim) setTopics() {
	topics := []TopicMetadata{{Name: "in", Partitions: s.partsIn}, {Name: "in2", Partitions: 2}}
	if s.rng.IntN(5) > 0 {
		topics = append(topics, TopicMetadata{Name: "store-changelog", Partitions: s.partsIn})
	}
	fmt.Fprintf(&s.trace, "topics in=%d changelog=%v\n", s.partsIn, len(topics) == 3)
	s.topics = topics
	s.finish(s.c.updateTopics(s.now, topics))
}

var propTopology = &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: 0, Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
	{SubtopologyID: "0", SourceTopics: []string{"in"}, StateChangelogTopics: []kmsg.TopicInfo{{Topic: "store-changelog"}}},
	{SubtopologyID: "1", SourceTopics: []string{"in2"}},
}}

func (s *propSim) step() {
	switch r := s.rng.IntN(100); {
	case r < 55:
		s.heartbeat(s.clients[s.rng.IntN(len(s.clients))])
	case r < 60:
		s.leave(s.clients[s.rng.IntN(len(s.clients))])
	case r < 64:
		s.crash(s.clients[s.rng.IntN(len(s.clients))])
	case r < 78:
		s.advance(int64(s.rng.IntN(20000)))
	case r < 81:
		s.partsIn = []int32{4, 6, 8}[s.rng.IntN(3)]
		s.setTopics()
	case r < 96:
		s.answerRun()
	case r < 98:
		s.failover()
	default:
		s.resendStale(s.clients[s.rng.IntN(len(s.clients))])
	}
}

// finish commits the output (or, 6% of the time, fails the append) and
// delivers the released responses.
func (s *propSim) finish(o Output) {
	if err := eventsExplain(o); err != nil && s.err == nil {
		s.err = err
	}
	s.runs = append(s.runs, o.AssignorRuns...)
	s.trace.WriteString(fmtEffects(o, false))
	if len(o.Records) > 0 && s.rng.IntN(100) < 6 {
		ro := s.c.Rollback()
		s.trace.WriteString("append failed: rolled back\n")
		s.runs = append(s.runs, ro.AssignorRuns...)
		for _, r := range o.Responses {
			s.fail(r.Request)
		}
		for _, id := range ro.Failed {
			s.fail(id)
		}
		return
	}
	s.c.Commit()
	s.log = append(s.log, o.Records...)
	for _, r := range o.Responses {
		s.deliver(r)
	}
}

func (s *propSim) fail(id RequestID) {
	if cl := s.byReq[id]; cl != nil {
		cl.inflight = false
		fmt.Fprintf(&s.trace, "response %s: NOT_COORDINATOR (failed append)\n", cl.memberID)
	}
}

func (s *propSim) heartbeat(cl *propClient) {
	if cl.crashed {
		if s.rng.IntN(3) > 0 {
			return
		}
		cl.crashed, cl.joined = false, false
		cl.owned, cl.standby, cl.lateDrop = taskSet{}, taskSet{}, nil
		if cl.instance == nil { // a restarted dynamic member has a new id
			cl.generation++
			cl.memberID = fmt.Sprintf("%s-%d", cl.name, cl.generation)
		}
	}
	if cl.inflight {
		return
	}
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.InstanceID = cl.group, cl.memberID, cl.instance
	if !cl.joined {
		req.MemberEpoch = 0
		req.RebalanceTimeoutMillis = 30000
		p := cl.process
		req.ProcessID = &p
		req.Topology = propTopology
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	} else {
		req.MemberEpoch = cl.epoch
		if s.rng.IntN(8) > 0 { // sometimes null: "unchanged"
			req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = kmsgTasks(cl.owned), kmsgTasks(cl.standby), kmsgTasks(cl.warmup)
		}
		if s.wrng.IntN(4) == 0 { // restoring tasks report lags (warm-up lifecycle)
			s.reportOffsets(cl, req)
		}
		for t := range cl.lateDrop { // a late revoker counts down per heartbeat
			if cl.lateDrop[t]--; cl.lateDrop[t] <= 0 {
				delete(cl.lateDrop, t)
				delete(cl.owned, t)
			}
		}
	}
	cl.lastReq = req
	s.send(cl, req)
}

func (s *propSim) send(cl *propClient, req *kmsg.StreamsGroupHeartbeatRequest) {
	s.nextReq++
	s.byReq[s.nextReq] = cl
	s.reqMember[s.nextReq] = cl.memberID
	if req.ActiveTasks != nil {
		s.reqReport[s.nextReq] = ownedFromRequest(req).active
	}
	cl.inflight = true
	fmt.Fprintf(&s.trace, "hb %s epoch=%d reports=%s\n", cl.memberID, req.MemberEpoch, fmtReport(req))
	s.finish(s.c.streamsGroupHeartbeat(s.now, s.nextReq, ClientInfo{ClientID: cl.name}, req))
}

func fmtReport(req *kmsg.StreamsGroupHeartbeatRequest) string {
	if req.ActiveTasks == nil {
		return "null"
	}
	return fmtKmsgTasks(req.ActiveTasks)
}

// resendStale replays a client's last request (a duplicated, delayed packet
// carrying an old epoch and owned set).
func (s *propSim) resendStale(cl *propClient) {
	if cl.lastReq == nil || !cl.joined || cl.lastReq.MemberEpoch <= 0 {
		return
	}
	fmt.Fprintf(&s.trace, "stale resend by %s\n", cl.memberID)
	req := *cl.lastReq
	s.nextReq++
	s.byReq[s.nextReq] = nil // the client does not expect this response
	if req.ActiveTasks != nil {
		s.reqReport[s.nextReq] = ownedFromRequest(&req).active
	}
	s.reqMember[s.nextReq] = cl.memberID
	s.finish(s.c.streamsGroupHeartbeat(s.now, s.nextReq, ClientInfo{ClientID: cl.name}, &req))
}

func (s *propSim) leave(cl *propClient) {
	if !cl.joined || cl.inflight || cl.crashed {
		return
	}
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.InstanceID, req.MemberEpoch = cl.group, cl.memberID, cl.instance, -1
	if cl.instance != nil && s.rng.IntN(2) == 0 {
		req.MemberEpoch = -2
	}
	s.send(cl, req)
	cl.joined = false
	cl.owned, cl.standby, cl.lateDrop = taskSet{}, taskSet{}, nil
	if req.MemberEpoch == -2 {
		cl.crashed = true // it will come back under a new member id... or the same
	}
}

func (s *propSim) crash(cl *propClient) {
	if cl.crashed {
		return
	}
	fmt.Fprintf(&s.trace, "crash %s\n", cl.memberID)
	cl.crashed, cl.inflight, cl.joined = true, false, false
	cl.owned, cl.standby, cl.lateDrop = taskSet{}, taskSet{}, nil
}

// failover replaces the coordinator by one rebuilt from the durable log, as
// after a crash: parked heartbeats and outstanding runs are lost (their
// connections close), Loaded reschedules timers and re-requests runs.
func (s *propSim) failover() {
	fresh, err := replayLog(s.cfg, s.log)
	if err != nil {
		s.err = fmt.Errorf("fail-over replay: %w", err)
		return
	}
	s.trace.WriteString("fail-over\n")
	fresh.targetSlice = s.c.targetSlice
	s.c, s.runs = fresh, nil
	s.c.updateTopics(s.now, s.topics)
	s.c.Commit()
	for _, cl := range s.clients {
		cl.inflight = false
	}
	s.finish(s.c.Loaded(s.now))
}

// advance moves the clock, firing timers at their deadlines.
func (s *propSim) advance(ms int64) {
	target := s.now + ms
	for {
		d, ok := s.c.NextDeadline()
		if !ok || d > target {
			break
		}
		if d > s.now {
			s.now = d
		}
		fmt.Fprintf(&s.trace, "tick @%d\n", s.now)
		s.finish(s.c.tick(s.now))
	}
	s.now = target
}

// answerRun answers a random outstanding run: with the reference
// assignor, with an error, or not yet (it stays outstanding).
func (s *propSim) answerRun() {
	if len(s.runs) == 0 {
		return
	}
	i := s.rng.IntN(len(s.runs))
	run := s.runs[i]
	s.runs = append(s.runs[:i:i], s.runs[i+1:]...)
	if s.rng.IntN(10) == 0 {
		fmt.Fprintf(&s.trace, "assignor epoch=%d fails\n", run.Epoch)
		s.finish(s.c.assignorResult(s.now, run, AssignResult{}, fmt.Errorf("trap")))
		return
	}
	if s.wrng.IntN(4) == 0 { // the real HA assignor (warm-ups, probe hints)
		res, _, _, err := haAssign(run)
		fmt.Fprintf(&s.trace, "ha assignor epoch=%d probe=%v err=%v\n", run.Epoch, run.Probe, err)
		s.finish(s.c.assignorResult(s.now, run, res, err))
		return
	}
	res := ReferenceAssign(run.Input)
	if s.rng.IntN(3) == 0 { // a warm-up-producing assignor (coordhost allows it)
		for i := range res.Members {
			res.Members[i].Warmup, res.Members[i].Standby = res.Members[i].Standby, []TaskRef{}
		}
	}
	fmt.Fprintf(&s.trace, "assignor epoch=%d answers\n", run.Epoch)
	s.finish(s.c.assignorResult(s.now, run, res, nil))
}

// propGroups are the groups the simulated clients join (alternately).
var propGroups = []string{"g", "h"}

// activeByMember returns each member's assigned and pending active tasks,
// over all groups (member ids are unique across groups).
func (s *propSim) activeByMember() map[string]taskSet {
	out := map[string]taskSet{}
	for _, gid := range propGroups {
		g, ok := s.c.groups[gid].(*streamsGroup)
		if !ok {
			continue
		}
		s.collectActive(g, out)
	}
	return out
}

func (s *propSim) collectActive(g *streamsGroup, out map[string]taskSet) {
	for id, m := range g.members {
		ts := taskSet{}
		for t := range m.assigned.active {
			ts[t] = struct{}{}
		}
		for t := range m.pending.active {
			ts[t] = struct{}{}
		}
		out[id] = ts
	}
}

// memberGroup returns the group a member id belongs to, if it is a member.
func (s *propSim) memberGroup(member string) *streamsGroup {
	for _, gid := range propGroups {
		if g, ok := s.c.groups[gid].(*streamsGroup); ok && g.members[member] != nil {
			return g
		}
	}
	return nil
}

// deliver hands a released response to its client (unless it is lost) and
// checks that no task it newly grants is still reported by another member.
func (s *propSim) deliver(r Response) {
	resp := r.Msg.(*kmsg.StreamsGroupHeartbeatResponse)
	member := s.reqMember[r.Request]
	fmt.Fprintf(&s.trace, "%s\n", fmtResponse("response "+member, resp))
	if resp.ErrorCode == 0 && resp.MemberEpoch < 0 {
		// A leaving Streams client has closed its tasks before leaving.
		s.reports[member] = taskSet{}
	}
	if resp.ErrorCode == 0 && resp.MemberEpoch >= 0 {
		if rep, ok := s.reqReport[r.Request]; ok {
			s.reports[member] = rep
		}
		if resp.ActiveTasks != nil {
			s.checkGrants(member, resp)
		}
	}
	cl := s.byReq[r.Request]
	if cl == nil || cl.memberID != member || cl.crashed {
		return // a stale resend, or a client that crashed or restarted meanwhile
	}
	cl.inflight = false
	if s.rng.IntN(10) == 0 {
		s.trace.WriteString("  (lost)\n")
		return
	}
	s.apply(cl, resp)
}

func (s *propSim) checkGrants(member string, resp *kmsg.StreamsGroupHeartbeatResponse) {
	for _, ids := range resp.ActiveTasks {
		for _, p := range ids.Partitions {
			t := TaskID{ids.SubtopologyID, p}
			if s.before[member].has(t) {
				continue
			}
			mine := s.memberGroup(member)
			for other, rep := range s.reports {
				if og := s.memberGroup(other); og == nil || og != mine {
					continue // fenced, gone, or another group: fencing is what frees its tasks
				}
				if other != member && rep.has(t) && s.err == nil {
					s.err = fmt.Errorf("response to %s grants %s while %s's last report still includes it", member, t, other)
				}
			}
		}
	}
}

// apply updates a client from its response.
func (s *propSim) apply(cl *propClient, resp *kmsg.StreamsGroupHeartbeatResponse) {
	switch resp.ErrorCode {
	case 0:
	case 110, 25: // fenced / unknown member: drop everything and rejoin
		cl.joined, cl.owned, cl.standby, cl.lateDrop = false, taskSet{}, taskSet{}, nil
		return
	case 82, 111: // static identity conflicts are fatal for the instance
		cl.crashed, cl.joined, cl.owned, cl.standby, cl.lateDrop = true, false, taskSet{}, taskSet{}, nil
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
	next := taskSet{}
	for _, ids := range resp.ActiveTasks {
		for _, p := range ids.Partitions {
			next[TaskID{ids.SubtopologyID, p}] = struct{}{}
		}
	}
	if cl.owned == nil {
		cl.owned = taskSet{}
	}
	if cl.lateDrop == nil {
		cl.lateDrop = map[TaskID]int{}
	}
	for t := range cl.owned {
		if !next.has(t) {
			if cl.lateBy == 0 {
				delete(cl.owned, t)
			} else if _, ok := cl.lateDrop[t]; !ok {
				cl.lateDrop[t] = cl.lateBy
			}
		}
	}
	for t := range next {
		cl.owned[t] = struct{}{}
		delete(cl.lateDrop, t)
	}
	cl.standby = fromKmsgTasks(resp.StandbyTasks)
	cl.warmup = fromKmsgTasks(resp.WarmupTasks)
}

func fromKmsgTasks(ids []kmsg.TaskIDs) taskSet {
	out := taskSet{}
	for _, id := range ids {
		for _, p := range id.Partitions {
			out[TaskID{id.SubtopologyID, p}] = struct{}{}
		}
	}
	return out
}

// check verifies the invariants on the coordinator's committed state.
func (s *propSim) check(replay bool) error {
	if s.err != nil {
		return s.err
	}
	if len(s.c.undo) != 0 {
		return fmt.Errorf("undo log not empty after commit")
	}
	for id := range s.reports { // reports of members that left no longer count
		if s.memberGroup(id) == nil {
			delete(s.reports, id)
		}
	}
	for _, gid := range propGroups {
		g, ok := s.c.groups[gid].(*streamsGroup)
		if !ok {
			continue
		}
		holder := map[TaskID]string{}
		active := map[string]taskSet{}
		s.collectActive(g, active)
		for _, id := range g.sortedMemberIDs() {
			for t := range active[id] {
				if other, dup := holder[t]; dup {
					return fmt.Errorf("group %s: active task %s held by %s and %s", gid, t, other, id)
				}
				holder[t] = id
			}
		}
		if err := checkIndexes(g); err != nil {
			return err
		}
		if err := s.checkEpochs(g); err != nil {
			return err
		}
	}
	if replay {
		return s.checkReplay()
	}
	return nil
}

// checkIndexes rebuilds the ownership indexes from the members.
func checkIndexes(g *streamsGroup) error {
	fresh := newStreamsGroup(g.id)
	for _, id := range g.sortedMemberIDs() {
		fresh.index(g.members[id])
	}
	var b1, b2 strings.Builder
	fmt.Fprint(&b1, sortedOwners(g.activeOwner), formatOwners(g.standbyOwners), formatOwners(g.warmupOwners))
	fmt.Fprint(&b2, sortedOwners(fresh.activeOwner), formatOwners(fresh.standbyOwners), formatOwners(fresh.warmupOwners))
	if b1.String() != b2.String() {
		return fmt.Errorf("ownership index drifted:\n have %s\n want %s", b1.String(), b2.String())
	}
	for _, m := range g.members {
		fresh.classicMembers += m.isClassic()
	}
	if fresh.classicMembers != g.classicMembers {
		return fmt.Errorf("classic member count drifted: have %d, want %d", g.classicMembers, fresh.classicMembers)
	}
	for id := range g.target {
		fresh.target[id] = g.target[id]
		fresh.indexWarmupTarget(id)
	}
	if fmt.Sprint(fresh.warmupTargets) != fmt.Sprint(g.warmupTargets) {
		return fmt.Errorf("warm-up target index drifted:\n have %v\n want %v", g.warmupTargets, fresh.warmupTargets)
	}
	return nil
}

func sortedOwners(m map[TaskID]string) string {
	var out []string
	for t, p := range m {
		out = append(out, t.String()+":"+p)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func (s *propSim) checkEpochs(g *streamsGroup) error {
	last := s.last[g.id]
	if g.groupEpoch < last.groupEpoch || g.assignmentEpoch < last.assignmentEpoch {
		return fmt.Errorf("group %s epochs went backwards: %d/%d after %d/%d", g.id, g.groupEpoch, g.assignmentEpoch,
			last.groupEpoch, last.assignmentEpoch)
	}
	if g.assignmentEpoch > g.groupEpoch {
		return fmt.Errorf("assignment epoch %d ahead of group epoch %d", g.assignmentEpoch, g.groupEpoch)
	}
	next := map[string]int32{}
	for id, m := range g.members {
		if old, ok := last.members[id]; ok && m.epoch < old && m.epoch != staticLeaveEpoch {
			return fmt.Errorf("member %s epoch went backwards: %d after %d", id, m.epoch, old)
		}
		if m.epoch > g.assignmentEpoch {
			return fmt.Errorf("member %s epoch %d ahead of assignment epoch %d", id, m.epoch, g.assignmentEpoch)
		}
		next[id] = m.epoch
	}
	s.last[g.id] = propSnapshot{groupEpoch: g.groupEpoch, assignmentEpoch: g.assignmentEpoch, members: next}
	return nil
}

// checkReplay rebuilds a fresh Coordinator from the durable log as the
// store replays it (compacted: latest value per key in order of last
// write), and from the full record log as a log that was never compacted
// (Kafka's __consumer_offsets before the cleaner ran) would replay; both
// must equal the live state.
func (s *propSim) checkReplay() error {
	compacted, err := replayLog(s.cfg, s.log)
	if err != nil {
		return err
	}
	if live, replayed := s.c.Dump(), compacted.Dump(); live != replayed {
		return fmt.Errorf("state replayed from the compacted log differs from live state:\nlive:\n%s\nreplayed:\n%s", live, replayed)
	}
	full, _ := New(s.cfg)
	for i, r := range s.log {
		k, v := records.EncodeRecord(r)
		if err := full.ReplayBytes(k, v); err != nil {
			return fmt.Errorf("replay of record %d (%s): %w", i, fmtRecord(r), err)
		}
	}
	if live, replayed := s.c.Dump(), full.Dump(); live != replayed {
		return fmt.Errorf("state replayed from the full log differs from live state:\nlive:\n%s\nreplayed:\n%s", live, replayed)
	}
	return nil
}

// reportOffsets adds changelog offsets for the client's standby and warm-up
// tasks to req (end offset 1000, sometimes reported by the member,
// sometimes supplied by the host through UpdateEndOffsets).
func (s *propSim) reportOffsets(cl *propClient, req *kmsg.StreamsGroupHeartbeatRequest) {
	req.TaskOffsets, req.TaskEndOffsets = []kmsg.TaskOffset{}, []kmsg.TaskOffset{}
	var ends []TaskEndOffset
	for _, set := range []taskSet{cl.standby, cl.warmup} {
		for _, t := range set.sorted() {
			req.TaskOffsets = append(req.TaskOffsets, kmsg.TaskOffset{SubtopologyID: t.Subtopology, Partition: t.Partition, Offset: int64(s.wrng.IntN(1001))})
			if s.wrng.IntN(2) == 0 {
				req.TaskEndOffsets = append(req.TaskEndOffsets, kmsg.TaskOffset{SubtopologyID: t.Subtopology, Partition: t.Partition, Offset: 1000})
			} else {
				ends = append(ends, TaskEndOffset{Task: t, Offset: 1000})
			}
		}
	}
	if len(ends) > 0 {
		fmt.Fprintf(&s.trace, "host end offsets %s: %d tasks\n", cl.group, len(ends))
		s.finish(s.c.updateEndOffsets(s.now, cl.group, ends))
	}
}
