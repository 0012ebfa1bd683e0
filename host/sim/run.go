package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/coordhost/coordhost/abi"
)

// Assignor is one assignor to simulate: a name and version for the report
// and the function that computes a target, which must return a valid
// assignment (abi.ValidateAssignment) or an error.
type Assignor struct {
	Name    string
	Version string
	Assign  func(*abi.AssignRequest) (*abi.AssignResponse, error)
	// Probe is the assignor's own probing policy (a module's
	// coordhost_probe), nil: it has none. The core engine asks it when
	// a probe is due, as coordhost does for a group whose
	// streams.probing.policy is left to the assignor (the default);
	// without one, core's built-in rule decides. The model engine keeps
	// its own rule.
	Probe func(*abi.ProbeRequest) (*abi.ProbeResponse, error)
}

// Run replays sc against each assignor in turn and returns the report.
// Every assignor sees the same events, member ids and changelogs; an
// assignor that fails stops its own replay (its error is in the report).
func Run(sc *Scenario, assignors []Assignor) *Report {
	r := &Report{Scenario: sc.Name, Seed: sc.Seed, DurationS: sc.DurationS, TickMs: sc.TickMs,
		Tasks: int(abi.NewTaskSpace(sc.subs).Total()), RestorePerS: sc.State.RestorePerS, SharedRestore: sc.State.SharedRestore}
	for _, a := range assignors {
		r.Assignors = append(r.Assignors, newWorld(sc, a).run())
	}
	return r
}

// member is one member of the group as the simulation knows it.
type member struct {
	label, id, process, rack string
	crashedMs                int64 // when it crashed (the event's time); -1: running
	classic                  bool  // on the classic protocol, bridged (classic_rejoin_ms)
	target                   abi.MemberAssignment
	owned                    []int32 // the active tasks it owns: the assignor's input (grant_ms)
	// What it last reported (reports): per task the offset of its
	// process's state and the changelog's end offset, -1 when not
	// reported; nil before its first report.
	reported, reportedEnd []int64
	reportAtMs            int64
	reportDueMs           int64 // when it reports after its target changed (its grant time), -1: none
	// startAt is, per task, when a standby or warm-up copy new to it
	// starts restoring (the hand-over time after its target: it learns of
	// the copy and creates the task first).
	startAt []int64
}

// prevRun is a moved task still running on its previous owner's process
// until untilMs (a recorded stop after the target); process "": none.
type prevRun struct {
	process string
	untilMs int64
}

// grant is a task's pending grant to its new owner (grant_ms).
type grant struct {
	member string
	atMs   int64
}

// world is one assignor's replay of the scenario.
type world struct {
	sc          *Scenario
	a           Assignor
	stateful    []bool
	end         []int64            // per task: changelog end offset
	local       map[string][]int64 // per process: offset of its local state per task, -1 none
	appendMs    int64              // records per second of each changelog
	members     []*member          // in the group, sorted by id
	epoch       int32
	started     bool // the first target is installed
	probeAt     int64
	lastWarm    string                // caught-up warm-ups that started the last early probe
	owner       map[int32]string      // active task -> member id in the installed target
	readyAt     []int64               // per task: when its current owner may run it (handover_ms)
	running     []bool                // per task: an active runs it on caught-up state (account)
	grants      []grant               // per task: its pending grant to its new owner (member "": none)
	granting    int                   // pending grants
	rate        map[string]int64      // per process given its own: restore records per second
	quota       map[string]*quotaLink // per process given a restore_quota: its restore consumer under it
	carry       map[string]int64      // per process (shared_restore): sub-record remainder, record-milliseconds
	listed      map[string][]int64    // per process: per task, the advance call that listed its copy to restore last
	advances    int64                 // advance calls so far
	hostEnd     []int64               // per task (reports): the end offset the host read last
	refreshAtMs int64                 // when the host reads the end offsets next (reports)
	recorded    []recorded            // the recorded inputs not yet due
	prevRun     []prevRun             // per task: its previous owner runs it on (a recorded stop)
	byPrev      []bool                // per task: running on its previous owner at this tick (account)
	labelOf     map[string]string
	procOf      map[string]string // member id -> label, process, of every member that joined
	out         *AssignorReport
	unavail     int              // tasks without a caught-up active at the last tick
	settled     bool             // the group was settled at the last tick (account)
	classicOf   map[string]bool  // label -> its last join was on the classic protocol
	streamsMode bool             // the group is a streams group (converted from classic while it has a streams member)
	downUntil   int64            // coordhost is down until then (coordhost_restart), and loaded the group then
	pending     []string         // reasons that reached nobody while coordhost was down
	away        map[string]int64 // process -> when its last member left on its own, until one of its members joins again
}

