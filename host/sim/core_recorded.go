package sim

// The core engine's replay of a recorded group: the starting point
// (initial) and the recorded inputs (recorded_inputs). Core still decides
// when it computes a target; the recording decides what the members and
// the host tell it (their reports, the changelogs' ends) and how long a
// client takes to start and to stop a moved task (docs/AB-TESTING.md,
// "The core engine").

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/core"
)

// coreSupportsRecorded refuses recorded inputs the core engine cannot
// feed to core: without reports there are no report times to carry them.
func coreSupportsRecorded(sc *Scenario) error {
	if len(sc.RecordedInputs) > 0 && sc.Reports == nil {
		return fmt.Errorf("recorded_inputs without reports: %w (the recorded offsets reach core in the members' reports)", ErrCoreUnsupported)
	}
	return nil
}

// preludeMs is how long before 0 s the members of the starting point join
// core: its initial rebalance delay, three heartbeats (the join, the one
// that takes the target, the one that acknowledges it) and a second to
// spare.
func (cw *coreWorld) preludeMs() int64 {
	d := int64(core.DefaultConfig().Streams.InitialRebalanceDelayMs) + 3*cw.sc.heartbeatIntervalMs() + 1000
	return (d + cw.sc.TickMs - 1) / cw.sc.TickMs * cw.sc.TickMs
}

// prelude brings core to the starting point (initial) before 0 s: the
// members that join at 0 s join it, the assignor's answer to every run
// before 0 s is the starting assignment (answer), and the members take it
// on state that is there. At 0 s the group must hold that target, every
// member its part: the accounting starts there, the starting point's lags
// applied. It returns the steps after those joins.
func (cw *coreWorld) prelude(steps []step) []step {
	start := -cw.preludeMs()
	cw.now = start
	for len(steps) > 0 && steps[0].atMs == 0 && steps[0].kind == stepJoin {
		cw.applyStep(steps[0])
		steps = steps[1:]
	}
	cw.inPrelude = true
	for now := start; now < 0 && cw.err == nil; now += cw.sc.TickMs {
		cw.now = now
		cw.step(core.Tick{})
		cw.step(core.EndOffsets{Group: coreGroup, Ends: cw.hostEnds()})
		for _, cl := range slices.Clone(cw.clients) {
			if now >= cl.nextHB {
				cw.heartbeat(cl)
			}
		}
	}
	cw.inPrelude = false
	if cw.err != nil {
		return steps
	}
	cw.granting = cw.pending()
	for _, im := range cw.sc.Initial {
		if cw.granting > 0 || !cw.holdsInitial(cw.find(im.Member), im) {
			cw.fail(errors.New("initial: the group did not settle on the starting assignment before 0 s"))
			return steps
		}
	}
	cw.baseline()
	cw.live = true
	if n := len(cw.out.Rebalances); n > 0 {
		cw.out.Rebalances[n-1].AtS = 0 // the starting point
	}
	return steps
}

// answer is the assignor's answer to req: the starting point before 0 s
// (prelude), else the assignor's own.
func (cw *coreWorld) answer(req *abi.AssignRequest) (*abi.AssignResponse, error) {
	if cw.inPrelude {
		return cw.initial(req), nil
	}
	return cw.a.Assign(req)
}

// reportRecorded takes the reports due at now (report) and puts the
// recording's values in them (recordedReports); the recorded inputs due
// by now are passed, so the stops of the moves still ahead are looked
// ahead to (runs).
func (cw *coreWorld) reportRecorded(now int64) {
	for len(cw.recorded) > 0 && cw.recorded[0].atMs <= now {
		cw.recorded = cw.recorded[1:]
	}
	hadEnd, readAt := cw.hostEnd != nil, cw.refreshAtMs
	cw.report(now)
	if cw.sc.Reports == nil {
		return
	}
	refreshed := !hadEnd || now >= readAt
	if !hadEnd {
		readAt = 0
	}
	cw.recordedReports(now, refreshed, readAt, cw.refreshAtMs)
}

// holdsInitial says whether m holds exactly its part of the starting
// point.
func (cw *coreWorld) holdsInitial(m *member, im InitialMember) bool {
	names := func(ts []int32) []string {
		out := []string{}
		for _, t := range ts {
			sub, p := cw.locate(t)
			out = append(out, fmt.Sprintf("%s_%d", sub, p))
		}
		slices.Sort(out)
		return out
	}
	want := func(ns []string) []string {
		out := append([]string{}, ns...)
		slices.Sort(out)
		return out
	}
	return slices.Equal(names(m.target.Active), want(im.Active)) && slices.Equal(names(m.target.Standby), want(im.Standby))
}

