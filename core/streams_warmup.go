package core

import (
	"maps"
	"math"
	"sort"
	"strings"
)

// The warm-up lifecycle (docs/WARMUPS.md §2): task lags from reported and
// host-supplied offsets, and the probing rule that re-runs the assignor at
// the current group epoch so caught-up warm-ups can take over actives. A
// probe whose result equals the current target writes nothing.

// TaskEndOffset is a changelog end offset of a task that the host fetched
// from the data plane (ListOffsets on the task's changelog partitions,
// summed over them).
type TaskEndOffset struct {
	Task   TaskID
	Offset int64
}

// updateEndOffsets stores changelog end offsets the host fetched for a
// streams group's tasks (for members that report only offset sums). They
// are soft state, merged with member-reported end offsets (the larger
// wins) when lags are computed and passed to the assignor. A negative
// offset forgets the task's host end offset (unknown again). If a warm-up
// is now caught up, a probe may start (its run is in the Output).
func (c *Coordinator) updateEndOffsets(now int64, group string, ends []TaskEndOffset) Output {
	c.begin(now)
	if g, ok := c.groups[group].(*streamsGroup); ok {
		// A new map, not the old one changed: a snapshot of the group
		// for an assignor input may hold the old one (assignSnapshot).
		next := make(map[TaskID]int64, len(g.soft.endOffsets)+len(ends))
		maps.Copy(next, g.soft.endOffsets)
		for _, e := range ends {
			if e.Offset < 0 {
				delete(next, e.Task)
			} else {
				next[e.Task] = e.Offset
			}
		}
		g.soft.endOffsets = next
		c.maybeEarlyProbe(g)
	}
	return c.end()
}

// endOffsetOf is the end offset of task t: the largest reported by a member
// or supplied by the host. Unknown (ok false) when nobody knows it; a
// reported math.MaxInt64 (a 4.4 client's "unknown") or negative value does
// not count.
func (g *streamsGroup) endOffsetOf(t TaskID) (int64, bool) {
	end, ok := g.soft.endOffsets[t]
	for _, o := range g.soft.taskOffsets {
		if v, has := o.endOffsets[t]; has && v >= 0 && v != math.MaxInt64 && (!ok || v > end) {
			end, ok = v, true
		}
	}
	return end, ok
}

// knownEndOffsets returns every task's known end offset (endOffsetOf).
func (g *streamsGroup) knownEndOffsets() map[TaskID]int64 {
	return knownEndOffsets(g.soft.endOffsets, g.soft.taskOffsets)
}

// knownEndOffsets is the group's known end offsets from the host's
// (hostEnds) and its members' (offsets).
func knownEndOffsets(hostEnds map[TaskID]int64, offsets map[string]memberOffsets) map[TaskID]int64 {
	out := map[TaskID]int64{}
	for t, v := range hostEnds {
		out[t] = v
	}
	for _, o := range offsets {
		for t, v := range o.endOffsets {
			if v >= 0 && v != math.MaxInt64 && v > out[t] {
				out[t] = v
			} else if _, has := out[t]; !has && v >= 0 && v != math.MaxInt64 {
				out[t] = v
			}
		}
	}
	return out
}

// ownEnd is the end offset member o reported for t with its offsets, and
// whether it reported a usable one (math.MaxInt64, a 4.4 client's
// "unknown", and negative values are none).
func (o memberOffsets) ownEnd(t TaskID) (int64, bool) {
	v, has := o.endOffsets[t]
	return v, has && v >= 0 && v != math.MaxInt64
}

// effectiveOffset is a member's offset off for t seen against the group's
// end offset end (docs/WARMUPS.md §2.1): a member that reported its own end
// offset for t is measured against it, so its lag is its own end − off (0
// when off is at or beyond it: a position one past the last offset is
// caught up), expressed as the offset end − that lag; a member that did not
// (or whose offset is math.MaxInt64) is measured against end as it is (off
// unchanged).
func effectiveOffset(o memberOffsets, t TaskID, off, end int64) int64 {
	own, ok := o.ownEnd(t)
	if !ok || off == math.MaxInt64 { // MaxInt64: a 4.4 client's "not restoring yet"
		return off
	}
	return end - max(own-off, 0)
}

