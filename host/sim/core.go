package sim

// The core engine: a scenario replayed on coordhost's own coordinator.
// Members are simulated Kafka Streams clients that send
// StreamsGroupHeartbeat requests to core (package core) in virtual time;
// core decides when a target is computed (joins, leaves, session
// timeouts, probes) and hands the assignor the input the host would
// (host/assign.ToABI), and the members take the tasks core's heartbeat
// responses give them. What stays the simulator's own is the client side:
// local state, restoring, changelogs and the accounting (step.go).

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/metrics"
	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/assign"
)

// coreEpochMs is the virtual wall clock core sees at the scenario's 0 s.
const coreEpochMs = 1_700_000_000_000

// coreGroup is the streams group's id in core.
const coreGroup = "sim"

// ErrCoreUnsupported is returned by RunCore for a scenario that uses
// what the core engine does not simulate yet.
var ErrCoreUnsupported = errors.New("not supported by the core engine yet")

// RunCore replays sc against each assignor on the real coordinator and
// returns the report, in the same form as Run's. A scenario that uses what
// the core engine does not simulate (classic members, coordhost
// restarts, a starting assignment, recorded inputs) is refused with
// ErrCoreUnsupported.
func RunCore(sc *Scenario, assignors []Assignor) (*Report, error) {
	if err := coreSupports(sc); err != nil {
		return nil, err
	}
	if err := coreSupportsRecorded(sc); err != nil {
		return nil, err
	}
	r := &Report{Scenario: sc.Name, Seed: sc.Seed, DurationS: sc.DurationS, TickMs: sc.TickMs,
		Tasks: int(abi.NewTaskSpace(sc.subs).Total()), RestorePerS: sc.State.RestorePerS, SharedRestore: sc.State.SharedRestore,
		Engine: "core"}
	for _, a := range assignors {
		cw, err := newCoreWorld(sc, a)
		if err != nil {
			return nil, err
		}
		r.Assignors = append(r.Assignors, cw.run())
	}
	return r, nil
}

// coreSupports refuses what the core engine does not simulate.
func coreSupports(sc *Scenario) error {
	switch {
	case !slices.IsSortedFunc(sc.subs, func(a, b abi.Subtopology) int { return strings.Compare(a.ID, b.ID) }):
		return fmt.Errorf("subtopologies: ids not in sorted order are %w", ErrCoreUnsupported)
	}
	return nil
}

// coreWorld is one assignor's replay on core: the model's client side
// (world) with core deciding targets and reconciliation.
type coreWorld struct {
	*world
	c       *core.Coordinator
	ts      abi.TaskSpace
	topics  []core.TopicMetadata
	clients []*coreClient // in the group, by join order
	byReq   map[core.RequestID]*coreClient
	nextReq core.RequestID
	now     int64 // scenario time of the step in progress
	reasons []string
	err     error
	// inPrelude: the members of the starting point are joining before
	// 0 s (prelude); recReport: per member id, its last report carried
	// the recording's offsets (recordedReports).
	inPrelude bool
	recReport map[string]bool
	// paired are, per task core's targets moved, the recorded move
	// paired with its latest move (pairMove).
	paired map[int32]move
	// live: every member took its part of the baseline target; the
	// accounting starts (the model's starting point).
	live bool
	// writing: the assignor result core is writing in slices, nil: none.
	writing *writing
	// offs and ends are a member's offsets being sent (taskOffsets).
	offs, ends []int64

	classicState // core_classic.go
	coreRestart  // core_restart.go
}

// coreClient is one simulated Kafka Streams member.
type coreClient struct {
	m       *member
	epoch   int32
	joined  bool
	nextHB  int64 // scenario ms of its next heartbeat
	sentRep int64 // reportAtMs of the last report it sent (reports), -1: none
	// What it last sent, as Kafka Streams 4.4's heartbeat keeps it: its
	// task lists (listsSent), and without reports the hashes of its task
	// offsets and end offsets (offsetsHash, offsSent) and when it last
	// sent either; forgotten when it joins or a request gets no answer
	// (resetSent). offsetIntervalMs is the task-offset interval core's
	// responses gave.
	sent                abi.MemberAssignment
	listsSent, offsSent bool
	sentOffs, sentEnds  uint64
	offsetsAtMs         int64
	offsetIntervalMs    int64

	classic *classicClient // on the classic protocol; nil: streams
	// revoking are active tasks it was told to give up and still owns
	// in its heartbeats until a recorded time (revoked).
	revoking []revoking
}