func newWorld(sc *Scenario, a Assignor) *world {
	w := &world{sc: sc, a: a, local: map[string][]int64{}, appendMs: sc.State.AppendPerS, probeAt: -1, recorded: sc.recorded,
		rate: map[string]int64{}, quota: map[string]*quotaLink{}, carry: map[string]int64{}, listed: map[string][]int64{}, labelOf: map[string]string{}, procOf: map[string]string{},
		classicOf: map[string]bool{}, away: map[string]int64{},
		out: &AssignorReport{Name: a.Name, Version: a.Version, Rebalances: []Rebalance{}, Unavailable: []Point{}}, unavail: -1}
	rng := rand.New(rand.NewPCG(sc.Seed, 0x6368616e67656c6f)) // "changelo"
	for _, s := range sc.subs {
		for range s.Partitions {
			w.stateful = append(w.stateful, s.Stateful)
			var e int64
			if s.Stateful {
				e = sc.State.ChangelogRecords
				if own, ok := sc.changelogOf[s.ID]; ok {
					e = own
				}
				if sc.State.ChangelogJitter > 0 {
					e += rng.Int64N(sc.State.ChangelogJitter + 1)
				}
			}
			w.end = append(w.end, e)
		}
	}
	w.readyAt = make([]int64, len(w.end))
	w.running = make([]bool, len(w.end))
	w.grants = make([]grant, len(w.end))
	w.prevRun = make([]prevRun, len(w.end))
	w.byPrev = make([]bool, len(w.end))
	return w
}

func (w *world) run() AssignorReport {
	steps := w.sc.steps
	tick := w.sc.TickMs
	var carry int64 // sub-record remainder of changelog growth, in record-milliseconds
	for now := int64(0); now < w.sc.durationMs(); now += tick {
		// Fencing first: a label whose crashed member is fenced at this
		// tick may join again in the same tick (Decode allows it from
		// the crash's time plus the session timeout).
		// While coordhost is down (coordhost_restart) nothing reaches it:
		// no grant, no fence, no report, no target; the members keep
		// running what they have, and the changes wait until it is back.
		down := now < w.downUntil
		var reasons []string
		if !down {
			w.grant(now)
			reasons = append(w.fence(now), w.pending...)
			w.pending = nil
		}
		for len(steps) > 0 && steps[0].atMs <= now {
			reasons = w.apply(steps[0], reasons)
			steps = steps[1:]
		}
		if r := w.convert(now, len(reasons) > 0); r != "" {
			reasons = append(reasons, r)
		}
		if down = now < w.downUntil; down {
			w.pending, reasons = append(w.pending, reasons...), nil
		} else {
			w.report(now)
		}
		// With recorded inputs, the targets are computed where the real
		// ones were (and at the steps): no probe of the model's own.
		var rec *recorded
		if !down {
			rec = w.recordedDue(now)
			reasons = w.holdJoins(now, rec, reasons)
		}
		var err error
		switch {
		case down:
		case len(reasons) > 0:
			err = w.assign(now, reasons, false, rec)
		case rec != nil && rec.probe:
			err = w.assign(now, []string{"probe"}, true, rec)
		case rec != nil:
			err = w.assign(now, []string{"recorded-target"}, false, rec)
		case len(w.sc.recorded) == 0 && w.probeDue(now):
			err = w.assign(now, []string{"probe"}, true, nil)
		}
		if err != nil {
			w.out.Error = err.Error()
			break
		}
		w.account(now)
		carry += w.appendMs * tick
		grow := carry / 1000
		carry %= 1000
		w.advance(now, grow)
	}
	return w.finish()
}

// finish closes the totals after the last tick.
func (w *world) finish() AssignorReport {
	w.out.UnavailableTaskS = float64(w.out.unavailableMs) / 1000
	i := 0
	for _, sub := range w.sc.subs {
		for p := range sub.Partitions {
			if i < len(w.out.taskMs) && w.out.taskMs[i] > 0 {
				w.out.UnavailableByTask = append(w.out.UnavailableByTask,
					TaskUnavailable{Task: sub.ID + "_" + strconv.Itoa(int(p)), S: float64(w.out.taskMs[i]) / 1000})
			}
			i++
		}
	}
	t := &w.out.Totals
	t.SettleS = -1
	if !w.settled {
		t.SettledAtS = -1
	} else if w.out.Error == "" {
		t.SettleS = max(t.SettledAtS-seconds(w.sc.lastEventMs()), 0)
	}
	if b := w.sc.State.RecordBytes; b > 0 {
		t.BytesRestored = satMul(t.RecordsRestored, b)
	}
	return *w.out
}

