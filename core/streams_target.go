package core

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Target assignment: decide when a new target is needed, request assignor
// runs as effects, and apply their results (Kafka's
// maybeUpdateStreamsTargetAssignment and TargetAssignmentBuilder, made
// asynchronous as docs/ARCHITECTURE.md describes).

func (hb *hbState) status(code int8, detail string) {
	hb.statuses = append(hb.statuses, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: code, StatusDetail: detail})
}

// maybeUpdateTarget starts a new target assignment when one is due and
// tells the heartbeat why it is delayed otherwise. It reports whether the
// heartbeat should wait (park) for an assignor result.
func (c *Coordinator) maybeUpdateTarget(hb *hbState) bool {
	wait, delayed := c.updateTargetIfDue(hb.g, hb.member)
	if delayed != "" && !wait { // a heartbeat that waits is answered with the target
		hb.status(statusAssignmentDelayed, delayed)
	}
	return wait
}

// updateTargetIfDue starts a new target assignment when the group epoch is
// ahead of the assignment epoch and neither the initial rebalance delay nor
// the assignment interval holds it back (then delayed says which). wait
// reports an assignor run in flight, or a regrouping process (member's
// own, joining), that member's request may wait for.
func (c *Coordinator) updateTargetIfDue(g *streamsGroup, member string) (wait bool, delayed string) {
	if c.hasTimer(initialDelayKey(g.id)) {
		return false, "Assignment delayed due to the configured initial rebalance delay."
	}
	if g.assignmentEpoch >= g.groupEpoch {
		return false, ""
	}
	if !c.intervalElapsed(g, c.streamsConfig(g.id)) {
		return false, "Assignment delayed due to the configured assignment interval."
	}
	if r, held := c.regroupHeld(g); held {
		if r.leaving {
			return false, "Assignment delayed until the leaving process's members have left."
		}
		m := g.members[member]
		return c.cfg.AssignorWaitMs > 0 && m != nil && m.processID == r.process,
			"Assignment delayed until the restarted process's members have joined."
	}
	return c.startAssignment(g) && c.cfg.AssignorWaitMs > 0, ""
}

// intervalElapsed applies streams.assignment.interval.ms (KIP-1263): no new
// assignment within the interval after the last one. There is no timer; the
// next heartbeat after the interval computes, as in Kafka.
func (c *Coordinator) intervalElapsed(g *streamsGroup, cfg StreamsConfig) bool {
	return cfg.AssignmentIntervalMs == 0 || g.assignmentTimestamp == 0 ||
		c.now >= g.assignmentTimestamp+int64(cfg.AssignmentIntervalMs)
}

// startAssignment computes the target at once when the topology is not
// ready (everyone gets nothing), or requests an assignor run. It reports
// whether a run is in flight.
func (c *Coordinator) startAssignment(g *streamsGroup) bool {
	if g.soft.inflight != nil {
		return true
	}
	if !g.soft.configured.ready() || g.validatedTopologyEpoch != g.topology.Epoch {
		c.writeTarget(g, g.groupEpoch, nil)
		c.emitGroup(EventTargetAssigned, g.id, ReasonTopologyNotReady, g.groupEpoch)
		return false
	}
	run := c.newAssignorRun(g, false)
	g.soft.inflight = &run
	c.out.AssignorRuns = append(c.out.AssignorRuns, run)
	return true
}

// assignInput builds the assignor's view of the group: members sorted by
// id with their current tasks and reported offsets.
func (c *Coordinator) assignInput(g *streamsGroup) AssignInput {
	return c.snapshotInput(g).build()
}

// assignSnapshot is what assignInput reads of a group, taken in a few
// map copies so the input can be built later, on another goroutine
// (Coordinator.DeferAssignorInputs): everything it holds is replaced,
// never changed in place, once the group holds it. A member the group
// holds is changed as a copy (putMember) outside replay, a member's
// offsets are replaced whole (storeTaskOffsets), the host's end offsets
// too (updateEndOffsets), and a configured topology is built anew.
type assignSnapshot struct {
	configured *configuredTopology
	members    map[string]*streamsMember
	offsets    map[string]memberOffsets
	endOffsets map[TaskID]int64
	configs    AssignConfigs
}

