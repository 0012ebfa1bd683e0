package sim

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/metrics"
)

// assign runs the assignor on the group as it is at now and installs the
// target: members reconcile at once. A probe whose target equals the
// current one changes nothing (core writes nothing for it). rec, when not
// nil, is the recorded input the assignor is handed.
func (w *world) assign(now int64, reasons []string, probe bool, rec *recorded) error {
	if len(w.members) == 0 { // nobody to assign to: every task waits
		w.probeAt = -1
		return nil
	}
	if !probe {
		w.epoch++
	} else if w.started {
		w.out.Totals.ProbingRounds++
	}
	req := w.request(rec)
	var resp *abi.AssignResponse
	var err error
	if !w.started && w.sc.Initial != nil {
		resp = w.initial(req)
	} else {
		resp, err = w.a.Assign(req)
	}
	if err == nil {
		err = abi.ValidateAssignment(req, resp)
	}
	if err != nil {
		return fmt.Errorf("at %v s, epoch %d: %s: %w", seconds(now), req.GroupEpoch, w.a.Name, err)
	}
	w.armProbe(now, resp)
	if probe && !w.differs(resp) {
		w.out.Totals.ProbesUnchanged++
		return nil
	}
	if probe {
		w.epoch++
	}
	report, err := metrics.Measure(req, resp, metrics.Options{})
	if err != nil {
		return fmt.Errorf("at %v s: %w", seconds(now), err)
	}
	rb := Rebalance{AtS: seconds(now), Epoch: w.epoch, Reasons: reasons, Baseline: !w.started,
		Members: report.Members, Processes: report.Processes, Movement: report.Movement,
		Balance: report.Balance, Standbys: report.Standbys, Warmups: report.Warmups, RecordedInputs: rec != nil}
	rb.FromDeparted = w.fromDeparted(req, resp)
	for i, m := range w.members {
		handOver := w.sc.HandOverMs
		if w.sc.HandOverFirstMs != nil && !w.runsAny(m) {
			handOver = *w.sc.HandOverFirstMs
		}
		if !sameAssignment(m.target, resp.Members[i]) && m.reportDueMs < 0 {
			// Its heartbeat after it took the new assignment carries a report.
			m.reportDueMs = now + w.grantMs(m)
		}
		if m.startAt == nil {
			m.startAt = make([]int64, len(w.end))
		}
		for _, set := range [][]int32{resp.Members[i].Standby, resp.Members[i].Warmup} {
			for _, t := range set {
				if w.started && !m.holds(t) {
					m.startAt[t] = now + handOver
					if m.classic {
						m.startAt[t] += w.sc.classicRejoinMs()
					}
				}
			}
		}
		m.target = resp.Members[i]
		for _, t := range m.target.Active {
			if !w.started {
				continue
			}
			if prev, ok := w.owner[t]; ok && prev != m.id {
				rb.TasksMoved++
			}
			if w.owner[t] != m.id {
				w.readyAt[t] = now + handOver + w.classicDelay(m, t)
				if mv, ok := rec.moveOf(t, m.label); ok && mv.readyAt >= 0 {
					w.readyAt[t] = max(mv.readyAt, now)
					rb.RecordedHandOvers++
				} else if rec != nil {
					rb.ModelledHandOvers++
				}
				w.stopMove(now, t, m, rec, &rb)
			}
		}
		w.reconcile(now, m, rec, &rb)
	}
	w.owner = map[int32]string{}
	for _, m := range w.members {
		for _, t := range m.target.Active {
			w.owner[t] = m.id
		}
	}
	if !w.started {
		w.started = true
		w.baseline()
	} else {
		w.out.Totals.add(rb)
	}
	w.out.Rebalances = append(w.out.Rebalances, rb)
	return nil
}

// runsAny says whether m runs one of its active tasks (account's last
// tick): a member that runs none yet, e.g. a process just started, takes
// handover_first_ms to start a task.
func (w *world) runsAny(m *member) bool {
	for _, t := range m.target.Active {
		if w.running[t] && w.owner[t] == m.id {
			return true
		}
	}
	return false
}

