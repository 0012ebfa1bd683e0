package interop

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The hand-over timeline of TestInteropCompare: where each task's time goes
// when one instance of a rolling restart (plain or online) stops and comes
// back. Its sources are the ones both sides share — the Kafka Streams
// instances' own logs (a task suspended by its old owner, assigned to its
// new one, restored and running), the load generator's per-partition
// outputs (the first output after the stall) — and, on the coordhost side
// only, coordhost's log at DEBUG: the member leaving or fenced, the target
// recomputed, and each member's delivered assignment.

// step is one instance's restart within a phase: the load generator's
// phase "<phase>/<instance>" while TestInteropCompare runs.
type step struct {
	scenario, phase string
	instance        int
	start, end      time.Time
	// firstOutMs is, per input partition, when the output of the phase's
	// record with the largest gap was read (unix ms): the end of that
	// partition's stall; 0 without one.
	firstOutMs []int64
}

// stepPhases makes rollingSwitch start one load-generator phase per
// instance restart ("rolling-upgrade/0", ...): only TestInteropCompare
// sets it, so the CI scenarios keep one row per phase.
var stepPhases bool

// rollEnded is when the latest rollingSwitch finished: the end of its last
// restart's step when no phase follows it.
var rollEnded time.Time

// stepsOf returns the rows' per-restart phases as steps and the rows with
// those phases folded back into one row per phase (counts summed, gaps the
// per-partition maximum). A step ends where the next phase begins, the
// last one at end (when the scenario's load stopped).
func stepsOf(rows []phaseRow, end time.Time) ([]step, []phaseRow) {
	var steps []step
	var out []phaseRow
	for i, r := range rows {
		base, inst, ok := strings.Cut(r.phase.Name, "/")
		if !ok {
			out = append(out, r)
			continue
		}
		n, _ := strconv.Atoi(inst)
		st := step{scenario: r.scenario, phase: base, instance: n, start: time.UnixMilli(r.phase.StartMs)}
		if i+1 < len(rows) && rows[i+1].phase.StartMs > 0 {
			st.end = time.UnixMilli(rows[i+1].phase.StartMs)
		} else {
			st.end = end
		}
		for p, g := range r.phase.PartitionGapMs {
			var at int64
			if p < len(r.phase.WorstProducedMs) && r.phase.WorstProducedMs[p] > 0 {
				at = r.phase.WorstProducedMs[p] + g
			}
			st.firstOutMs = append(st.firstOutMs, at)
		}
		steps = append(steps, st)
		if k := len(out) - 1; k >= 0 && out[k].scenario == r.scenario && out[k].phase.Name == base {
			merged := &out[k].phase
			merged.In += r.phase.In
			merged.Out += r.phase.Out
			for p, g := range r.phase.PartitionGapMs {
				if p < len(merged.PartitionGapMs) && g > merged.PartitionGapMs[p] {
					merged.PartitionGapMs[p] = g
					merged.WorstProducedMs[p] = r.phase.WorstProducedMs[p]
					merged.WorstKey[p] = r.phase.WorstKey[p]
				}
			}
			continue
		}
		r.phase.Name = base
		r.phase.PartitionGapMs = slices.Clone(r.phase.PartitionGapMs)
		r.phase.WorstProducedMs = slices.Clone(r.phase.WorstProducedMs)
		r.phase.WorstKey = slices.Clone(r.phase.WorstKey)
		out = append(out, r)
	}
	return steps, out
}

// logEvent is one line of a log that matters to a hand-over.
type logEvent struct {
	at   time.Time
	kind string // see the evXxx constants
	task string // "0_3"; "" for member-level events
	who  string // stream thread ("app1-streams-2-StreamThread-1") or coordhost member id
}

const (
	evSuspend   = "suspend"   // app: the owner suspended the task (revocation or close)
	evAssign    = "assign"    // app: the task is new among the thread's active tasks
	evRunning   = "running"   // app: the task restored and runs
	evLeft      = "left"      // coordhost: a member left or was fenced
	evTarget    = "target"    // coordhost: a new target installed (classic group: a generation stored)
	evDelivered = "delivered" // coordhost: the task entered a member's current assignment
	evReleased  = "released"  // coordhost: the task left a member's current assignment
)