// snapshotInput takes what assignInput reads of g.
func (c *Coordinator) snapshotInput(g *streamsGroup) *assignSnapshot {
	return &assignSnapshot{configured: g.soft.configured, members: maps.Clone(g.members),
		offsets: maps.Clone(g.soft.taskOffsets), endOffsets: g.soft.endOffsets,
		configs: assignConfigs(c.streamsConfig(g.id))}
}

// newAssignorRun is a run at g's group epoch: its input built now, or,
// when the host builds inputs itself, a snapshot to build it from.
func (c *Coordinator) newAssignorRun(g *streamsGroup, probe bool) AssignorRun {
	run := AssignorRun{Group: g.id, Epoch: g.groupEpoch, Assignor: c.streamsConfig(g.id).AssignorName, Probe: probe}
	if snap := c.snapshotInput(g); c.deferInputs {
		run.snapshot = snap
	} else {
		run.Input = snap.build()
	}
	return run
}

// build is the assignor input of the group s was taken of.
func (s *assignSnapshot) build() AssignInput {
	ct := s.configured
	in := AssignInput{Members: []AssignMember{}}
	index := map[string]int32{}
	for i, s := range ct.subtopologies {
		in.Subtopologies = append(in.Subtopologies, AssignSubtopology{ID: s.id, NumTasks: s.numTasks, Stateful: len(s.changelogs) > 0})
		index[s.id] = int32(i)
	}
	// Only tasks of the configured topology are passed: reports may name
	// partitions that no longer exist (a topic shrank, a stale client).
	known := func(t TaskID) (TaskRef, bool) {
		i, ok := index[t.Subtopology]
		return TaskRef{Subtopology: i, Partition: t.Partition}, ok && t.Partition >= 0 && t.Partition < in.Subtopologies[i].NumTasks
	}
	refs := func(s taskSet) []TaskRef { return knownRefs(s, known) }
	activeRefs := func(s taskEpochs) []TaskRef { return knownRefs(s, known) }
	offs := func(m map[TaskID]int64) []TaskOffset {
		out := make([]TaskOffset, 0, len(m))
		for t, o := range m {
			if r, ok := known(t); ok {
				out = append(out, TaskOffset{Task: r, Offset: o})
			}
		}
		slices.SortFunc(out, func(a, b TaskOffset) int { return compareRefs(a.Task, b.Task) })
		return out
	}
	// Every member carries its own reported end offsets and the group's
	// known ones (largest reported or host-supplied) for the other tasks
	// (docs/WARMUPS.md §2.1).
	ends := offs(knownEndOffsets(s.endOffsets, s.offsets))
	for _, id := range slices.Sorted(maps.Keys(s.members)) {
		m := s.members[id]
		am := AssignMember{MemberID: id, ProcessID: m.processID, ClientTags: nonNil(m.clientTags),
			Active: activeRefs(m.assigned.active), Standby: refs(m.assigned.standby), Warmup: refs(m.assigned.warmup)}
		if m.instanceID != nil {
			am.InstanceID = *m.instanceID
		}
		if m.rackID != nil {
			am.RackID = *m.rackID
		}
		o := s.offsets[id]
		am.TaskOffsets, am.TaskEndOffsets = offs(o.offsets), memberEnds(ends, o, known)
		in.Members = append(in.Members, am)
	}
	in.Configs = s.configs
	return in
}

// memberEnds is the end offsets member o is passed (docs/WARMUPS.md
// §2.1): ends (the group's known ones, in task order) with the end offsets
// o reported itself in their place, so the assignor measures each of o's
// offsets against the end offset reported with it, or against the
// group's. Where o reported an offset but no end offset, the group's end
// stays in place when the offset is at or below it (measured against it,
// an entry and no entry give the same lag, and the group's end, perhaps
// the host's, reaches the assignor even when every member reported an
// offset for the task, as classic members in a mixed group do); it is
// left out only for an offset beyond it, which the assignor then judges
// by Kafka's corrupt-state rule against the group's end. A member whose
// own agree with the group's shares ends; the cost is one search per
// reported offset and end offset.
func memberEnds(ends []TaskOffset, o memberOffsets, known func(TaskID) (TaskRef, bool)) []TaskOffset {
	var out []TaskOffset
	for t, off := range o.offsets {
		r, in := known(t)
		if !in {
			continue
		}
		i, found := slices.BinarySearchFunc(ends, r, func(e TaskOffset, r TaskRef) int { return compareRefs(e.Task, r) })
		if !found {
			continue
		}
		v := ends[i].Offset // the group's: kept for an offset at or below it
		if own, ok := o.ownEnd(t); ok {
			v = own
		} else if off >= 0 && off != math.MaxInt64 && off > v {
			v = -1 // dropped below: judged against the group's
		}
		if v != ends[i].Offset {
			if out == nil {
				out = slices.Clone(ends)
			}
			out[i].Offset = v
		}
	}
	if out == nil {
		return ends
	}
	return slices.DeleteFunc(out, func(e TaskOffset) bool { return e.Offset < 0 })
}