// reconcile updates what m owns after its new target: tasks it no longer
// has leave at once (they are being revoked), tasks it keeps stay, and a
// task new to it is its own grant_ms later (grant_first_ms for a member
// that owns no task yet), or when rec's recorded move of it to m says
// (counted in rb); a task whose grant to m is pending keeps it.
func (w *world) reconcile(now int64, m *member, rec *recorded, rb *Rebalance) {
	grantMs := w.grantMs(m)
	m.owned = slices.DeleteFunc(m.owned, func(t int32) bool { return !slices.Contains(m.target.Active, t) })
	for _, t := range m.target.Active {
		if slices.Contains(m.owned, t) {
			continue
		}
		if !w.started {
			m.owned = append(m.owned, t)
			continue
		}
		if w.grants[t].member == m.id { // still on its way to m: the new target changes nothing
			continue
		}
		at := now + grantMs + w.classicDelay(m, t)
		if mv, ok := rec.moveOf(t, m.label); ok && mv.grantAt >= 0 {
			at = mv.grantAt
			rb.RecordedGrants++
		} else if rec != nil {
			rb.ModelledGrants++
		}
		if at <= now {
			if w.grants[t].member != "" { // an earlier grant of it is void
				w.grants[t] = grant{}
				w.granting--
			}
			m.owned = append(m.owned, t)
			continue
		}
		if w.grants[t].member == "" {
			w.granting++
		}
		w.grants[t] = grant{member: m.id, atMs: at}
	}
	slices.Sort(m.owned)
}

// grantMs is how long m takes to own a task given to it: grant_ms, or
// grant_first_ms while it owns none.
func (w *world) grantMs(m *member) int64 {
	if w.sc.GrantFirstMs != nil && len(m.owned) == 0 {
		return *w.sc.GrantFirstMs
	}
	return w.sc.GrantMs
}

// grant applies the grants due at now: the task is its new owner's if it
// is still in that member's target.
func (w *world) grant(now int64) {
	if w.granting == 0 {
		return
	}
	for i, g := range w.grants {
		if g.member == "" || g.atMs > now {
			continue
		}
		t := int32(i)
		w.grants[i] = grant{}
		w.granting--
		for _, m := range w.members {
			if m.id == g.member && slices.Contains(m.target.Active, t) && !slices.Contains(m.owned, t) {
				m.owned = append(m.owned, t)
				slices.Sort(m.owned)
			}
		}
	}
}

// fromDeparted counts the active tasks of resp whose previous owner is no
// longer in the group: abi/metrics counts them as new, the simulation knows
// they moved.
func (w *world) fromDeparted(req *abi.AssignRequest, resp *abi.AssignResponse) int {
	in := map[string]bool{}
	for _, m := range req.Members {
		in[m.ID] = true
	}
	n := 0
	for _, a := range resp.Members {
		for _, t := range a.Active {
			if prev, ok := w.owner[t]; ok && !in[prev] {
				n++
			}
		}
	}
	return n
}

// baseline makes the first target's active and standby copies caught up
// (the group ran it before the scenario's window), then applies the
// starting point's lags.
func (w *world) baseline() {
	for _, m := range w.members {
		l := w.local[m.process]
		for _, set := range [][]int32{m.target.Active, m.target.Standby} {
			for _, t := range set {
				if w.stateful[t] {
					l[t] = w.end[t]
				}
			}
		}
	}
	for _, im := range w.sc.Initial {
		for _, m := range w.members {
			if m.label != im.Member {
				continue
			}
			tasks := slices.Sorted(maps.Keys(im.Lags))
			for _, name := range tasks {
				if t := w.sc.tasks[name]; w.stateful[t] {
					w.local[m.process][t] = max(w.end[t]-im.Lags[name], 0)
				}
			}
		}
	}
}

// initial is the starting point as the response to req: the listed
// members' tasks, nothing for the others.
func (w *world) initial(req *abi.AssignRequest) *abi.AssignResponse {
	resp := &abi.AssignResponse{Members: make([]abi.MemberAssignment, len(req.Members)), NextProbeMs: -1}
	for i, am := range req.Members {
		resp.Members[i] = abi.MemberAssignment{Active: []int32{}, Standby: []int32{}, Warmup: []int32{}}
		for _, im := range w.sc.Initial {
			if im.Member != w.labelOf[am.ID] {
				continue
			}
			for _, name := range im.Active {
				resp.Members[i].Active = append(resp.Members[i].Active, w.sc.tasks[name])
			}
			for _, name := range im.Standby {
				resp.Members[i].Standby = append(resp.Members[i].Standby, w.sc.tasks[name])
			}
			slices.Sort(resp.Members[i].Active)
			slices.Sort(resp.Members[i].Standby)
		}
	}
	return resp
}

func (w *world) differs(resp *abi.AssignResponse) bool {
	for i, m := range w.members {
		if !sameAssignment(m.target, resp.Members[i]) {
			return true
		}
	}
	return false
}

