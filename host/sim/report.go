package sim

import (
	"bytes"
	"encoding/json"

	"github.com/coordhost/coordhost/abi/metrics"
)

// Report is the result of a run: the scenario's parameters and one entry
// per assignor, in the order they were given. Its JSON has a fixed field
// order and no maps, so equal runs encode to equal bytes.
type Report struct {
	Scenario    string  `json:"scenario"`
	Seed        uint64  `json:"seed"`
	DurationS   float64 `json:"duration_s"`
	TickMs      int64   `json:"tick_ms"`
	Tasks       int     `json:"tasks"`
	RestorePerS int64   `json:"restore_records_per_s"`
	// SharedRestore: RestorePerS is each process's, shared by its copies.
	SharedRestore bool `json:"shared_restore,omitempty"`
	// Engine is "core" for a replay on the real coordinator (RunCore),
	// empty for the model's (Run).
	Engine    string           `json:"engine,omitempty"`
	Assignors []AssignorReport `json:"assignors"`
}

// AssignorReport is one assignor's replay.
type AssignorReport struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	// Error is the failure that stopped the replay, if any.
	Error  string `json:"error,omitempty"`
	Totals Totals `json:"totals"`
	// UnavailableTaskS is the sum over time of the tasks without a
	// caught-up active (task-seconds).
	UnavailableTaskS float64 `json:"unavailable_task_seconds"`
	// UnavailableByTask splits UnavailableTaskS by task: each task that
	// was without a caught-up active at some tick, in task order (a
	// subtopology's partitions in order, the subtopologies as listed).
	UnavailableByTask []TaskUnavailable `json:"unavailable_by_task,omitempty"`
	// Rebalances lists every installed target, the baseline first.
	Rebalances []Rebalance `json:"rebalances"`
	// Unavailable is the number of tasks without a caught-up active,
	// one point each time it changes.
	Unavailable []Point `json:"unavailable"`
	// Conversions lists the group's online migrations between the
	// protocols. A conversion to streams comes with a rebalance (its
	// reason names it too); one back to classic comes without one, once
	// the group has settled (docs/MIGRATION.md, the settled downgrade).
	Conversions []Conversion `json:"conversions,omitempty"`

	unavailableMs int64
	taskMs        []int64 // per task: its unavailable time, ms
}

// TaskUnavailable is one task's part of the unavailable task-seconds.
type TaskUnavailable struct {
	Task string  `json:"task"`
	S    float64 `json:"seconds"`
}

// Conversion is one online migration of the group: To is "streams" or
// "classic".
type Conversion struct {
	AtS float64 `json:"at_s"`
	To  string  `json:"to"`
}

// Totals sum the rebalances after the baseline.
type Totals struct {
	Rebalances int `json:"rebalances"`
	// ProbesUnchanged counts probing runs whose target equalled the
	// current one (nothing installed).
	ProbesUnchanged int `json:"probes_unchanged"`
	TasksMoved      int `json:"tasks_moved"`
	HandOvers       int `json:"hand_overs"`
	Warm            int `json:"warm_hand_overs"`
	Cold            int `json:"cold_hand_overs"`
	StandbysMoved   int `json:"standbys_moved"`
	WarmupsOpened   int `json:"warmups_opened"`
	// MaxUnavailable is the most tasks without a caught-up active at once.
	MaxUnavailable int `json:"max_unavailable_tasks"`
	// MaxActiveSpread is the largest active_per_process spread of a
	// target after the baseline.
	MaxActiveSpread int `json:"max_active_per_process_spread"`
	// ProbingRounds counts the probing runs after the baseline, whether
	// their target was installed or not (ProbesUnchanged).
	ProbingRounds int `json:"probing_rounds"`
	// RecordsRestored sums the changelog records every copy (active,
	// standby, warm-up) restored after the baseline; BytesRestored is it
	// times state.record_bytes, when the scenario gives that.
	RecordsRestored int64 `json:"records_restored"`
	BytesRestored   int64 `json:"bytes_restored,omitempty"`
	// ThrottledFetches counts the restore fetches a process's
	// restore_quota throttled (each an empty response), and ThrottleMs
	// sums their throttle times.
	ThrottledFetches int   `json:"throttled_fetches,omitempty"`
	ThrottleMs       int64 `json:"throttle_ms,omitempty"`
	// SettledAtS is when the group last became settled — every task
	// running on a caught-up active, no grant pending, no warm-up open,
	// no crashed member, and the processes' active tasks per member at
	// most one apart —
	// if it still was at the end; -1 otherwise. SettleS is the time from
	// the scenario's last event to then (0 when no event unsettled it);
	// -1 when it did not settle.
	SettledAtS float64 `json:"settled_at_s"`
	SettleS    float64 `json:"settle_s"`
	// Recorded inputs' moves: the grants and hand-overs of tasks moved
	// at targets computed on a recorded input that took the recorded
	// delay, and those that took the model's (no recorded delay for the
	// task and its new member).
	RecordedGrants    int `json:"recorded_grants,omitempty"`
	ModelledGrants    int `json:"modelled_grants,omitempty"`
	RecordedHandOvers int `json:"recorded_hand_overs,omitempty"`
	ModelledHandOvers int `json:"modelled_hand_overs,omitempty"`
	// RecordedStops are the moved tasks whose previous owner stopped them
	// when the recorded move says, not at the target.
	RecordedStops int `json:"recorded_stops,omitempty"`
}