// processOffset is the largest effective offset (effectiveOffset against
// the group's end offset end) any member of process reported for t
// (negative: no state).
func (g *streamsGroup) processOffset(process string, t TaskID, end int64) int64 {
	best := int64(-1)
	for id, o := range g.soft.taskOffsets {
		if m := g.members[id]; m != nil && m.processID == process {
			if v, has := o.offsets[t]; has && v >= 0 {
				best = max(best, effectiveOffset(o, t, v, end))
			}
		}
	}
	return best
}

// taskLag is the lag of process on t and whether it is known: end −
// offset, with the offset effective (processOffset), or end when the
// process has no state or its offset is beyond the end (corrupt state,
// restored from scratch). Unknown end: not known.
func (g *streamsGroup) taskLag(process string, t TaskID) (int64, bool) {
	end, ok := g.endOffsetOf(t)
	if !ok {
		return 0, false
	}
	off := g.processOffset(process, t, end)
	if off < 0 || off > end {
		return end, true
	}
	return end - off, true
}

// caughtUpWarmups lists, sorted, the target warm-ups ("member:task") whose
// process is within the acceptable recovery lag. An unknown end offset
// never counts as caught up. Only members whose target holds a warm-up are
// visited (warmupTargets), so a steady heartbeat in a group without
// warm-ups costs the same whatever the group's size.
func (c *Coordinator) caughtUpWarmups(g *streamsGroup) []string {
	if len(g.warmupTargets) == 0 {
		return nil
	}
	acceptable := c.streamsConfig(g.id).AcceptableRecoveryLag
	var out []string
	for id := range g.warmupTargets {
		m := g.members[id]
		if m == nil {
			continue
		}
		for task := range g.target[id].warmup {
			if lag, ok := g.taskLag(m.processID, task); ok && lag <= acceptable {
				out = append(out, id+":"+task.String())
			}
		}
	}
	sort.Strings(out)
	return out
}

// indexWarmupTarget records in warmupTargets whether member's target holds
// a warm-up; setTarget calls it on every change and undo, live and in
// replay, so the index always matches target.
func (g *streamsGroup) indexWarmupTarget(member string) {
	if len(g.target[member].warmup) > 0 {
		if g.warmupTargets == nil { // most groups never hold a warm-up
			g.warmupTargets = map[string]struct{}{}
		}
		g.warmupTargets[member] = struct{}{}
	} else {
		delete(g.warmupTargets, member)
	}
}

// maybeEarlyProbe starts a probe when the group is stable (every member
// reconciled, so the assignor sees settled ownership and fresh reports),
// some warm-up of the current target is caught up, and the set of caught-up warm-ups differs from the one that
// started the last early probe (so a probe that changed nothing is not
// repeated on every heartbeat).
// With a probing-policy plugin the policy decides instead (a ProbeCheck).
func (c *Coordinator) maybeEarlyProbe(g *streamsGroup) {
	if c.policyProbing(g) {
		if g.state == StreamsStable && g.targetHasWarmups() {
			c.requestProbeCheck(g, ProbeReasonInput)
		}
		return
	}
	c.builtinEarlyProbe(g)
}

// builtinEarlyProbe is core's own early-probe rule (maybeEarlyProbe).
func (c *Coordinator) builtinEarlyProbe(g *streamsGroup) {
	if g.state != StreamsStable || !c.probeAllowed(g) {
		return
	}
	caught := strings.Join(c.caughtUpWarmups(g), ",")
	if caught == "" || caught == g.soft.lastEarlyProbe {
		return
	}
	g.soft.lastEarlyProbe = caught
	c.startProbe(g)
}

// probeAllowed: the group has members, a ready topology, an up-to-date
// target, no initial delay pending and no assignor run in flight.
func (c *Coordinator) probeAllowed(g *streamsGroup) bool {
	return len(g.members) > 0 && g.soft.inflight == nil && g.groupEpoch == g.assignmentEpoch &&
		g.topology != nil && g.soft.configured.ready() && g.validatedTopologyEpoch == g.topology.Epoch &&
		!c.hasTimer(initialDelayKey(g.id))
}

