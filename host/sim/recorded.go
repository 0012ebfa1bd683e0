package sim

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/core"
)

// maxRecordedValues bounds the offsets a scenario's recorded inputs hold
// in all, as the replay keeps them: per input, the tasks times the
// processes it lists plus one.
const maxRecordedValues = 1 << 22

// RecordedInput is the lag input a real assignor was handed at one of its
// target computations (the rebalance history's "inputs"): a replay of a
// recorded group hands it to the simulated assignor at the same time.
type RecordedInput struct {
	AtS float64 `json:"at_s"`
	// Probe: the real computation was a probe (its target is installed
	// only when it differs from the current one).
	Probe bool `json:"probe,omitempty"`
	// EndOffsets are the changelog end offsets the assignor was handed,
	// by task id; a task not listed has an unknown end.
	EndOffsets map[string]int64 `json:"end_offsets"`
	// Processes are, per process, the offsets of its local state its
	// members had reported, by task id.
	Processes map[string]map[string]int64 `json:"processes"`
	// Moves are, per task the real target gave to another member than
	// before, that member (its join label) and how long the real group
	// took to hand the task over, both from this input's time: the
	// replay takes them for a task its own target gives to the same
	// member, instead of the model's grant_ms and handover_ms (a delay
	// not given, or a task the replay gives to another member, takes
	// the model's).
	Moves map[string]RecordedMove `json:"moves,omitempty"`
}

// RecordedMove is one task's real hand-over at a recorded target.
type RecordedMove struct {
	Member string `json:"member"`
	// GrantMs: the task showed in the member's current assignment (the
	// assignor's input) this long after the target.
	GrantMs *int64 `json:"grant_ms,omitempty"`
	// HandOverMs: the member could start the task (run it, or restore
	// it) this long after the target.
	HandOverMs *int64 `json:"handover_ms,omitempty"`
	// From is the member (its join label) that owned the task before
	// the target, and StopMs when it stopped running it, from the
	// target's time: later (it ran the task until its revocation) or
	// earlier, negative (it closed its tasks before its leave or fence
	// reached the group). Without them the model's guess holds: the
	// previous owner stops the task at the target (a crashed one at its
	// crash).
	From   string `json:"from,omitempty"`
	StopMs *int64 `json:"stop_ms,omitempty"`
}

// recorded is a RecordedInput as the replay uses it.
type recorded struct {
	atMs  int64
	probe bool
	ends  []int64            // per task, -1: unknown
	offs  map[string][]int64 // per process, per task, -1: not reported
	moves map[int32]move     // per task the real target moved
}

// move is a RecordedMove as the replay uses it: times from 0 s, -1 not
// recorded.
type move struct {
	member           string
	grantAt, readyAt int64
	from             string // the previous owner's label; "": not recorded
	stopAt           int64  // when from stopped the task (valid with from)
}

// recStop is a recorded move's stop as the replay looks ahead to it: the
// previous owner's label, the stop's time, and the index of its recorded
// input in time order.
type recStop struct {
	idx    int
	from   string
	stopAt int64
}

// validateRecorded checks the recorded inputs (times, task ids, offsets)
// and orders them by time.
func (sc *Scenario) validateRecorded() error {
	if len(sc.RecordedInputs) > MaxEvents {
		return fmt.Errorf("recorded_inputs: %d exceed the limit %d", len(sc.RecordedInputs), MaxEvents)
	}
	total := len(sc.tasks)
	values := 0
	for i, in := range sc.RecordedInputs {
		if !finite(in.AtS) || in.AtS < 0 || ms(min(in.AtS, maxSeconds)) > sc.durationMs() {
			return fmt.Errorf("recorded_inputs[%d]: at_s %v must be in [0, duration_s]", i, in.AtS)
		}
		if values += total * (len(in.Processes) + 1); values > maxRecordedValues {
			return fmt.Errorf("recorded_inputs: more than %d offsets", maxRecordedValues)
		}
		r := recorded{atMs: ms(in.AtS), probe: in.Probe, ends: none(total), offs: map[string][]int64{}, moves: map[int32]move{}}
		if err := sc.recordedOffsets(in.EndOffsets, r.ends); err != nil {
			return fmt.Errorf("recorded_inputs[%d]: end_offsets: %w", i, err)
		}
		for p, os := range in.Processes {
			if p == "" {
				return fmt.Errorf("recorded_inputs[%d]: processes: empty process id", i)
			}
			r.offs[p] = none(total)
			if err := sc.recordedOffsets(os, r.offs[p]); err != nil {
				return fmt.Errorf("recorded_inputs[%d]: processes: %q: %w", i, p, err)
			}
		}
		for task, mv := range in.Moves {
			t, ok := sc.tasks[task]
			if !ok {
				return fmt.Errorf("recorded_inputs[%d]: moves: no task %q", i, task)
			}
			if mv.Member == "" {
				return fmt.Errorf("recorded_inputs[%d]: moves: %s: empty member", i, task)
			}
			m := move{member: mv.Member, grantAt: -1, readyAt: -1}
			for _, d := range []struct {
				name string
				ms   *int64
				at   *int64
			}{{"grant_ms", mv.GrantMs, &m.grantAt}, {"handover_ms", mv.HandOverMs, &m.readyAt}} {
				if d.ms == nil {
					continue
				}
				if *d.ms < 0 || *d.ms > maxSeconds*1000 {
					return fmt.Errorf("recorded_inputs[%d]: moves: %s: %s %d must be in [0, %d]", i, task, d.name, *d.ms, maxSeconds*1000)
				}
				*d.at = r.atMs + *d.ms
			}
			switch {
			case (mv.From == "") != (mv.StopMs == nil):
				return fmt.Errorf("recorded_inputs[%d]: moves: %s: from and stop_ms go together", i, task)
			case mv.StopMs != nil && (*mv.StopMs < -maxSeconds*1000 || *mv.StopMs > maxSeconds*1000):
				return fmt.Errorf("recorded_inputs[%d]: moves: %s: stop_ms %d must be in [-%d, %d]", i, task, *mv.StopMs, maxSeconds*1000, maxSeconds*1000)
			case mv.StopMs != nil:
				m.from, m.stopAt = mv.From, r.atMs+*mv.StopMs
			}
			r.moves[t] = m
		}
		sc.recorded = append(sc.recorded, r)
	}
	sort.SliceStable(sc.recorded, func(i, j int) bool { return sc.recorded[i].atMs < sc.recorded[j].atMs })
	sc.stops = map[int32][]recStop{}
	for i, r := range sc.recorded {
		for _, t := range slices.Sorted(maps.Keys(r.moves)) {
			if mv := r.moves[t]; mv.from != "" {
				sc.stops[t] = append(sc.stops[t], recStop{idx: i, from: mv.from, stopAt: mv.stopAt})
			}
		}
	}
	return nil
}