// recordedFor is the recorded input whose values a read at atMs carries,
// when the next read of the same source comes at nextMs: the first
// recorded input after it, when no later read comes before that input
// (the input saw this read's values); else the last recorded input at or
// before atMs (the newest values the recording shows of the source: an
// older value, never a later one); nil before the first recorded input
// (the model's values hold).
func (sc *Scenario) recordedFor(atMs, nextMs int64) *recorded {
	i := sort.Search(len(sc.recorded), func(i int) bool { return sc.recorded[i].atMs >= atMs })
	switch {
	case i < len(sc.recorded) && sc.recorded[i].atMs < nextMs:
		return &sc.recorded[i]
	case i > 0:
		return &sc.recorded[i-1]
	}
	return nil
}

// recordedReports replaces what the reports taken at now (report) carry
// with the recording's values where the recording has them
// (recordedFor): a member whose report times are recorded (reports.at)
// reports the offsets the recorded input lists for its process — none
// when it lists none: the input lists the processes whose members had
// reported offsets, so a process it leaves out had reported none (a new
// one, or old members whose offset interval had not come yet), whatever
// state the model gives it — with the input's end offsets
// (recordedEnds); the host's read of the changelogs' ends carries the
// recorded host read last before it (hostReadAt) when the recording has
// one, else that input's end offsets, and none for a task the input lists
// none for (nobody knew its end then: core forgets the host's). A member with
// recorded values (reports.values) reports those at its recorded times
// instead (recordedValue), the input's only at its join.
func (cw *coreWorld) recordedReports(now int64, refreshed bool, readAt, nextRead int64) {
	if len(cw.sc.recorded) == 0 && len(cw.sc.hostReads) == 0 {
		return
	}
	if !cw.hostReadAt(now) && refreshed {
		if r := cw.sc.recordedFor(readAt, nextRead); r != nil {
			copy(cw.hostEnd, r.ends)
		}
	}
	for _, m := range cw.members {
		times, ok := cw.sc.reportAt[m.label]
		if !ok || m.reported == nil || m.reportAtMs != now || m.crashedMs >= 0 {
			continue
		}
		// The recorded time this tick's report stands for (the join's
		// report: now), and the member's next one.
		at, next, timed := now, int64(1<<62), false
		i, _ := slices.BinarySearch(times, now-cw.sc.TickMs+1)
		if i < len(times) && times[i] <= now {
			at, timed = times[i], true
			i++
		}
		if i < len(times) {
			next = times[i]
		}
		if timed && cw.sc.reportVal[m.label] != nil {
			cw.recReport[m.id] = true // its recorded value (recordedValue)
			continue
		}
		r := cw.sc.recordedFor(at, next)
		if r == nil {
			cw.recReport[m.id] = false
			continue
		}
		offs, listed := r.offs[m.process]
		if listed {
			copy(m.reported, offs)
		} else {
			for t := range m.reported {
				m.reported[t] = -1
			}
		}
		cw.recordedEnds(m, r, listed)
		cw.recReport[m.id] = true
	}
}

// hostReadAt sets what the host knows of the changelogs' ends to the
// recorded host read (reports.host_reads) last at or before now, and says
// whether there was one: from the first such read on, the host's ends are
// the ones it really read then, not a recorded input's (whose end
// offsets are the largest of the host's read and the members' reports).
func (cw *coreWorld) hostReadAt(now int64) bool {
	reads := cw.sc.hostReads
	i := sort.Search(len(reads), func(i int) bool { return reads[i].atMs > now })
	if i == 0 {
		return false
	}
	copy(cw.hostEnd, reads[i-1].ends)
	return true
}

// recordedEnds sets the end offsets m's report carries from recorded
// input r: each recorded offset of its process (listed) with the input's
// end offset for its task — the recorded offsets are measured against
// those ends (the history's inputs), so core computes the lag the real
// coordhost computed at that input, whether or not the real member
// reported an end of its own for the task — and the input's end for any
// other task m's state updater holds (fillReport). A task the input
// lists no end for had none anywhere, the member's report included: it
// reports none (-1).
func (cw *coreWorld) recordedEnds(m *member, r *recorded, listed bool) {
	for t, e := range m.reportedEnd {
		if (listed && m.reported[t] >= 0) || e >= 0 {
			m.reportedEnd[t] = r.ends[t]
		}
	}
}

// onRecorded says whether the assignor's input of a run carries recorded
// offsets: every member's last report came from the recording.
func (cw *coreWorld) onRecorded(run core.AssignorRun) bool {
	if len(cw.sc.recorded) == 0 || len(run.Input.Members) == 0 {
		return false
	}
	for _, m := range run.Input.Members {
		if !cw.recReport[m.MemberID] {
			return false
		}
	}
	return true
}

