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
			if m.reported == nil || (i < len(times) && times[i] <= now) {
				w.takeReport(now, m)
			}
			continue
		}
		if (m.reportDueMs >= 0 && now >= m.reportDueMs) || m.reported == nil || now-m.reportAtMs >= r.TaskOffsetIntervalMs || w.hotWarmup(m) {
			w.takeReport(now, m)
		}
	}
}

// hotWarmup says whether one of m's warm-ups is within the acceptable
// recovery lag of its changelog's end, as its process sees it: the client
// then reports on every heartbeat.
func (w *world) hotWarmup(m *member) bool {
	l := w.local[m.process]
	for _, t := range m.target.Warmup {
		if w.stateful[t] && l[t] >= 0 && w.end[t]-l[t] <= w.sc.Assignment.AcceptableRecoveryLag {
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
	w.fillReport(m, m.reported, m.reportedEnd)
	m.reportAtMs, m.reportDueMs = now, -1
}

// fillReport sets what m reports now, as Kafka Streams 4.4's TaskManager
// and state updater give it: in offsets its process's offsets, the
// actives it runs left out, and in ends the end offsets of the copies
// it restores (-1: not reported).
func (w *world) fillReport(m *member, offsets, ends []int64) {
	copy(offsets, w.local[m.process])
	for i := range ends {
		ends[i] = -1
	}
	for _, t := range m.target.Active {
		if w.running[t] && w.owner[t] == m.id {
			offsets[t] = -1
		} else {
			ends[t] = w.end[t]
		}
	}
	for _, set := range [][]int32{m.target.Standby, m.target.Warmup} {
		for _, t := range set {
			ends[t] = w.end[t]
		}
	}
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
