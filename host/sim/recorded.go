package sim

import (
	"fmt"
	"sort"

	"github.com/coordhost/coordhost/abi"
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
}

// recorded is a RecordedInput as the replay uses it.
type recorded struct {
	atMs  int64
	probe bool
	ends  []int64            // per task, -1: unknown
	offs  map[string][]int64 // per process, per task, -1: not reported
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
		r := recorded{atMs: ms(in.AtS), probe: in.Probe, ends: none(total), offs: map[string][]int64{}}
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
		sc.recorded = append(sc.recorded, r)
	}
	sort.SliceStable(sc.recorded, func(i, j int) bool { return sc.recorded[i].atMs < sc.recorded[j].atMs })
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