var (
	appLineRe    = regexp.MustCompile(`^(\d\d:\d\d:\d\d\.\d\d\d) \S+\s+\[([^\]]+)\]`)
	taskRe       = regexp.MustCompile(`task \[(\d+_\d+)\] (Suspended from RUNNING|Restored and ready to run)`)
	listRe       = regexp.MustCompile(`^\s+(New|Existing) active tasks: \[(.*)\]`)
	chTimeRe     = regexp.MustCompile(`^time=(\S+) `)
	chFieldRe    = regexp.MustCompile(`(\w+)=("(?:[^"\\]|\\.)*"|\S*)`)
	threadOfName = regexp.MustCompile(`^(.*-StreamThread-\d+)`)
)

// appEvents reads one Kafka Streams instance log. Its timestamps carry no
// date: day is the date (local time, as the JVM prints) they fall on.
func appEvents(path string, day time.Time) ([]logEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []logEvent
	var pending *logEvent // a "Handle new assignment" block being read
	var newActive []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if pending != nil {
			if m := listRe.FindStringSubmatch(line); m != nil {
				tasks := splitTasks(m[2])
				if m[1] == "New" {
					newActive = tasks
					continue
				}
				for _, t := range newActive {
					if !slices.Contains(tasks, t) {
						out = append(out, logEvent{at: pending.at, kind: evAssign, task: t, who: pending.who})
					}
				}
				pending = nil
				continue
			}
			if !strings.HasPrefix(line, "\t") {
				pending = nil
			}
		}
		m := appLineRe.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		at, err := time.ParseInLocation("2006-01-02 15:04:05.000", day.Format("2006-01-02 ")+m[1], time.Local)
		if err != nil {
			continue
		}
		who := m[2]
		if tm := threadOfName.FindStringSubmatch(who); tm != nil {
			who = tm[1]
		}
		switch {
		case strings.Contains(line, "Handle new assignment with:"):
			pending, newActive = &logEvent{at: at, who: who}, nil
		default:
			if tm := taskRe.FindStringSubmatch(line); tm != nil {
				kind := evSuspend
				if strings.HasPrefix(tm[2], "Restored") {
					kind = evRunning
				}
				out = append(out, logEvent{at: at, kind: kind, task: tm[1], who: who})
			}
		}
	}
	return out, sc.Err()
}

func splitTasks(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' })
}

// coordhostLine is one line of coordhost's log about group: its time and
// its fields (quoted values unquoted); ok is false for a line about
// another group or without a time.
func coordhostLine(line, group string) (at time.Time, fields map[string]string, ok bool) {
	if !strings.Contains(line, " group="+group+" ") {
		return at, nil, false
	}
	tm := chTimeRe.FindStringSubmatch(line)
	if tm == nil {
		return at, nil, false
	}
	at, err := time.Parse(time.RFC3339Nano, tm[1])
	if err != nil {
		return at, nil, false
	}
	fields = map[string]string{}
	for _, m := range chFieldRe.FindAllStringSubmatch(line, -1) {
		v := m[2]
		if u, err := strconv.Unquote(v); err == nil {
			v = u
		}
		fields[m[1]] = v
	}
	return at, fields, true
}

// coordhostEvents reads coordhost's log for group: members leaving or
// fenced, targets installed, and (at DEBUG) each member's current
// assignment, as tasks delivered to and released by members; members are
// named by their client's stream thread where the log says it.
func coordhostEvents(path, group string) ([]logEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []logEvent
	thread := map[string]string{}        // member id -> stream thread
	active := map[string][]string{}      // member id -> current active tasks
	name := func(member string) string { // the thread, else the member id
		if t, ok := thread[member]; ok {
			return t
		}
		if tm := threadOfName.FindStringSubmatch(member); tm != nil {
			return tm[1]
		}
		return member
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		at, fields, ok := coordhostLine(sc.Text(), group)
		if !ok {
			continue
		}
		member := fields["member"]
		switch fields["msg"] {
		case "group event":
			ev := fields["event"]
			switch {
			case strings.HasPrefix(ev, "target assignment installed"), strings.HasPrefix(ev, "classic generation "):
				// A streams group's new target, or a classic group's
				// stored generation (its leader's assignment).
				out = append(out, logEvent{at: at, kind: evTarget})
			case strings.HasPrefix(ev, "member ") && (strings.Contains(ev, " left") || strings.Contains(ev, " fenced")):
				id := strings.Fields(ev)[1]
				out = append(out, logEvent{at: at, kind: evLeft, who: name(id)})
				for _, t := range active[id] {
					out = append(out, logEvent{at: at, kind: evReleased, task: t, who: name(id)})
				}
				delete(active, id)
			}
		case "streams member metadata":
			if c := fields["client"]; c != "" {
				thread[member] = strings.TrimSuffix(c, "-consumer")
			}
		case "streams member assignment":
			now := append(splitTasks(fields["active"]), splitTasks(fields["revoking"])...)
			for _, t := range now {
				if !slices.Contains(active[member], t) {
					out = append(out, logEvent{at: at, kind: evDelivered, task: t, who: name(member)})
				}
			}
			for _, t := range active[member] {
				if !slices.Contains(now, t) {
					out = append(out, logEvent{at: at, kind: evReleased, task: t, who: name(member)})
				}
			}
			active[member] = now
		}
	}
	return out, sc.Err()
}