// startProbe requests an assignor run at the current group epoch.
func (c *Coordinator) startProbe(g *streamsGroup) {
	run := c.newAssignorRun(g, true)
	g.soft.inflight = &run
	c.out.AssignorRuns = append(c.out.AssignorRuns, run)
	c.emitGroup(EventProbe, g.id, "", g.groupEpoch)
}

// probeResult applies a probe's result: if the group moved on (a new group
// epoch) it is dropped, as the pending assignment sees the same lags; if it
// equals the current target nothing is written; otherwise the group epoch
// is bumped and the new target written at it.
func (c *Coordinator) probeResult(g *streamsGroup, run AssignorRun, res AssignResult, prepared []tasksTuple) {
	if run.Epoch != g.groupEpoch || g.groupEpoch != g.assignmentEpoch {
		return
	}
	targets := resultTargets(run, prepared)
	changed := false
	for _, id := range g.sortedMemberIDs() {
		t, ok := targets[id]
		if !ok {
			t = emptyTuple()
		}
		if old, had := g.target[id]; !had || !old.equal(t) {
			changed = true
			break
		}
	}
	if !changed {
		if !c.policyProbing(g) {
			c.armProbe(g, res.NextProbeMs)
			return
		}
		// The policy's schedule stands; remember the input so the same
		// probe is not run again (ProbeResult).
		g.soft.noopProbeDigest = inputDigest(run.Input)
		if res.NextProbeMs > 0 || !c.hasTimer(probeKey(g.id)) {
			c.armProbe(g, res.NextProbeMs)
		}
		return
	}
	c.emitProbeTarget(g, targets)
	c.bumpGroupEpoch(g, g.metadataHash, g.validatedTopologyEpoch, g.lastAssignmentConfigs)
	c.writeTarget(g, g.groupEpoch, targets)
	c.armProbe(g, res.NextProbeMs)
	c.probeCheckAfterTarget(g)
}

// targetHasWarmups reports whether any member's target holds a warm-up.
func (g *streamsGroup) targetHasWarmups() bool { return len(g.warmupTargets) > 0 }

// armProbe schedules the next probe after a target was computed: at now +
// hint when the assignor gave one (> 0), else at now + the probing interval
// while the target holds warm-ups; otherwise no probe is scheduled.
func (c *Coordinator) armProbe(g *streamsGroup, hint int64) {
	interval := c.streamsConfig(g.id).ProbingIntervalMs
	switch {
	case hint > 0:
		c.setTimer(timer{key: probeKey(g.id), deadline: c.now + hint, kind: timerStreamsProbe, group: g.id})
	case g.targetHasWarmups() && interval > 0:
		c.setTimer(timer{key: probeKey(g.id), deadline: c.now + interval, kind: timerStreamsProbe, group: g.id})
	default:
		c.cancelTimer(probeKey(g.id))
	}
}

// armProbeOnLoaded restores the probe timer after replay: the assignor's
// hint is not durable, so a target holding warm-ups is probed at its
// assignment timestamp + the probing interval (at once if that has passed).
// With a probing-policy plugin the policy is consulted at once instead.
func (c *Coordinator) armProbeOnLoaded(g *streamsGroup) {
	interval := c.streamsConfig(g.id).ProbingIntervalMs
	if len(g.members) > 0 && c.policyProbing(g) {
		c.setTimer(timer{key: probeKey(g.id), deadline: c.now, kind: timerStreamsProbe, group: g.id})
	} else if len(g.members) > 0 && g.targetHasWarmups() && interval > 0 {
		c.setTimer(timer{key: probeKey(g.id), deadline: g.assignmentTimestamp + interval, kind: timerStreamsProbe, group: g.id})
	}
}

func init() {
	registerTimerKind(timerStreamsProbe, func(c *Coordinator, t timer) {
		g, ok := c.groups[t.group].(*streamsGroup)
		if !ok {
			return
		}
		switch {
		case !c.probeAllowed(g):
		case c.policyProbing(g):
			c.requestProbeCheck(g, ProbeReasonTimer)
		default:
			c.startProbe(g)
		}
		// Otherwise a rebalance is pending or running: its result re-arms.
	})
}