func newCoreWorld(sc *Scenario, a Assignor) (*coreWorld, error) {
	cfg := core.DefaultConfig()
	s := &cfg.Streams
	s.SessionTimeoutMs = int32(ms(sc.SessionTimeoutS))
	s.HeartbeatIntervalMs = int32(sc.heartbeatIntervalMs())
	s.NumStandbyReplicas = sc.Assignment.NumStandbyReplicas
	s.NumWarmupReplicas = sc.Assignment.NumWarmupReplicas
	s.AcceptableRecoveryLag = sc.Assignment.AcceptableRecoveryLag
	s.ProbingIntervalMs = sc.Assignment.ProbingIntervalMs
	if a.Probe != nil {
		s.ProbingPolicy = coreProbingPolicy
	}
	if sc.Reports != nil {
		s.TaskOffsetIntervalMs = int32(sc.Reports.TaskOffsetIntervalMs)
	}
	c, err := core.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("core engine: %w", err)
	}
	cw := &coreWorld{world: newWorld(sc, a), c: c, ts: abi.NewTaskSpace(sc.subs), byReq: map[core.RequestID]*coreClient{}, recReport: map[string]bool{}, paired: map[int32]move{}}
	for _, sub := range sc.subs {
		cw.topics = append(cw.topics, core.TopicMetadata{Name: sourceTopic(sub.ID), ID: topicID(sourceTopic(sub.ID)), Partitions: sub.Partitions})
		if sub.Stateful {
			cw.topics = append(cw.topics, core.TopicMetadata{Name: changelogTopic(sub.ID), ID: topicID(changelogTopic(sub.ID)), Partitions: sub.Partitions})
		}
	}
	cw.prepare(cfg)
	c.Loaded(coreEpochMs)
	c.Commit()
	cw.step(core.Topics{Topics: cw.topics})
	return cw, nil
}

func sourceTopic(sub string) string    { return "sim-source-" + sub }
func changelogTopic(sub string) string { return "sim-" + sub + "-changelog" }

// topicID is a stable topic id from its name.
func topicID(name string) (id [16]byte) {
	h := splitmix(uint64(len(name)))
	for i, b := range []byte(name) {
		h = splitmix(h ^ uint64(b) ^ uint64(i)<<8)
	}
	for i := range id {
		id[i] = byte(h >> (8 * (i % 8)))
		if i == 7 {
			h = splitmix(h)
		}
	}
	return id
}

// heartbeatIntervalMs is the members' heartbeat interval (5 s, Kafka's
// group.streams.heartbeat.interval.ms, unless the scenario sets one).
func (sc *Scenario) heartbeatIntervalMs() int64 {
	if sc.HeartbeatIntervalMs > 0 {
		return sc.HeartbeatIntervalMs
	}
	return 5000
}

func (cw *coreWorld) run() AssignorReport {
	steps := cw.sc.steps
	if len(cw.sc.Initial) > 0 {
		steps = cw.prelude(steps)
	}
	tick := cw.sc.TickMs
	var carry int64
	for now := int64(0); now < cw.sc.durationMs() && cw.err == nil; now += tick {
		cw.now = now
		cw.maybeRestart()
		cw.step(core.Tick{}) // session timeouts, probes, assignment intervals
		for len(steps) > 0 && steps[0].atMs <= now {
			cw.applyStep(steps[0])
			steps = steps[1:]
		}
		cw.maybeRestart()
		cw.reportRecorded(now)
		cw.step(core.EndOffsets{Group: coreGroup, Ends: cw.hostEnds()})
		for _, cl := range slices.Clone(cw.clients) {
			if cl.classic == nil && cl.m.crashedMs < 0 && (now >= cl.nextHB || cw.recordedReportDue(cl)) {
				cw.heartbeat(cl)
			}
		}
		cw.actClassic()
		cw.checkOwned()
		cw.granting = cw.pending()
		if cw.started && cw.granting == 0 {
			cw.live = true
		}
		if cw.live {
			cw.account(now)
		}
		carry += cw.appendMs * tick
		grow := carry / 1000
		carry %= 1000
		cw.advance(now, grow)
	}
	if cw.err != nil {
		cw.out.Error = cw.err.Error()
	}
	return cw.finish()
}