// taskMove is one task's move to a new owner within a step, each time
// relative to the step's start (negative: not seen).
type taskMove struct {
	step                  *step
	task, from, to        string
	left, target, revoked time.Duration // coordhost: member left or fenced; target installed; old owner's release acknowledged
	suspended, delivered  time.Duration // app: old owner suspended it; coordhost: delivered to the new owner
	assigned, running     time.Duration // app: new owner's assignment; restored and running
	byLeave               bool          // target is the first one after the member left: the leave caused this move
	firstOut              time.Duration // load generator: end of the partition's largest gap in the step (subtopology 0 tasks), see outputWindow
}

const unseen = time.Duration(-1)

// outputWindow bounds how long after a task's assignment its partition's
// largest gap may end and still be read as the move's first output.
const outputWindow = 15 * time.Second

// taskMovesOf pairs each task's assignment to a new owner within a step
// with the events before it (since the task's previous move) and after it.
func taskMovesOf(st *step, evs []logEvent) []taskMove {
	rel := func(t time.Time) time.Duration { return t.Sub(st.start) }
	type seen struct {
		at  time.Time
		who string
	}
	suspended, released := map[string]seen{}, map[string]seen{}
	var left, target, leaveTarget time.Time // leaveTarget: the first target after the first leave
	var out []taskMove
	for i, a := range evs {
		if a.at.Before(st.start) || !a.at.Before(st.end) {
			continue
		}
		switch a.kind {
		case evSuspend:
			suspended[a.task] = seen{a.at, a.who}
		case evReleased:
			released[a.task] = seen{a.at, a.who}
		case evLeft:
			if left.IsZero() {
				left = a.at
			}
		case evTarget:
			target = a.at
			if !left.IsZero() && leaveTarget.IsZero() {
				leaveTarget = a.at
			}
		}
		if a.kind != evAssign {
			continue
		}
		m := taskMove{step: st, task: a.task, to: a.who, assigned: rel(a.at),
			left: unseen, target: unseen, revoked: unseen, suspended: unseen, delivered: unseen, running: unseen, firstOut: unseen}
		if s, ok := suspended[a.task]; ok && s.who != a.who {
			m.suspended, m.from = rel(s.at), s.who
		}
		if r, ok := released[a.task]; ok && r.who != a.who {
			m.revoked = rel(r.at)
		}
		delete(suspended, a.task)
		delete(released, a.task)
		if !left.IsZero() {
			m.left = rel(left)
		}
		if !target.IsZero() {
			m.target = rel(target)
			m.byLeave = target.Equal(leaveTarget)
		}
		for _, e := range evs[:i] {
			if e.kind == evDelivered && e.task == a.task && e.who == a.who && !e.at.Before(st.start) {
				m.delivered = rel(e.at)
			}
		}
		for _, e := range evs[i:] {
			if e.kind == evRunning && e.task == a.task && e.who == a.who && e.at.Before(st.end) {
				m.running = rel(e.at)
				break
			}
		}
		if sub, p, ok := strings.Cut(a.task, "_"); ok && sub == "0" {
			if n, err := strconv.Atoi(p); err == nil && n < len(st.firstOutMs) && st.firstOutMs[n] > 0 {
				// The partition's largest gap of the step ends here; it
				// counts as this move's first output only when it falls
				// after the assignment and within outputWindow of it.
				if at := time.UnixMilli(st.firstOutMs[n]); !at.Before(a.at) && at.Sub(a.at) <= outputWindow {
					m.firstOut = rel(at)
				}
			}
		}
		out = append(out, m)
	}
	return out
}