// recordedOffsets puts os (task id -> offset) into out (per task).
func (sc *Scenario) recordedOffsets(os map[string]int64, out []int64) error {
	for task, o := range os {
		t, ok := sc.tasks[task]
		if !ok {
			return fmt.Errorf("no task %q", task)
		}
		if o < 0 || o > maxRecords {
			return fmt.Errorf("%s: %d must be in [0, 2^50]", task, o)
		}
		out[t] = o
	}
	return nil
}

// recordedDue takes the first recorded input due at now, nil when none
// is (one a tick: two real computations within a tick are two in the
// replay too).
func (w *world) recordedDue(now int64) *recorded {
	if len(w.recorded) == 0 || w.recorded[0].atMs > now {
		return nil
	}
	r := &w.recorded[0]
	w.recorded = w.recorded[1:]
	return r
}

// holdJoins keeps joins for the next recorded input when no recorded
// input is due at now (rec nil) and the next one comes within the
// assignment interval: core holds a target back that long after the one
// before (streams.assignment.interval.ms, Kafka's 1 s), so joins in that
// stretch came before the real target that folds them, and the real
// target is where the replay computes theirs. Other reasons, or joins
// farther from a recorded target, are computed at once.
func (w *world) holdJoins(now int64, rec *recorded, reasons []string) []string {
	if rec != nil || len(reasons) == 0 || len(w.recorded) == 0 || w.recorded[0].atMs > now+assignmentIntervalMs {
		return reasons
	}
	for _, r := range reasons {
		if !strings.HasPrefix(r, "member-joined:") {
			return reasons
		}
	}
	w.pending = append(w.pending, reasons...)
	return nil
}

// assignmentIntervalMs is core's default streams.assignment.interval.ms
// (Kafka 4.4's), the one the core engine runs with.
var assignmentIntervalMs = int64(core.DefaultConfig().Streams.AssignmentIntervalMs)

// endOffsets are r's end offsets as the request hands them to every
// member.
func (r *recorded) endOffsets() []abi.TaskOffset {
	var out []abi.TaskOffset
	for t, e := range r.ends {
		if e >= 0 {
			out = append(out, abi.TaskOffset{Task: int32(t), Offset: e})
		}
	}
	return out
}

// taskOffsets are the offsets r says process reported (none when r does
// not list it).
func (r *recorded) taskOffsets(process string) []abi.TaskOffset {
	var out []abi.TaskOffset
	for t, o := range r.offs[process] {
		if o >= 0 {
			out = append(out, abi.TaskOffset{Task: int32(t), Offset: o})
		}
	}
	return out
}

// moveOf is the recorded move of task t to the member labelled label at
// r's target; ok is false without one (r nil, the task not moved there,
// or moved to another member).
func (r *recorded) moveOf(t int32, label string) (m move, ok bool) {
	if r == nil {
		return move{}, false
	}
	m, ok = r.moves[t]
	return m, ok && m.member == label
}

// stopOf looks ahead to the next recorded target that moves t (the first
// recorded input not yet due that moves it): when that move's previous
// owner is the member labelled label, the time the recording says it
// stopped running t. ok is false otherwise: the model's guess holds.
func (w *world) stopOf(t int32, label string) (at int64, ok bool) {
	due := len(w.sc.recorded) - len(w.recorded)
	for _, s := range w.sc.stops[t] {
		if s.idx >= due {
			return s.stopAt, s.from == label
		}
	}
	return 0, false
}

// runs says whether m, an owner of active task t in its target, runs t at
// now as far as the previous owner's side goes: until the recorded stop
// of the next recorded move of t away from m, when there is one; else
// while m has not crashed (the model's guess: a crashed member stops its
// tasks at its crash).
func (w *world) runs(m *member, t int32, now int64) bool {
	stop, ok := w.stopOf(t, m.label)
	if m.crashedMs >= 0 {
		return ok && now < stop
	}
	return !ok || now < stop
}

// stopMove applies the recorded stop of t's move to m at now, when rec
// records one from t's previous owner in the replay: a previous owner
// that ran t at the last tick keeps it running until its stop (counted in
// rb). A stop before now was looked ahead to (runs).
func (w *world) stopMove(now int64, t int32, m *member, rec *recorded, rb *Rebalance) {
	prev, had := w.owner[t]
	mv, ok := rec.moveOf(t, m.label)
	if !had || !ok || mv.from == "" || mv.from != w.labelOf[prev] {
		return
	}
	rb.RecordedStops++
	if mv.stopAt > now && w.running[t] {
		w.prevRun[t] = prevRun{process: w.procOf[prev], untilMs: mv.stopAt}
	}
}
