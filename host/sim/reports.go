package sim

import "slices"

// report refreshes what the host knows (Scenario.Reports): the changelogs'
// end offsets when the host's refresh is due, and the report of every
// running member that reports at now — when it joins and then at its
// recorded times (reports.at) when it has them, else by the model's rules.
// A recorded time that falls while its member is not in the group (or
// crashed) is passed over.
func (w *world) report(now int64) {
	r := w.sc.Reports
	if r == nil {
		return
	}
	switch {
	case w.hostEnd == nil:
		w.hostEnd = slices.Clone(w.end)
		w.refreshAtMs = r.EndOffsetsPhaseMs
	case now >= w.refreshAtMs:
		copy(w.hostEnd, w.end)
		w.refreshAtMs += (now-w.refreshAtMs)/r.EndOffsetsRefreshMs*r.EndOffsetsRefreshMs + r.EndOffsetsRefreshMs
	}
	for _, m := range w.members {
		if m.crashedMs >= 0 {
			continue
		}
		if times, ok := w.sc.reportAt[m.label]; ok {
			// Its recorded times: each reported at the first tick at or
			// after it; before the first, it reports when it joins.
			i, _ := slices.BinarySearch(times, now-w.sc.TickMs+1)
			due := i < len(times) && times[i] <= now
			if m.reported == nil || due {
				w.takeReport(now, m)
			}
			if due {
				last, _ := slices.BinarySearch(times, now+1)
				w.recordedValue(m, last-1)
			}
			continue
		}
		if (m.reportDueMs >= 0 && now >= m.reportDueMs) || m.reported == nil || now-m.reportAtMs >= r.TaskOffsetIntervalMs || w.hotWarmup(now, m) {
			w.takeReport(now, m)
		}
	}
}

// recordedValue replaces m's report with its i-th recorded value
// (reports.values), the last of a tick that holds several; a member
// without recorded values keeps the model's. The value also says how far
// the real process had restored then: a copy on m's process that the
// replay restored less far is brought up to it (restoredTo), so the
// replay's state is never behind what its own reports tell the
// assignor.
func (w *world) recordedValue(m *member, i int) {
	if vals := w.sc.reportVal[m.label]; i < len(vals) {
		copy(m.reported, vals[i].offs)
		copy(m.reportedEnd, vals[i].ends)
		w.restoredTo(m.process, vals[i])
	}
}

// restoredTo brings the local state of process p up to recorded report
// v: each stateful task v gives an offset for is at least that far — as
// far behind the replay's changelog end as v's offset was behind v's end
// for the task (the replay's changelogs follow the model, not the real
// ones, and it is the lag that the assignor judged), or, without an end
// in v, at v's offset (at most the changelog's end). State beyond it
// stays.
func (w *world) restoredTo(p string, v reportValue) {
	l := w.local[p]
	if l == nil {
		return
	}
	for t, o := range v.offs {
		if o < 0 || !w.stateful[t] {
			continue
		}
		at := min(o, w.end[t])
		if e := v.ends[t]; e >= 0 {
			at = w.end[t] - max(e-o, 0)
		}
		l[t] = max(l[t], at)
	}
}

// hotWarmup says whether one of m's warm-ups is within the acceptable
// recovery lag, as its Kafka Streams 4.4 client judges it
// (StreamsGroupHeartbeatRequestManager): a warm-up its state updater
// holds whose reported end less its reported offset is within the lag
// (updating; an unknown end or offset is not hot). The client then sends
// its offsets on every heartbeat where they changed.
func (w *world) hotWarmup(now int64, m *member) bool {
	l := w.local[m.process]
	for _, t := range m.target.Warmup {
		if w.updating(now, m, t, false) && w.end[t]-l[t] <= w.sc.Assignment.AcceptableRecoveryLag {
			return true
		}
	}
	return false
}

// takeReport records m's report at now (fillReport).
func (w *world) takeReport(now int64, m *member) {
	n := len(w.end)
	if m.reported == nil {
		m.reported, m.reportedEnd = make([]int64, n), make([]int64, n)
	}
	w.fillReport(now, m, m.reported, m.reportedEnd)
	m.reportAtMs, m.reportDueMs = now, -1
}

// fillReport sets what m reports now, as a Kafka Streams 4.4 member's
// StreamsGroupHeartbeatRequestManager takes it from two snapshots:
//
//   - offsets (TaskManager.maybeUpdateTaskOffsetSumSnapshot): the offset
//     sums its process's state directory holds (StateDirectory, updated as
//     stores restore and commit), the active tasks its thread runs left
//     out;
//   - ends (DefaultStateUpdater's task end-offset snapshot): one entry per
//     task its state updater holds — an active still restoring, a standby
//     or a warm-up (a standby on the client) — and no other: a copy its
//     member has not created yet (before the hand-over time after its
//     target, startAt and readyAt here) and a running active have none.
//     Its value is the changelog's end as the state updater last saw it
//     (the end read when an active's restore began; a standby's offset
//     plus the restore consumer's lag after its last batch), which in the
//     simulation is the changelog's end: nobody writes a changelog whose
//     active is restoring, and a copy restores at every tick. A copy that
//     restored nothing yet reports Long.MAX_VALUE ("unknown"), which core
//     reads as no end; it is left out here.
//
// -1: not reported.
func (w *world) fillReport(now int64, m *member, offsets, ends []int64) {
	copy(offsets, w.local[m.process])
	for i := range ends {
		ends[i] = -1
	}
	for _, t := range m.target.Active {
		switch {
		case w.running[t] && w.owner[t] == m.id:
			offsets[t] = -1
		case w.updating(now, m, t, true):
			ends[t] = w.end[t]
		}
	}
	for _, set := range [][]int32{m.target.Standby, m.target.Warmup} {
		for _, t := range set {
			if w.updating(now, m, t, false) {
				ends[t] = w.end[t]
			}
		}
	}
}

// updating says whether m's state updater holds its copy of t, an active
// one or a standby or warm-up: the member has created the task —
// an active once its hand-over is done, a standby or warm-up once its
// start time came (advance restores from then) — and it has state to
// report an end for (a copy that restored nothing yet: Long.MAX_VALUE).
func (w *world) updating(now int64, m *member, t int32, active bool) bool {
	if !w.stateful[t] || w.local[m.process][t] < 0 {
		return false
	}
	if active {
		return now >= w.readyAt[t]
	}
	return m.startAt == nil || now >= m.startAt[t]
}

// knownEnd is the end offset of t's changelog the host knows: the true one
// without reports, else the largest the host read or a member reported
// (-1: none).
func (w *world) knownEnd(t int32) int64 {
	if w.sc.Reports == nil {
		return w.end[t]
	}
	e := int64(-1)
	if w.hostEnd != nil {
		e = w.hostEnd[t]
	}
	for _, m := range w.members {
		if m.reportedEnd != nil {
			e = max(e, m.reportedEnd[t])
		}
	}
	return e
}

// knownOffset is the offset of process's state for t the host knows: the
// true one without reports, else the largest its members reported (-1:
// none).
func (w *world) knownOffset(process string, t int32) int64 {
	if w.sc.Reports == nil {
		return w.local[process][t]
	}
	o := int64(-1)
	for _, m := range w.members {
		if m.process == process && m.reported != nil {
			o = max(o, m.reported[t])
		}
	}
	return o
}