// stepTimeline reads the logs in dir (every Streams instance's, and
// coordhost.log for the online scenario's group) and returns each step's
// hand-overs.
func stepTimeline(dir, group string, steps []step) ([]taskMove, error) {
	if len(steps) == 0 {
		return nil, nil
	}
	var evs []logEvent
	paths, _ := filepath.Glob(filepath.Join(dir, "app*.log"))
	for _, p := range paths {
		e, err := appEvents(p, steps[0].start)
		if err != nil {
			return nil, err
		}
		evs = append(evs, e...)
	}
	if ch := filepath.Join(dir, "coordhost.log"); fileExists(ch) {
		e, err := coordhostEvents(ch, group)
		if err != nil {
			return nil, err
		}
		evs = append(evs, e...)
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at.Before(evs[j].at) })
	var out []taskMove
	for i := range steps {
		out = append(out, taskMovesOf(&steps[i], evs)...)
	}
	return out, nil
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// timelineTable renders every hand-over, times in seconds after its step
// started (the instance's stop was asked).
func timelineTable(hs []taskMove) string {
	var b strings.Builder
	b.WriteString("| scenario | step | task | from → to | member left/fenced (coordhost) | target installed (coordhost) | old owner suspended (app) | revocation acknowledged (coordhost) | delivered to new owner (coordhost) | new owner assigned (app) | restored, running (app) | first output: largest gap of its partition ends (load generator) |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, h := range hs {
		fmt.Fprintf(&b, "| %s | %s/%d | %s | %s → %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			h.step.scenario, h.step.phase, h.step.instance, h.task, orDash(h.from), h.to,
			secs(h.left), secs(h.target), secs(h.suspended), secs(h.revoked), secs(h.delivered),
			secs(h.assigned), secs(h.running), secs(h.firstOut))
	}
	return b.String()
}

func secs(d time.Duration) string {
	if d == unseen {
		return "-"
	}
	return fmt.Sprintf("%.2f", d.Seconds())
}

// segment is one stretch of a hand-over, measured where both ends were seen.
type segment struct {
	name     string
	from, to func(taskMove) time.Duration
}

var segments = []segment{
	{"stop asked → old owner suspended", func(taskMove) time.Duration { return 0 }, func(h taskMove) time.Duration { return h.suspended }},
	{"old owner suspended → new owner assigned", func(h taskMove) time.Duration { return h.suspended }, func(h taskMove) time.Duration { return h.assigned }},
	{"  of which: member left → target installed (coordhost; moves the leave caused)", func(h taskMove) time.Duration {
		if !h.byLeave {
			return unseen
		}
		return h.left
	}, func(h taskMove) time.Duration { return h.target }},
	{"  of which: target installed → delivered (coordhost)", func(h taskMove) time.Duration { return h.target }, func(h taskMove) time.Duration { return h.delivered }},
	{"  of which: delivered → assigned in the app", func(h taskMove) time.Duration { return h.delivered }, func(h taskMove) time.Duration { return h.assigned }},
	{"new owner assigned → restored, running", func(h taskMove) time.Duration { return h.assigned }, func(h taskMove) time.Duration { return h.running }},
	{"restored → first output", func(h taskMove) time.Duration { return h.running }, func(h taskMove) time.Duration { return h.firstOut }},
	{"stop asked → first output", func(taskMove) time.Duration { return 0 }, func(h taskMove) time.Duration { return h.firstOut }},
}

// segmentTable summarizes the hand-overs per scenario and phase: for each
// segment the median and the maximum over the hand-overs that saw both
// ends, and how many did.
func segmentTable(hs []taskMove) string {
	type key struct{ scenario, phase string }
	var keys []key
	by := map[key][]taskMove{}
	for _, h := range hs {
		k := key{h.step.scenario, h.step.phase}
		if _, ok := by[k]; !ok {
			keys = append(keys, k)
		}
		by[k] = append(by[k], h)
	}
	var b strings.Builder
	b.WriteString("| scenario | phase | hand-overs |")
	for _, s := range segments {
		b.WriteString(" " + strings.TrimSpace(s.name) + " |")
	}
	b.WriteString("\n|---|---|---|" + strings.Repeat("---|", len(segments)) + "\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "| %s | %s | %d |", k.scenario, k.phase, len(by[k]))
		for _, s := range segments {
			var ds []time.Duration
			for _, h := range by[k] {
				f, t := s.from(h), s.to(h)
				if f != unseen && t != unseen && t >= f {
					ds = append(ds, t-f)
				}
			}
			if len(ds) == 0 {
				b.WriteString(" - |")
				continue
			}
			fmt.Fprintf(&b, " %.2f / %.2f (%d) |", median(ds).Seconds(), slices.Max(ds).Seconds(), len(ds))
		}
		b.WriteString("\n")
	}
	b.WriteString("\nEach cell: median / max seconds over the phase's hand-overs that saw both ends (their number).\n")
	return b.String()
}