// holds says whether t is in m's target, as an active, standby or warm-up.
func (m *member) holds(t int32) bool {
	return slices.Contains(m.target.Active, t) || slices.Contains(m.target.Standby, t) || slices.Contains(m.target.Warmup, t)
}

func sameAssignment(a, b abi.MemberAssignment) bool {
	return slices.Equal(a.Active, b.Active) && slices.Equal(a.Standby, b.Standby) && slices.Equal(a.Warmup, b.Warmup)
}

// armProbe sets the probe timer as core does after a target: the
// assignor's hint, else the probing interval while warm-ups are open.
func (w *world) armProbe(now int64, resp *abi.AssignResponse) {
	w.probeAt = -1
	switch {
	case resp.NextProbeMs > 0:
		w.probeAt = now + resp.NextProbeMs
	case hasWarmups(resp.Members):
		w.probeAt = now + w.sc.Assignment.ProbingIntervalMs
	}
}

func hasWarmups(ms []abi.MemberAssignment) bool {
	for _, m := range ms {
		if len(m.Warmup) > 0 {
			return true
		}
	}
	return false
}

// probeDue says whether a probe starts at now: the timer fired, or the
// group is stable (no grant pending: every member reconciled), some
// warm-up caught up and that set of caught-up warm-ups differs from the
// one that started the previous early probe.
func (w *world) probeDue(now int64) bool {
	if !w.started || len(w.members) == 0 {
		return false
	}
	if w.probeAt >= 0 && now >= w.probeAt {
		return true
	}
	if w.granting > 0 {
		return false
	}
	var b strings.Builder
	for _, m := range w.members {
		if m.crashedMs >= 0 {
			continue
		}
		for _, t := range m.target.Warmup {
			if w.caughtUp(m.process, t) {
				b.WriteString(m.process + "/" + strconv.Itoa(int(t)) + " ")
			}
		}
	}
	if key := b.String(); key != "" && key != w.lastWarm {
		w.lastWarm = key
		return true
	}
	return false
}

// caughtUp applies abi/metrics' rule to what the host knows (knownEnd,
// knownOffset): the lag of the process's local state (the whole changelog
// without one) is within acceptable.recovery.lag; an unknown end is never
// caught up.
func (w *world) caughtUp(process string, t int32) bool {
	end := w.knownEnd(t)
	if end < 0 {
		return false
	}
	lag := end
	if o := w.knownOffset(process, t); o >= 0 && o <= end {
		lag = end - o
	}
	return lag <= w.sc.Assignment.AcceptableRecoveryLag
}

// account adds the interval [now, now+tick) to the unavailable figures: a
// task is unavailable while no running member has it active on caught-up
// state (a stateless task only needs a running owner), and while its hand-
// over to its owner (handover_ms) is not done — unless its previous owner
// still runs it (a recorded stop after the target). A member runs its
// tasks until it crashes, or until the recorded stops (runs).
func (w *world) account(now int64) {
	if !w.started {
		return
	}
	available := 0
	clear(w.running)
	clear(w.byPrev)
	for _, m := range w.members {
		l := w.local[m.process]
		for _, t := range m.target.Active {
			if now >= w.readyAt[t] && (!w.stateful[t] || l[t] >= w.end[t]) && w.runs(m, t, now) {
				available++
				w.running[t] = true
			}
		}
	}
	for t, p := range w.prevRun {
		if p.process != "" && now < p.untilMs && !w.running[t] {
			available++
			w.byPrev[t] = true
		}
	}
	n := len(w.end) - available
	dt := min(w.sc.TickMs, w.sc.durationMs()-now)
	w.out.unavailableMs += int64(n) * dt
	if n > 0 {
		if w.out.taskMs == nil {
			w.out.taskMs = make([]int64, len(w.end))
		}
		for t := range w.end {
			if !w.running[t] && !w.byPrev[t] {
				w.out.taskMs[t] += dt
			}
		}
	}
	w.out.Totals.MaxUnavailable = max(w.out.Totals.MaxUnavailable, n)
	if settled := n == 0 && w.granting == 0 && w.balancedNoWarmups(); settled != w.settled {
		w.settled = settled
		if settled {
			w.out.Totals.SettledAtS = seconds(now)
		}
	}
	if n != w.unavail {
		w.out.Unavailable = append(w.out.Unavailable, Point{AtS: seconds(now), Tasks: n})
		w.unavail = n
	}
}