// knownRefs is the tasks of s that known accepts, as references, in task
// order: the subtopologies' indices follow their sorted ids, so sorting
// the references sorts the tasks as sortTasks does, without building a
// set and comparing ids (a large group's input is built in one step).
func knownRefs[V any](s map[TaskID]V, known func(TaskID) (TaskRef, bool)) []TaskRef {
	out := make([]TaskRef, 0, len(s))
	for t := range s {
		if r, ok := known(t); ok {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, compareRefs)
	return out
}

func compareRefs(a, b TaskRef) int {
	if a.Subtopology != b.Subtopology {
		return cmp.Compare(a.Subtopology, b.Subtopology)
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// writeTarget writes the target records for epoch: a member record for
// every member whose target changed (or had none), by member id, then
// the metadata. A member missing from targets (all of them when targets
// is nil: a topology not ready) gets no tasks. Only the members written
// are sorted: a join to a not-ready group rewrote the whole group's
// empty target a join, sorting every member id, which grew every join of
// a flood of them on its partition (docs/HOST.md, "What a canary on the
// flooded group's own partition waits for").
func (c *Coordinator) writeTarget(g *streamsGroup, epoch int32, targets map[string]tasksTuple) {
	var changed []string
	for id := range g.members {
		if old, had := g.target[id]; !had || !old.equal(targets[id]) { // a missing target: no tasks
			changed = append(changed, id)
		}
	}
	sort.Strings(changed)
	for _, id := range changed {
		t, ok := targets[id]
		if !ok {
			t = emptyTuple()
		}
		c.write(targetRecord(g.id, id, t))
	}
	c.writeTargetEpoch(g, epoch)
}

// writeMemberTarget writes member id's target t unless it has it already.
func (c *Coordinator) writeMemberTarget(g *streamsGroup, id string, t tasksTuple) {
	if old, had := g.target[id]; had && old.equal(t) {
		return
	}
	c.write(targetRecord(g.id, id, t))
}

// writeTargetEpoch writes the target's metadata: it follows every member
// target record of the epoch, as in Kafka.
func (c *Coordinator) writeTargetEpoch(g *streamsGroup, epoch int32) {
	c.write(records.Record{Key: records.StreamsGroupTargetAssignmentMetadataKey{GroupID: g.id},
		Value: records.StreamsGroupTargetAssignmentMetadataValue{AssignmentEpoch: epoch, AssignmentTimestamp: c.now}})
}

func targetRecord(group, member string, t tasksTuple) records.Record {
	return records.Record{Key: records.StreamsGroupTargetAssignmentMemberKey{GroupID: group, MemberID: member}, Value: records.StreamsGroupTargetAssignmentMemberValue{
		ActiveTasks: toTaskIDs(t.active), StandbyTasks: toTaskIDs(t.standby), WarmupTasks: toTaskIDs(t.warmup)}}
}

// assignorResult hands back the outcome of run: its result, or the error
// that made it fail. A result for epoch E is applied iff E is above the
// group's assignment epoch and not above its group epoch; if the group
// epoch has moved past E, a new run is requested. On an error the group
// keeps its last target and the heartbeats that waited get
// UNKNOWN_SERVER_ERROR, as Kafka answers a failing assignor. Heartbeats
// parked on the run are answered in the returned Output.
func (c *Coordinator) assignorResult(now int64, run AssignorRun, res AssignResult, runErr error) Output {
	return c.assignorResultPrepared(now, run, res, runErr, nil)
}

// assignorResultPrepared is assignorResult with the result's check and
// targets taken from prep when it is not nil (PrepareAssignorResult).
func (c *Coordinator) assignorResultPrepared(now int64, run AssignorRun, res AssignResult, runErr error, prep *PreparedAssignorResult) Output {
	c.begin(now)
	g, ok := c.groups[run.Group].(*streamsGroup)
	if !ok {
		return c.end()
	}
	if g.soft.inflight != nil && g.soft.inflight.Epoch == run.Epoch {
		g.soft.inflight = nil
	}
	if runErr == nil && prep == nil {
		prep = PrepareAssignorResult(run, res)
	}
	if runErr == nil {
		runErr = prep.err
	}
	if run.Probe && runErr == nil {
		c.probeResult(g, run, res, prep.targets)
	}
	if runErr != nil {
		c.emitGroup(EventAssignorResultDiscarded, g.id, ReasonAssignorError, run.Epoch)
		g.soft.lastAssignorErr = fmt.Sprintf("epoch %d: %v", run.Epoch, runErr)
		c.failParked(g, errf(kerr.UnknownServerError, "Failed to compute a new target assignment for epoch %d: %v", run.Epoch, runErr))
		return c.end()
	}
	g.soft.lastAssignorErr = ""
	switch {
	case run.Probe:
	case run.Epoch > g.assignmentEpoch && run.Epoch <= g.groupEpoch:
		if !c.startTargetWrite(g, run, res, prep.targets) {
			return c.end() // continued by later steps (streams_target_slices.go)
		}
		c.targetWritten(g, run.Epoch, res.NextProbeMs)
	default:
		c.emitGroup(EventAssignorResultDiscarded, g.id, ReasonStaleEpoch, run.Epoch)
	}
	c.afterTarget(g)
	return c.end()
}

// targetWritten follows a target written from an assignor result.
func (c *Coordinator) targetWritten(g *streamsGroup, epoch int32, nextProbeMs int64) {
	c.emitGroup(EventTargetAssigned, g.id, ReasonAssignor, epoch)
	c.armProbe(g, nextProbeMs)
	c.probeCheckAfterTarget(g)
}

// afterTarget starts the next assignment if the group moved on meanwhile
// and answers the heartbeats parked on the run when none is in flight.
func (c *Coordinator) afterTarget(g *streamsGroup) {
	c.startAssignmentIfDue(g)
	if g.soft.inflight == nil {
		c.releaseParked(g)
	}
}

// LastAssignorError returns why the last assignor run of a streams group
// failed ("" if it succeeded or none ran), for the host's logs and metrics.
func (c *Coordinator) LastAssignorError(group string) string {
	if g, ok := c.groups[group].(*streamsGroup); ok {
		return g.soft.lastAssignorErr
	}
	return ""
}

// validateResult checks an assignor's output against its input.
func validateResult(run AssignorRun, res AssignResult) error {
	if len(res.Members) != len(run.Input.Members) {
		return fmt.Errorf("assignor returned %d members for %d", len(res.Members), len(run.Input.Members))
	}
	active := map[TaskRef]int{}
	for i, m := range res.Members {
		for _, list := range [][]TaskRef{m.Active, m.Standby, m.Warmup} {
			for _, t := range list {
				if t.Subtopology < 0 || int(t.Subtopology) >= len(run.Input.Subtopologies) ||
					t.Partition < 0 || t.Partition >= run.Input.Subtopologies[t.Subtopology].NumTasks {
					return fmt.Errorf("member %d: task %d/%d does not exist", i, t.Subtopology, t.Partition)
				}
			}
		}
		for _, t := range m.Active {
			active[t]++
			if active[t] > 1 {
				return fmt.Errorf("task %d/%d assigned active twice", t.Subtopology, t.Partition)
			}
		}
	}
	return nil
}

// resultTargets maps each member of run's input to its target (targets,
// by the member's place in the input).
func resultTargets(run AssignorRun, targets []tasksTuple) map[string]tasksTuple {
	out := make(map[string]tasksTuple, len(targets))
	for i, t := range targets {
		out[run.Input.Members[i].MemberID] = t
	}
	return out
}

// PreparedAssignorResult is an assignor result with the work of applying
// it that reads no coordinator state done ahead: the result checked
// against its run's input and each member's target built. For a large
// group that work was most of the steps that apply the result (a check of
// every task, a set of tasks per member); a host does it where the
// assignor ran, so the partition's steps only compare and write.
type PreparedAssignorResult struct {
	err     error        // validateResult's answer
	targets []tasksTuple // each member's target, by its place in the run's input; nil with err
}

// PrepareAssignorResult prepares res, the result of run, for
// AssignorResult.Prepared. It reads no coordinator state and may run on
// any goroutine (a host runs it where the assignor ran); run and res must
// not change afterwards.
func PrepareAssignorResult(run AssignorRun, res AssignResult) *PreparedAssignorResult {
	p := &PreparedAssignorResult{err: validateResult(run, res)}
	if p.err == nil {
		p.targets = make([]tasksTuple, len(res.Members))
		for i := range res.Members {
			p.targets[i] = resultTarget(run, res, i)
		}
	}
	return p
}

// resultTarget is the target of the i-th member of run's result.
func resultTarget(run AssignorRun, res AssignResult, i int) tasksTuple {
	m := res.Members[i]
	set := func(refs []TaskRef) taskSet {
		s := taskSet{}
		for _, r := range refs {
			s[TaskID{run.Input.Subtopologies[r.Subtopology].ID, r.Partition}] = struct{}{}
		}
		return s
	}
	return tasksTuple{active: set(m.Active), standby: set(m.Standby), warmup: set(m.Warmup)}
}

// park holds a heartbeat until the assignor answers or the wait expires.
func (c *Coordinator) park(hb *hbState) {
	hb.parked = true
	c.parkRequest(hb.g, hb.id, parkedHeartbeat{hb: hb})
}

// parkRequest holds request id of g (p) until the assignor answers or
// the wait expires.
func (c *Coordinator) parkRequest(g *streamsGroup, id RequestID, p parkedHeartbeat) {
	g.soft.parked = append(g.soft.parked, p)
	c.batchParked = append(c.batchParked, id)
	c.onUndo(func() {
		for i, q := range g.soft.parked {
			if q == p {
				g.soft.parked = append(g.soft.parked[:i:i], g.soft.parked[i+1:]...)
				break
			}
		}
	})
	c.setTimerIfAbsent(timer{key: assignWaitKey(g.id), deadline: c.now + c.cfg.AssignorWaitMs, kind: timerStreamsAssignWait, group: g.id})
}

// parkedHeartbeat is a heartbeat waiting for an assignor result, or a
// classic member's JoinGroup (join, migration_bridge.go).
type parkedHeartbeat struct {
	hb      *hbState
	join    *bridgedJoin
	classic *bridgedHeartbeat // a classic member's Heartbeat (migration_bridge.go)
}

// orphanParked marks the parked heartbeats of a removed member: if the
// member id rejoins before they are released, they belong to the old
// incarnation and are fenced instead of answered for the new one.
func (c *Coordinator) orphanParked(g *streamsGroup, member string) {
	for _, p := range g.soft.parked {
		if j := p.join; j != nil && j.member == member && !j.orphaned {
			j.orphaned = true
			c.onUndo(func() { j.orphaned = false })
		}
		if hb := p.hb; hb != nil && hb.member == member && !hb.orphaned {
			hb.orphaned = true
			c.onUndo(func() { hb.orphaned = false })
		}
	}
}

// releaseParked answers every parked heartbeat of g with the current target.
func (c *Coordinator) releaseParked(g *streamsGroup) {
	parked := g.soft.parked
	g.soft.parked = nil
	c.cancelTimer(assignWaitKey(g.id))
	for _, p := range parked {
		if p.join != nil {
			c.respond(p.join.id, c.resumeBridgeJoin(p.join))
			continue
		}
		if p.classic != nil {
			c.respond(p.classic.id, c.resumeBridgeHeartbeat(g, p.classic))
			continue
		}
		sp := c.savepoint()
		resp, e := c.resumeHeartbeat(p.hb)
		if e != nil {
			c.revertTo(sp)
			resp = errorHeartbeatResponse(p.hb.req, e)
		}
		c.respond(p.hb.id, resp)
	}
}

// failParked answers every parked heartbeat of g with e.
func (c *Coordinator) failParked(g *streamsGroup, e *kafkaError) {
	parked := g.soft.parked
	g.soft.parked = nil
	c.cancelTimer(assignWaitKey(g.id))
	for _, p := range parked {
		if p.join != nil {
			r := classicJoinError(p.join.member, e.code)
			r.Version = p.join.version
			c.respond(p.join.id, r)
			continue
		}
		if p.classic != nil {
			// The run failed, not the member: answered as if the target
			// had not been due.
			c.respond(p.classic.id, c.resumeBridgeHeartbeat(g, p.classic))
			continue
		}
		c.respond(p.hb.id, errorHeartbeatResponse(p.hb.req, e))
	}
}

func errorHeartbeatResponse(req *kmsg.StreamsGroupHeartbeatRequest, e *kafkaError) *kmsg.StreamsGroupHeartbeatResponse {
	resp := &kmsg.StreamsGroupHeartbeatResponse{Version: req.Version}
	resp.Default()
	resp.MemberID, resp.ErrorCode, resp.ErrorMessage = req.MemberID, e.code, &e.msg
	return resp
}

// resumeHeartbeat finishes a parked heartbeat if its member is still the
// one that sent it.
func (c *Coordinator) resumeHeartbeat(hb *hbState) (*kmsg.StreamsGroupHeartbeatResponse, *kafkaError) {
	g, ok := c.groups[hb.g.id].(*streamsGroup)
	if !ok || g != hb.g || g.members[hb.member] == nil || hb.orphaned {
		return nil, errf(kerr.FencedMemberEpoch, "The member was removed while its heartbeat waited for the assignment.")
	}
	// Another heartbeat of the member may have been answered while this one
	// waited: validate its epoch again against the member as it is now, as
	// Kafka would have validated it had it arrived in that order.
	if hb.req.MemberEpoch > 0 {
		if e := checkMemberEpoch(g.members[hb.member], hb.req.MemberEpoch, hb.owned); e != nil {
			return nil, e
		}
	}
	resp, e := c.finishHeartbeat(hb)
	if hb.created {
		g.forgetSoftState()
	}
	return resp, e
}

func init() {
	registerTimerKind(timerStreamsAssignWait, func(c *Coordinator, t timer) {
		if g, ok := c.groups[t.group].(*streamsGroup); ok {
			if s := g.soft.slices; s != nil {
				// A result is being written: its last slice answers them.
				s.waited = true
				c.onUndo(func() { s.waited = false })
				return
			}
			c.releaseParked(g)
		}
	})
	registerTimerKind(timerStreamsInitialDelay, func(c *Coordinator, t timer) {
		g, ok := c.groups[t.group].(*streamsGroup)
		// Like Kafka, skip when the configured topology (soft state) is
		// absent, e.g. for a group created by its first heartbeat: the next
		// heartbeat computes the assignment.
		if !ok || len(g.members) == 0 || g.soft.configured == nil || g.assignmentEpoch >= g.groupEpoch {
			return
		}
		c.startAssignment(g)
	})
}

// afterRollback re-requests assignor runs that a rollback may have orphaned
// and drops parked heartbeats whose group state was reverted.
func (c *Coordinator) afterRollback() {
	for _, id := range c.groupIDs() {
		g, ok := c.groups[id].(*streamsGroup)
		if !ok {
			continue
		}
		g.soft.inflight, g.soft.slices = nil, nil
		if g.soft.probeCheck != 0 {
			// The rolled-back batch's check was never dispatched (or its
			// answer is now void): forget it and the input it saw, and ask
			// the policy again when allowed.
			g.soft.probeCheck, g.soft.lastCheckDigest = 0, 0
			if c.policyProbing(g) && len(g.members) > 0 && !c.hasTimer(probeKey(id)) {
				c.setTimer(timer{key: probeKey(id), deadline: c.now, kind: timerStreamsProbe, group: id})
			}
		}
		if len(g.members) > 0 && g.groupEpoch > g.assignmentEpoch && g.topology != nil && !c.hasTimer(initialDelayKey(id)) {
			if g.soft.configured == nil {
				g.soft.configured = c.configureTopology(g.id, g.topology)
			}
			if g.soft.configured.ready() && g.validatedTopologyEpoch == g.topology.Epoch {
				c.startAssignment(g)
			}
		}
	}
	sort.Slice(c.out.AssignorRuns, func(i, j int) bool { return c.out.AssignorRuns[i].Group < c.out.AssignorRuns[j].Group })
}