// applyStep applies one scenario step: a join starts a client that
// heartbeats at once, a leave sends its leave heartbeat, a crash stops
// the client's heartbeats (core fences it after the session timeout).
func (cw *coreWorld) applyStep(s step) {
	switch s.kind {
	case stepJoin:
		cw.apply(s, nil) // core gives the reasons (event)
		m := cw.memberOrNil(s.id)
		cl := &coreClient{m: m, nextHB: cw.now, sentRep: -1}
		if m.classic {
			cl = cw.joinClassic(m)
		}
		cw.clients = append(cw.clients, cl)
	case stepLeave:
		m := cw.find(s.label)
		if cl := cw.clientOf(m); cl != nil && cl.classic != nil {
			cw.leaveClassic(cl)
			cw.drop(cl)
		} else if cl != nil {
			cw.send(cl, cw.leaveRequest(cl))
			cw.drop(cl)
		}
		cw.apply(s, nil) // core gives the reasons (event)
	case stepCoordhostRestart:
		cw.stop(s)
	default:
		cw.apply(s, nil) // core gives the reasons (event)
	}
}

func (cw *coreWorld) clientOf(m *member) *coreClient {
	for _, cl := range cw.clients {
		if cl.m == m {
			return cl
		}
	}
	return nil
}

func (cw *coreWorld) drop(cl *coreClient) {
	cw.clients = slices.DeleteFunc(cw.clients, func(x *coreClient) bool { return x == cl })
}

// step applies one input to core and handles its output: assignor runs
// are answered at once, responses go to their clients, events note the
// reasons and fenced members.
func (cw *coreWorld) step(in core.Input) {
	if cw.stopped { // coordhost is down: nothing reaches core
		return
	}
	out, err := cw.c.Step(coreEpochMs+cw.now, in)
	if err != nil {
		cw.fail(err)
		return
	}
	cw.c.Commit()
	cw.store(out.Records)
	cw.handle(out)
}

func (cw *coreWorld) fail(err error) {
	if cw.err == nil {
		cw.err = fmt.Errorf("at %v s: %s: %w", seconds(cw.now), cw.a.Name, err)
	}
}

func (cw *coreWorld) handle(out core.Output) {
	for _, e := range out.Events {
		cw.event(e)
	}
	for _, r := range out.Responses {
		if cl := cw.byReq[r.Request]; cl != nil {
			delete(cw.byReq, r.Request)
			if resp, ok := r.Msg.(*kmsg.StreamsGroupHeartbeatResponse); ok {
				cw.adopt(cl, resp)
			} else {
				cw.adoptClassic(cl, r.Msg)
			}
		}
	}
	for _, run := range out.AssignorRuns {
		cw.runAssignor(run)
	}
	for _, chk := range out.ProbeChecks {
		cw.runProbe(chk)
	}
}

// coreProbingPolicy names the assignor's probing policy to core, whatever
// the assignor's name (core only tells whether a group has one).
const coreProbingPolicy = "assignor"

// runProbe answers core's probe check with the assignor's probing policy
// at once, as the host answers it from its worker pool (a failure, or no
// answer, leaves the check to core's built-in rule, as on the host).
func (cw *coreWorld) runProbe(chk core.ProbeCheck) {
	resp, err := cw.a.Probe(assign.ProbeToABI(chk, coreEpochMs+cw.now))
	if err == nil && resp == nil {
		err = errors.New("no response")
	}
	cw.step(core.ProbeResult{Check: chk, Decision: assign.ProbeFromABI(resp, err)})
}

// event notes why core rebalances, and removes a fenced member.
func (cw *coreWorld) event(e core.Event) {
	label := cw.labelOf[e.Member]
	switch e.Kind {
	case core.EventMemberJoined:
		cw.reasons = append(cw.reasons, "member-joined:"+label)
	case core.EventMemberLeft:
		cw.reasons = append(cw.reasons, "member-left:"+label)
	case core.EventGroupConverted:
		switch e.Reason {
		case core.ReasonOnlineToStreams:
			cw.reasons = append(cw.reasons, "group-converted:streams")
			cw.out.Conversions = append(cw.out.Conversions, Conversion{AtS: seconds(cw.now), To: "streams"})
		case core.ReasonOnlineToClassic:
			// No rebalance comes with it (the settled downgrade).
			cw.out.Conversions = append(cw.out.Conversions, Conversion{AtS: seconds(cw.now), To: "classic"})
		}
	case core.EventTargetPart:
		if cw.writing != nil && e.Epoch == cw.writing.run.Epoch {
			cw.writing.progressed = true
		}
	case core.EventTargetAssigned:
		if w := cw.writing; w != nil && e.Epoch == w.run.Epoch {
			cw.writing = nil
			cw.installed(w.run, e.Epoch, w.req, w.resp)
		}
	case core.EventMemberFenced:
		cw.reasons = append(cw.reasons, "member-fenced:"+label)
		for _, cl := range cw.clients {
			if cl.m.id == e.Member {
				cw.drop(cl)
				cw.remove(cl.m)
				break
			}
		}
	}
}