// balancedNoWarmups says whether the installed target opens no warm-up,
// no member is crashed, and the processes' active tasks per member (a
// process's active tasks over its members: its share by thread count)
// differ by at most one.
func (w *world) balancedNoWarmups() bool {
	type load struct{ active, members int }
	var order []string
	byProc := map[string]*load{}
	for _, m := range w.members {
		if m.crashedMs >= 0 || len(m.target.Warmup) > 0 {
			return false
		}
		l := byProc[m.process]
		if l == nil {
			l = &load{}
			byProc[m.process] = l
			order = append(order, m.process)
		}
		l.active += len(m.target.Active)
		l.members++
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range order {
		per := float64(byProc[p].active) / float64(byProc[p].members)
		lo, hi = min(lo, per), max(hi, per)
	}
	return len(order) == 0 || hi-lo <= 1
}

// advance moves time on by one tick from now: the changelog of every task
// that runs (account) grows by grow records — its active writes it, and
// keeps its own state at the end — and every other copy on a running
// member's process restores towards its end (a caught-up copy follows it):
// each copy up to its process's rate for a tick, or with shared_restore
// the copies of a process share that rate, actives first. An active copy
// whose hand-over is not done yet does not restore, nor does a standby or
// warm-up copy new to its member within the same hand-over time. A task nobody runs
// writes nothing: its changelog stays where it is until its new owner has
// restored it.
func (w *world) advance(now, grow int64) {
	for t := range w.end {
		if w.stateful[t] && (w.running[t] || w.byPrev[t]) {
			w.end[t] += grow
		}
		if w.stateful[t] && w.byPrev[t] { // its previous owner writes it
			if l := w.local[w.prevRun[t].process]; l != nil {
				l[t] = w.end[t]
			}
		}
	}
	type copies struct{ active, other []int32 }
	w.advances++
	var order []string // processes in member order
	byProc := map[string]*copies{}
	for _, m := range w.members {
		if m.crashedMs >= 0 {
			continue
		}
		c := byProc[m.process]
		if c == nil {
			c = &copies{}
			byProc[m.process] = c
			order = append(order, m.process)
		}
		l, listed := w.local[m.process], w.listed[m.process]
		if listed == nil {
			listed = make([]int64, len(w.end))
			w.listed[m.process] = listed
		}
		for i, set := range [][]int32{m.target.Active, m.target.Standby, m.target.Warmup} {
			for _, t := range set {
				// listed[t]: another member of the process listed it already.
				if !w.stateful[t] || listed[t] == w.advances ||
					(i == 0 && now < w.readyAt[t]) || (i > 0 && now < m.startAt[t]) {
					continue
				}
				switch {
				case i == 0 && w.running[t]:
					l[t] = w.end[t]
					continue
				case i == 0:
					c.active = append(c.active, t)
				default:
					c.other = append(c.other, t)
				}
				listed[t] = w.advances
			}
		}
	}
	tick := w.sc.TickMs
	for _, p := range order {
		c, l := byProc[p], w.local[p]
		rate := w.sc.State.RestorePerS
		if r, ok := w.rate[p]; ok {
			rate = r
		}
		if !w.sc.State.SharedRestore {
			for _, t := range append(c.active, c.other...) {
				from := max(l[t], 0)
				l[t] = min(from+rate*tick/1000, w.end[t])
				w.restored(l[t] - from)
			}
			continue
		}
		set := c.active
		if len(set) == 0 {
			set = c.other
		}
		if q := w.quota[p]; q != nil {
			w.fetch(q, l, set, now, tick)
			continue
		}
		w.carry[p] += rate * tick
		budget := w.carry[p] / 1000
		w.carry[p] %= 1000
		w.share(l, set, budget)
	}
}

// share restores the copies of set on a process whose state is l with
// budget records in all: equal shares, a copy that needs less than its
// share leaving the rest to the others.
func (w *world) share(l []int64, set []int32, budget int64) {
	need := func(t int32) int64 { return w.end[t] - max(l[t], 0) }
	set = slices.Clone(set)
	slices.SortFunc(set, func(a, b int32) int {
		if na, nb := need(a), need(b); na != nb {
			return cmp.Compare(na, nb)
		}
		return cmp.Compare(a, b)
	})
	for i, t := range set {
		got := min(need(t), budget/int64(len(set)-i))
		l[t] = max(l[t], 0) + got
		budget -= got
		w.restored(got)
	}
}

// restored adds n records restored to the totals, saturating.
func (w *world) restored(n int64) {
	if n > 0 {
		w.out.Totals.RecordsRestored = satAdd(w.out.Totals.RecordsRestored, n)
	}
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func satMul(a, b int64) int64 {
	if b != 0 && a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

func seconds(ms int64) float64 { return float64(ms) / 1000 }