// pairMove pairs core's move of t to the member labelled label, in the
// target it installs now, with a recorded move of t to the same member:
// the latest recorded target moving t at or before now plus one
// heartbeat interval (core computes a target at a heartbeat, and the
// replay's heartbeats are not in step with the real ones), else the next
// one after it, when it gave t to that member. The move's delays are
// taken from core's target (shifted by the difference of the two
// targets' times): its new owner's hand-over (readyAtFor), its previous
// owner's stop and its grant (revoked).
func (cw *coreWorld) pairMove(t int32, label string) {
	delete(cw.paired, t)
	rs := cw.sc.recorded
	i := sort.Search(len(rs), func(i int) bool { return rs[i].atMs > cw.now+cw.sc.heartbeatIntervalMs() })
	for j := i - 1; j >= 0; j-- { // the latest before
		if mv, ok := rs[j].moves[t]; ok {
			if mv.member == label {
				cw.paired[t] = shifted(mv, cw.now-rs[j].atMs)
				return
			}
			break
		}
	}
	for ; i < len(rs); i++ { // the next after
		if mv, ok := rs[i].moves[t]; ok {
			if mv.member == label {
				cw.paired[t] = shifted(mv, cw.now-rs[i].atMs)
			}
			return
		}
	}
}

// shifted is mv with its times moved by d.
func shifted(mv move, d int64) move {
	for _, at := range []*int64{&mv.grantAt, &mv.readyAt} {
		if *at >= 0 {
			*at += d
		}
	}
	if mv.from != "" {
		mv.stopAt += d
	}
	return mv
}

// readyAtFor is when m, taking active task t at now, can run it:
// handOver later, or at the recorded hand-over of the recorded move
// paired with core's move of t to m (counted as recorded or modelled
// hand-overs when the scenario has recorded inputs).
func (cw *coreWorld) readyAtFor(m *member, t int32, handOver int64) int64 {
	if len(cw.sc.recorded) == 0 {
		return cw.now + handOver
	}
	if mv, ok := cw.paired[t]; ok && mv.member == m.label && mv.readyAt >= 0 {
		cw.out.Totals.RecordedHandOvers++
		return max(mv.readyAt, cw.now)
	}
	cw.out.Totals.ModelledHandOvers++
	return cw.now + handOver
}

// revoking is an active task a member gave up in its target and still
// owns, in its heartbeats, until untilMs.
type revoking struct {
	task    int32
	untilMs int64
}

// revoked applies the recorded move paired with core's move of active
// task t (pairMove), which m gives up at now: when the recording says m
// was its previous owner, m's process runs t until the recorded stop,
// when that is later; and m acknowledges the revocation — its heartbeats
// leave t out — no earlier than that stop and one heartbeat interval
// before the recorded grant, so that core hands t to its new owner, at
// that owner's next heartbeat, when the real group did. Counted as
// recorded or modelled grants, and recorded stops.
func (cw *coreWorld) revoked(m *member, t int32) {
	if len(cw.sc.recorded) == 0 {
		return
	}
	mv, ok := cw.paired[t]
	owner, has := cw.owner[t]
	until := int64(-1)
	if ok && has && mv.member == cw.labelOf[owner] && mv.grantAt >= 0 {
		cw.out.Totals.RecordedGrants++
		until = mv.grantAt - cw.sc.heartbeatIntervalMs()
	} else {
		cw.out.Totals.ModelledGrants++
	}
	if ok && mv.from == m.label {
		cw.out.Totals.RecordedStops++
		if mv.stopAt > cw.now && cw.running[t] {
			cw.prevRun[t] = prevRun{process: m.process, untilMs: mv.stopAt}
		}
		until = max(until, mv.stopAt)
	}
	if cl := cw.clientOf(m); cl != nil && until > cw.now {
		cl.revoking = append(cl.revoking, revoking{task: t, untilMs: until})
	}
}

// ownedActive are the active tasks cl's heartbeat says it owns: its
// target's, and the ones it is still giving up (revoked).
func (cw *coreWorld) ownedActive(cl *coreClient) []int32 {
	cl.revoking = slices.DeleteFunc(cl.revoking, func(r revoking) bool { return cw.now >= r.untilMs })
	if len(cl.revoking) == 0 {
		return cl.m.target.Active
	}
	out := slices.Clone(cl.m.target.Active)
	for _, r := range cl.revoking {
		out = append(out, r.task)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// recordedReportDue says whether cl's member took a report at a recorded
// time (reports.at or reports.values) this tick that it has not sent: the
// recording saw it reach the host then, so cl heartbeats now with it
// rather than at its next heartbeat (up to an interval later, when other
// members' reports the real host saw after it may have come first).
func (cw *coreWorld) recordedReportDue(cl *coreClient) bool {
	m := cl.m
	if _, timed := cw.sc.reportAt[m.label]; !timed || !cl.joined || m.reported == nil {
		return false
	}
	return m.reportAtMs == cw.now && cl.sentRep != m.reportAtMs
}