// runAssignor runs the assignor as the host does (host/assign's ABI
// translation) and hands the result back to core; a target core installs
// is recorded as a rebalance.
func (cw *coreWorld) runAssignor(run core.AssignorRun) {
	req, ts := assign.ToABI(run)
	resp, err := cw.answer(req)
	if err == nil {
		err = abi.ValidateAssignment(req, resp)
	}
	var res core.AssignResult
	if err == nil {
		res, err = assign.FromABI(ts, resp, len(run.Input.Members))
	}
	if err != nil {
		cw.fail(fmt.Errorf("epoch %d: %w", run.Epoch, err))
		return
	}
	if run.Probe && cw.started {
		cw.out.Totals.ProbingRounds++
	}
	out, err := cw.c.Step(coreEpochMs+cw.now, core.AssignorResult{Run: run, Result: res})
	if err != nil {
		cw.fail(err)
		return
	}
	cw.c.Commit()
	cw.store(out.Records)
	epoch, discarded := int32(-1), false // the installed target's epoch, -1: none
	for _, e := range out.Events {
		switch {
		case e.Group != coreGroup:
		case e.Kind == core.EventTargetAssigned:
			epoch = e.Epoch
		case e.Kind == core.EventAssignorResultDiscarded:
			discarded = true
		}
	}
	switch {
	case epoch >= 0:
		cw.installed(run, epoch, req, resp)
	case run.Probe:
		cw.out.Totals.ProbesUnchanged++
	case !discarded:
		// A group of more members than core writes in one step: core
		// writes the target in slices, from a timer due at once, and
		// installs it with the last (core/streams_target_slices.go).
		cw.writing = &writing{run: run, req: req, resp: resp}
	}
	cw.handle(out)
	for cw.writing != nil && cw.err == nil && !cw.stopped {
		w := cw.writing
		cw.step(core.Tick{}) // the host steps a due timer at once
		if cw.writing == w && !w.progressed {
			cw.fail(fmt.Errorf("epoch %d: core wrote no part of the target", run.Epoch))
		}
		w.progressed = false
	}
}

// writing is an assignor result core is writing in slices.
type writing struct {
	run        core.AssignorRun
	req        *abi.AssignRequest
	resp       *abi.AssignResponse
	progressed bool // core wrote a part of it since the last look
}

// installed records core's new target: tasks moved against the previous
// target, and the metrics of the assignor's input and answer.
func (cw *coreWorld) installed(run core.AssignorRun, epoch int32, req *abi.AssignRequest, resp *abi.AssignResponse) {
	report, err := metrics.Measure(req, resp, metrics.Options{})
	if err != nil {
		cw.fail(err)
		return
	}
	reasons := cw.reasons
	if run.Probe {
		reasons = append(reasons, "probe")
	}
	cw.reasons = nil
	cw.epoch = epoch
	baseline := !cw.started || cw.inPrelude
	rb := Rebalance{AtS: seconds(cw.now), Epoch: epoch, Reasons: nonNilStrings(reasons), Baseline: baseline, RecordedInputs: cw.onRecorded(run),
		Members: report.Members, Processes: report.Processes, Movement: report.Movement,
		Balance: report.Balance, Standbys: report.Standbys, Warmups: report.Warmups}
	rb.FromDeparted = cw.fromDeparted(req, resp)
	owner := map[int32]string{}
	for i, am := range req.Members {
		for _, t := range resp.Members[i].Active {
			owner[t] = am.ID
			if prev, ok := cw.owner[t]; ok && prev != am.ID && cw.started {
				rb.TasksMoved++
				cw.pairMove(t, cw.labelOf[am.ID])
			}
		}
	}
	cw.owner = owner
	if baseline {
		cw.started = true
		cw.out.Rebalances = cw.out.Rebalances[:0] // the prelude's last target is the starting point
	} else {
		cw.out.Totals.add(rb)
	}
	cw.out.Rebalances = append(cw.out.Rebalances, rb)
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// memberOrNil is the member of id, nil: none (members are sorted by id).
func (cw *coreWorld) memberOrNil(id string) *member {
	if i, ok := slices.BinarySearchFunc(cw.members, id, func(m *member, id string) int { return strings.Compare(m.id, id) }); ok {
		return cw.members[i]
	}
	return nil
}