func (t *Totals) add(rb Rebalance) {
	t.Rebalances++
	t.TasksMoved += rb.TasksMoved
	t.HandOvers += rb.Movement.HandOvers
	t.Warm += rb.Movement.Warm
	t.Cold += rb.Movement.Cold
	t.StandbysMoved += rb.Movement.StandbysMoved
	t.WarmupsOpened += rb.Warmups.Open
	t.MaxActiveSpread = max(t.MaxActiveSpread, rb.Balance.ActivePerProcess.Spread)
	t.RecordedGrants += rb.RecordedGrants
	t.ModelledGrants += rb.ModelledGrants
	t.RecordedHandOvers += rb.RecordedHandOvers
	t.ModelledHandOvers += rb.ModelledHandOvers
	t.RecordedStops += rb.RecordedStops
}

// Rebalance is one installed target and its abi/metrics figures, measured
// against the members' previous target.
type Rebalance struct {
	AtS      float64  `json:"at_s"`
	Epoch    int32    `json:"epoch"`
	Reasons  []string `json:"reasons"`
	Baseline bool     `json:"baseline,omitempty"`
	// RecordedInputs: the assignor was handed a recorded input
	// (Scenario.RecordedInputs), not the model's offsets.
	RecordedInputs bool `json:"recorded_inputs,omitempty"`
	// With a recorded input, the tasks moved to a member whose grant and
	// hand-over took the recorded move's delay, and those that took the
	// model's (Totals).
	RecordedGrants    int `json:"recorded_grants,omitempty"`
	ModelledGrants    int `json:"modelled_grants,omitempty"`
	RecordedHandOvers int `json:"recorded_hand_overs,omitempty"`
	ModelledHandOvers int `json:"modelled_hand_overs,omitempty"`
	RecordedStops     int `json:"recorded_stops,omitempty"`
	Members           int `json:"members"`
	// Processes with at least one member.
	Processes int `json:"processes"`
	// TasksMoved is Movement.Moved plus FromDeparted.
	TasksMoved int `json:"tasks_moved"`
	// FromDeparted counts active tasks whose previous owner left the
	// group or was fenced (abi/metrics counts them in Movement.New).
	FromDeparted int              `json:"from_departed"`
	Movement     metrics.Movement `json:"movement"`
	Balance      metrics.Balance  `json:"balance"`
	Standbys     metrics.Standbys `json:"standbys"`
	Warmups      metrics.Warmups  `json:"warmups"`
}

// Point is a value that holds from AtS on.
type Point struct {
	AtS   float64 `json:"at_s"`
	Tasks int     `json:"tasks"`
}

// restoreUnit says what RestorePerS is the rate of.
func (r *Report) restoreUnit() string {
	if r.SharedRestore {
		return "per process, shared by the copies it restores"
	}
	return "per task copy"
}

// JSON encodes the report, indented, with a final newline.
func (r *Report) JSON() []byte { return indentJSON(r) }

// indentJSON encodes a report or a fleet, indented, with a final newline.
func indentJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		panic("sim: encoding a report: " + err.Error()) // plain structs and finite floats only
	}
	return b.Bytes()
}

// Failed lists the assignors whose replay stopped on an error.
func (r *Report) Failed() []string {
	var out []string
	for _, a := range r.Assignors {
		if a.Error != "" {
			out = append(out, a.Name)
		}
	}
	return out
}