// apply applies one step and returns reasons with the reasons it gives
// for a rebalance.
func (w *world) apply(s step, reasons []string) []string {
	switch s.kind {
	case stepJoin:
		for _, old := range w.members {
			// Its crashed predecessor is still in the group: coordhost was
			// down when its session would have run out. The new one
			// replaces it.
			if old.label == s.label {
				w.remove(old)
				reasons = append(reasons, "member-fenced:"+s.label)
				break
			}
		}
		classic := s.protocol == "classic" || (s.protocol == "" && w.classicOf[s.label])
		w.classicOf[s.label] = classic
		m := &member{label: s.label, id: s.id, process: s.process, rack: s.rack, crashedMs: -1, reportDueMs: -1, classic: classic}
		delete(w.away, s.process)
		i, _ := slices.BinarySearchFunc(w.members, m.id, func(a *member, id string) int { return strings.Compare(a.id, id) })
		w.members = slices.Insert(w.members, i, m)
		w.labelOf[m.id], w.procOf[m.id] = m.label, m.process
		if w.local[m.process] == nil {
			w.local[m.process] = none(len(w.end))
		}
		if s.n > 0 {
			w.rate[m.process] = s.n
		}
		if s.quota != nil && w.quota[m.process] == nil {
			w.quota[m.process] = &quotaLink{q: s.quota}
		}
		m.reportDueMs = -1
		return append(reasons, "member-joined:"+s.label)
	case stepLeave:
		m := w.find(s.label)
		w.remove(m)
		w.away[m.process] = s.atMs
		return append(reasons, "member-left:"+s.label)
	case stepCoordhostRestart:
		// Back at atMs + n: coordhost loads the group from its log, and
		// every session timer starts again then (as core reschedules them
		// at load).
		w.downUntil = max(w.downUntil, s.atMs+s.n)
	case stepCrash:
		w.find(s.label).crashedMs = s.atMs
	case stepAppend:
		w.appendMs = s.n
	case stepLoseState:
		if l := w.local[s.process]; l != nil {
			copy(l, none(len(l)))
		}
	}
	return reasons
}

// convert applies the online migration between the protocols as core
// does: a group whose members are all classic is a classic group; the
// first streams member converts it to a streams group, with a rebalance.
// It converts back, without a rebalance, once its members are all
// classic, the group has settled — in core's sense: no rebalance is due
// (the target includes every member) and every member holds its target,
// no grant pending; copies may still be restoring — and no process that
// left on its own within a session timeout is still away
// (docs/MIGRATION.md, the settled downgrade). It returns the reason it gives for a rebalance, if it
// converted with one.
func (w *world) convert(now int64, rebalancing bool) string {
	streams, classic := false, false
	for _, m := range w.members {
		if m.classic {
			classic = true
		} else {
			streams = true
		}
	}
	switch {
	case streams && !w.streamsMode:
		w.streamsMode = true
		if classic {
			w.out.Conversions = append(w.out.Conversions, Conversion{AtS: seconds(now), To: "streams"})
			return "group-converted:streams"
		}
	case !streams && classic && w.streamsMode && !rebalancing && w.granting == 0 && !w.awaited(now):
		w.streamsMode = false
		w.out.Conversions = append(w.out.Conversions, Conversion{AtS: seconds(now), To: "classic"})
	}
	return ""
}

// awaited reports whether a process that left on its own less than a
// session timeout ago has not come back.
func (w *world) awaited(now int64) bool {
	for _, at := range w.away {
		if now < at+ms(w.sc.SessionTimeoutS) {
			return true
		}
	}
	return false
}

// classicDelay is classic_rejoin_ms when task t's new owner m or its
// previous owner is on the classic protocol: a bridged classic member
// takes a changed assignment only after it rejoined.
func (w *world) classicDelay(m *member, t int32) int64 {
	if prev, ok := w.owner[t]; m.classic || (ok && w.classicOf[w.labelOf[prev]]) {
		return w.sc.classicRejoinMs()
	}
	return 0
}

// fence removes the crashed members whose session timed out.
func (w *world) fence(now int64) []string {
	var out []string
	for _, m := range slices.Clone(w.members) {
		if m.crashedMs >= 0 && now >= max(m.crashedMs, w.downUntil)+ms(w.sc.SessionTimeoutS) {
			w.remove(m)
			out = append(out, "member-fenced:"+m.label)
		}
	}
	return out
}

func (w *world) find(label string) *member {
	for _, m := range w.members {
		if m.label == label {
			return m
		}
	}
	panic(fmt.Sprintf("sim: member %q not in the group (Decode checks every step)", label))
}

func (w *world) remove(m *member) {
	w.members = slices.DeleteFunc(w.members, func(x *member) bool { return x == m })
}

func none(n int) []int64 {
	l := make([]int64, n)
	for i := range l {
		l[i] = -1
	}
	return l
}

// request builds the input the host would hand the assignor: members
// sorted by id, their owned active tasks (their target's, grant_ms after
// it) and their target's standbys and warm-ups, the offsets of the
// local state of their process and every changelog's end offset — or,
// with rec, the end offsets and each process's offsets rec holds.
func (w *world) request(rec *recorded) *abi.AssignRequest {
	a := w.sc.Assignment
	req := &abi.AssignRequest{GroupID: w.sc.Name, GroupEpoch: w.epoch, Seed: splitmix(w.sc.Seed ^ uint64(w.epoch)),
		Subtopologies: w.sc.subs,
		Configs: abi.Configs{NumStandbyReplicas: a.NumStandbyReplicas, NumWarmupReplicas: a.NumWarmupReplicas,
			AcceptableRecoveryLag: a.AcceptableRecoveryLag, All: []abi.KV{
				{Key: "acceptable.recovery.lag", Value: strconv.FormatInt(a.AcceptableRecoveryLag, 10)},
				{Key: "num.standby.replicas", Value: strconv.Itoa(int(a.NumStandbyReplicas))},
				{Key: "num.warmup.replicas", Value: strconv.Itoa(int(a.NumWarmupReplicas))},
				{Key: "probing.rebalance.interval.ms", Value: strconv.FormatInt(a.ProbingIntervalMs, 10)},
			}}}
	var procs map[string]int32
	req.Processes, procs = processIndex(len(w.members), func(i int) string { return w.members[i].process })
	ends := w.endOffsets(rec)
	for _, m := range w.members {
		am := abi.Member{ID: m.id, Process: procs[m.process], Rack: m.rack,
			Active: m.owned, Standby: m.target.Standby, Warmup: m.target.Warmup, TaskEndOffsets: ends,
			TaskOffsets: w.taskOffsets(m, rec)}
		req.Members = append(req.Members, am)
	}
	return req
}

// processIndex lists the process ids (processID) of the distinct
// processes of n members (process(i) is the i-th's name), sorted as the
// host sorts them for core, and maps each name to its index in the list:
// the assignor sees the same processes in the same order on both engines.
func processIndex(n int, process func(int) string) ([]string, map[string]int32) {
	var list []string
	idOf := map[string]string{}
	for i := range n {
		p := process(i)
		if _, ok := idOf[p]; !ok {
			idOf[p] = processID(p).String()
			list = append(list, idOf[p])
		}
	}
	sort.Strings(list)
	procs := make(map[string]int32, len(idOf))
	for p, id := range idOf {
		i, _ := slices.BinarySearch(list, id)
		procs[p] = int32(i)
	}
	return list, procs
}

// endOffsets are the changelogs' end offsets the request hands every
// member: rec's, else the known end of each stateful task.
func (w *world) endOffsets(rec *recorded) []abi.TaskOffset {
	if rec != nil {
		return rec.endOffsets()
	}
	var ends []abi.TaskOffset
	for t := range w.end {
		if e := w.knownEnd(int32(t)); w.stateful[t] && e >= 0 {
			ends = append(ends, abi.TaskOffset{Task: int32(t), Offset: e})
		}
	}
	return ends
}

// taskOffsets are the offsets of m's process's local state the request
// hands m: rec's, else the state itself or (reports) m's last report.
func (w *world) taskOffsets(m *member, rec *recorded) []abi.TaskOffset {
	if rec != nil {
		return rec.taskOffsets(m.process)
	}
	offsets := w.local[m.process]
	if w.sc.Reports != nil {
		offsets = m.reported
	}
	var out []abi.TaskOffset
	for t, o := range offsets {
		if o >= 0 && w.stateful[t] {
			out = append(out, abi.TaskOffset{Task: int32(t), Offset: o})
		}
	}
	return out
}

// splitmix is SplitMix64's finalizer: a per-run seed from the scenario's.
func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
