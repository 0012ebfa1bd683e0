// Package sim replays a scenario of a streams group's life — members
// joining, leaving, crashing, a rolling restart, changelog growth — against
// task assignors, and measures what each assignor's targets cost: rebalances,
// tasks moved, warm and cold hand-overs (abi/metrics), task-seconds without
// a caught-up active, and balance over time. A run is a pure function of the
// scenario, the seed and the assignors' answers: it reads no clock, and its
// JSON and HTML reports are byte-identical for the same inputs.
//
// docs/AB-TESTING.md ("Simulating a group's life") describes the scenario
// format and the model; `coordhost simulate` runs it.
package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"

	"github.com/coordhost/coordhost/abi"
	"github.com/knadh/koanf/parsers/yaml"
)

// Limits of a scenario, so a hostile file cannot make a run unbounded.
const (
	MaxTicks   = 1_000_000 // duration_s / tick
	MaxEvents  = 10_000    // after expanding restarts
	MaxMembers = 1_000     // members alive at once
	maxSeconds = 30 * 24 * 3600
	maxRecords = 1 << 50
	// maxRecordBytes bounds state.record_bytes.
	maxRecordBytes = 1 << 30
	// maxMemberID bounds a given member id (Kafka's own are 22 characters).
	maxMemberID = 255
)

// Scenario is a decoded, validated scenario file.
type Scenario struct {
	Name            string            `json:"name"`
	Seed            uint64            `json:"seed"`
	DurationS       float64           `json:"duration_s"`
	TickMs          int64             `json:"tick_ms"`
	SessionTimeoutS float64           `json:"session_timeout_s"`
	Subtopologies   []Subtopology     `json:"subtopologies"`
	Assignment      AssignmentConfigs `json:"assignment"`
	State           StateModel        `json:"state"`
	Events          []Event           `json:"events"`

	// HandOverMs is how long a task given to a new owner waits before
	// that owner runs it: the previous owner's revocation, the new
	// owner's next heartbeat and the task's start. Its restore starts
	// after it. 0: instant, the simulator's first model.
	HandOverMs int64 `json:"handover_ms"`
	// HandOverFirstMs, when set, replaces HandOverMs for a task given to
	// a member that runs no task yet (a process just started).
	HandOverFirstMs *int64 `json:"handover_first_ms,omitempty"`
	// GrantMs is how long after a target a task given to another member
	// is that member's in the assignor's input (the previous owner's
	// revocation and the new owner's next heartbeat); until then the task
	// is owned by nobody. 0: at once.
	GrantMs int64 `json:"grant_ms"`
	// HeartbeatIntervalMs is the members' heartbeat interval in the core
	// engine (RunCore; 5000 when 0, Kafka's default); the model ignores it.
	HeartbeatIntervalMs int64 `json:"heartbeat_interval_ms,omitempty"`
	// GrantFirstMs, when set, replaces GrantMs for a member that owns no
	// task yet (a process just started answers its heartbeats later).
	GrantFirstMs *int64 `json:"grant_first_ms,omitempty"`
	// ClassicRejoinMs is how much later a member on the classic protocol
	// (a join's protocol: classic) takes a changed assignment than a
	// streams member: coordhost tells it in a heartbeat response
	// (REBALANCE_IN_PROGRESS) and it rejoins (JoinGroup, SyncGroup). It is
	// added to a task's grant and hand-over when the task's new or
	// previous owner is such a member. Default 3000 (the consumer's
	// heartbeat.interval.ms).
	ClassicRejoinMs *int64 `json:"classic_rejoin_ms,omitempty"`

	// Initial, when set, is the first target (the starting point): each
	// listed member's active and standby tasks and the state its process
	// holds, instead of the assignor's first run. A replay of a recorded
	// group starts from what the group really ran.
	Initial []InitialMember `json:"initial,omitempty"`

	// Reports, when set, hands the assignor and the early probes the
	// offsets the host knows instead of the state the processes hold.
	Reports *Reports `json:"reports,omitempty"`

	// RecordedInputs, when set, are the lag inputs a real assignor was
	// handed at each of its target computations: the replay computes its
	// targets at their times with them (and runs no probe of its own);
	// a target at another time (a step's) takes the model's input.
	RecordedInputs []RecordedInput `json:"recorded_inputs,omitempty"`

	// Derived by Decode.
	steps []step
	subs  []abi.Subtopology
	// changelogOf holds the subtopologies' own changelog_records.
	changelogOf map[string]int64
	tasks       map[string]int32 // task name ("0_1") -> task index
	// recorded are RecordedInputs in time order.
	recorded []recorded
	// stops are, per task, the recorded moves' stops in time order.
	stops map[int32][]recStop
	// reportAt are reports.at in milliseconds, per label in time order,
	// and reportVal the values of reports.values in the same order.
	reportAt     map[string][]int64
	reportVal    map[string][]reportValue
	reportValues int // the offsets reportVal and hostReads hold
	// hostReads are reports.host_reads in time order.
	hostReads []hostRead
}

// InitialMember is one member's part of the starting point.
type InitialMember struct {
	Member  string   `json:"member"` // its join label
	Active  []string `json:"active,omitempty"`
	Standby []string `json:"standby,omitempty"`
	// Lags are, per task, how far the state its process holds is behind
	// the changelog's end (listed tasks only; the first target's active
	// and standby copies not listed are caught up).
	Lags map[string]int64 `json:"lags,omitempty"`
}

// Reports model what the host knows of the members' state: Kafka Streams
// members report their tasks' changelog offsets with some heartbeats only,
// and the host reads the changelogs' end offsets itself now and then.
type Reports struct {
	// TaskOffsetIntervalMs: a member reports the offsets of its process's
	// local state (its running actives left out) and the end offsets of
	// the tasks it restores (standbys, warm-ups, actives not running yet)
	// when it joins, on the tick after its target changed, once this long
	// has passed since its last report, and on every tick while one of
	// its warm-ups is within acceptable_recovery_lag of its changelog's
	// end (streams.task.offset.interval.ms).
	TaskOffsetIntervalMs int64 `json:"task_offset_interval_ms"`
	// EndOffsetsRefreshMs: the host reads every changelog's end offset at
	// 0 s and then this often (streams.end.offsets.refresh.ms). A task's
	// known end offset is the larger of the host's and the members'
	// reported ones; a process's offset is the largest its members
	// reported; a lag is the known end less that offset, the whole end
	// when the process reported none or one beyond the end.
	EndOffsetsRefreshMs int64 `json:"end_offsets_refresh_ms"`
	// EndOffsetsPhaseMs places the host's reads: at this time and every
	// end_offsets_refresh_ms after it (its timer started before the
	// scenario); until the first, the host knows the ends as at 0 s.
	EndOffsetsPhaseMs int64 `json:"end_offsets_phase_ms,omitempty"`
	// At are, per member (its join label), the times its reports reached
	// the host in a recorded run: such a member reports when it joins and
	// then at those times (its process's state then), at no other; the
	// members not listed report by the rules above.
	At map[string][]float64 `json:"at,omitempty"`
	// Values are, per member (its join label), what a recorded run's
	// member reported: at each time its report reached the host, the
	// task offsets and end offsets the host then held for it. Such a
	// member reports when it joins and then at those times exactly those
	// values (the times are its reports.at; a label is in at or values,
	// not both).
	Values map[string][]ReportValue `json:"values,omitempty"`
	// HostReads are a recorded run's reads of the changelogs' end
	// offsets by the host itself (what it fetched from the data plane
	// and handed the coordinator), at the times it handed them. The core
	// engine's host then knows, from the first read on, exactly the ends
	// of the last read at or before each time (a task a read does not
	// list: none), instead of the recorded inputs' end offsets, which
	// mix the host's read with the members' reported ends. Before the
	// first read, and in the model engine, the rules above hold.
	HostReads []HostRead `json:"host_reads,omitempty"`
}

// HostRead is one read of the changelogs' end offsets by the host, by
// task id (a task not listed: its end unknown, the read incomplete).
type HostRead struct {
	AtS        float64          `json:"at_s"`
	EndOffsets map[string]int64 `json:"end_offsets,omitempty"`
}

// ReportValue is one recorded report of a member, by task id: the
// offsets of its process's state and the end offsets it reported (a task
// not listed: none).
type ReportValue struct {
	AtS            float64          `json:"at_s"`
	TaskOffsets    map[string]int64 `json:"task_offsets,omitempty"`
	TaskEndOffsets map[string]int64 `json:"task_end_offsets,omitempty"`
}

// Subtopology is one subtopology of the group's topology.
type Subtopology struct {
	ID         string `json:"id"`
	Partitions int32  `json:"partitions"`
	Stateful   bool   `json:"stateful"`
	// ChangelogRecords, when set, replaces state.changelog_records for
	// this subtopology's tasks (state sizes that differ by subtopology).
	ChangelogRecords *int64 `json:"changelog_records,omitempty"`
}

// AssignmentConfigs are the group's assignment configs, handed to every
// assignor run as the host hands them (abi.Configs and its All list).
type AssignmentConfigs struct {
	NumStandbyReplicas    int32 `json:"num_standby_replicas"`
	NumWarmupReplicas     int32 `json:"num_warmup_replicas"`
	AcceptableRecoveryLag int64 `json:"acceptable_recovery_lag"`
	ProbingIntervalMs     int64 `json:"probing_interval_ms"`
}

// StateModel is the changelog and restore model of every stateful task.
type StateModel struct {
	// ChangelogRecords is each stateful task's changelog end offset at
	// t = 0, plus a draw from [0, ChangelogJitter] per task from the seed.
	ChangelogRecords int64 `json:"changelog_records"`
	ChangelogJitter  int64 `json:"changelog_jitter"`
	// AppendPerS is how many records each stateful changelog grows by per
	// second (an event may change it).
	AppendPerS int64 `json:"append_records_per_s"`
	// RestorePerS is how many records one copy of a task (active, standby
	// or warm-up) restores per second, each copy independently — or, with
	// SharedRestore, each process in all; a join's restore_records_per_s
	// replaces it for the joining member's process.
	RestorePerS int64 `json:"restore_records_per_s"`
	// SharedRestore: a process restores through one link (Kafka Streams'
	// state updater and its one restore consumer), shared equally by the
	// copies it restores, actives first: while one of its actives
	// restores, its standbys and warm-ups wait.
	SharedRestore bool `json:"shared_restore,omitempty"`
	// RecordBytes, when set, is the average size of a changelog record:
	// the report then gives the bytes restored beside the records.
	RecordBytes int64 `json:"record_bytes,omitempty"`
}

// Event is one line of the scenario's events: exactly one of Join, Leave,
// Crash, Restart, AppendPerS or LoseState, at AtS seconds.
type Event struct {
	AtS float64 `json:"at_s"`
	// Join: a member (its label) joins, on Process (default: the label),
	// in Rack. Leave: it leaves the group (a clean close). Crash: it stops
	// without leaving; the group fences it after session_timeout_s.
	Join    string `json:"join,omitempty"`
	Process string `json:"process,omitempty"`
	Rack    string `json:"rack,omitempty"`
	// MemberID is the joining member's id (a replay of a recorded group
	// gives its real ids: assignors order members by id); by default it
	// is drawn from the seed.
	MemberID string `json:"member_id,omitempty"`
	// RestorePerS, on a join, is the restore rate of the member's
	// process from then on (state.restore_records_per_s by default).
	RestorePerS *int64 `json:"restore_records_per_s,omitempty"`
	// RestoreQuota, on a join, puts a Kafka client quota on the restore
	// consumer of the member's process from then on (it needs
	// state.shared_restore): the process restores through fetches the
	// quota paces, as Kafka 4.4's broker does, not at its records per
	// second. A process keeps the quota's sensor (its client id) across
	// its members' joins.
	RestoreQuota *RestoreQuota `json:"restore_quota,omitempty"`
	// Protocol, on a join or a restart, is the rebalance protocol the
	// member (re)joins with: "streams" (the default) or "classic" (its
	// group is bridged as coordhost bridges classic members, with
	// classic_rejoin_ms). A restart with another protocol is a step of a
	// migration roll.
	Protocol string `json:"protocol,omitempty"`
	Leave    string `json:"leave,omitempty"`
	Crash    string `json:"crash,omitempty"`
	// Restart: a rolling restart of these members, one every EveryS
	// seconds; each leaves, and rejoins DownS seconds later on the same
	// process with its state on disk.
	Restart []string `json:"restart,omitempty"`
	DownS   float64  `json:"down_s,omitempty"`
	EveryS  float64  `json:"every_s,omitempty"`
	// AppendPerS sets the changelogs' growth from now on.
	AppendPerS *int64 `json:"append_records_per_s,omitempty"`
	// LoseState: the process loses its local state (e.g. a new disk).
	LoseState string `json:"lose_state,omitempty"`
	// CoordhostRestart: coordhost stops and is back this many seconds
	// later on its log (a restart, or a fail-over to another node).
	CoordhostRestart *float64 `json:"coordhost_restart,omitempty"`
}

// stepKind is one primitive change a step applies.
type stepKind int

const (
	stepJoin stepKind = iota
	stepLeave
	stepCrash
	stepAppend
	stepLoseState
	stepCoordhostRestart
)

// step is one primitive change at atMs, after restarts are expanded and
// member ids drawn from the seed.
type step struct {
	atMs    int64
	order   int // position in the expanded list, for a stable sort
	kind    stepKind
	label   string
	id      string // the member id of a join
	process string
	rack    string
	n       int64         // an append's rate; a join's process's restore rate (0: the default)
	quota   *RestoreQuota // a join's process's restore quota (nil: none)
	// protocol of a join: "classic", "streams", or "" (the label's
	// protocol when it joined before, else streams)
	protocol string
}

// Decode parses a scenario (JSON, or YAML when it does not start with
// '{'), validates it and draws its member ids from the seed (seed, when not
// nil, replaces the file's). Errors name the file, the field and the value.
func Decode(name string, data []byte, seed *uint64) (*Scenario, error) {
	sc, err := decode(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if seed != nil {
		sc.Seed = *seed
	}
	if err := sc.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := sc.expand(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := sc.validateInitial(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := sc.validateRecorded(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return sc, nil
}

func decode(data []byte) (*Scenario, error) {
	sc := &Scenario{TickMs: 1000, SessionTimeoutS: 45,
		Assignment: AssignmentConfigs{NumWarmupReplicas: 2, AcceptableRecoveryLag: 10000, ProbingIntervalMs: 600000}}
	trimmed := bytes.TrimLeft(data, " \t\r\n")
	if len(trimmed) == 0 {
		return nil, errors.New("empty file, want a scenario (YAML or JSON object)")
	}
	if trimmed[0] != '{' {
		js, err := yamlToJSON(data)
		if err != nil {
			return nil, err
		}
		data = js
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(sc); err != nil {
		return nil, jsonError(data, err)
	}
	if rest := bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return nil, errors.New("data after the scenario object")
	}
	return sc, nil
}

// yamlToJSON turns a YAML document into JSON, so one strict decoder (with
// unknown fields refused) serves both formats.
func yamlToJSON(data []byte) (out []byte, err error) {
	defer func() {
		if v := recover(); v != nil { // the YAML parser is third-party code
			out, err = nil, fmt.Errorf("yaml: cannot parse: %v", v)
		}
	}()
	m, err := yaml.Parser().Unmarshal(data)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, errors.New("yaml: want a mapping at the top level")
	}
	out, err = json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("yaml: %v (keys must be strings)", err)
	}
	return out, nil
}

func jsonError(data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Errorf("offset %d: %v", syn.Offset, err)
	case errors.As(err, &typ):
		return fmt.Errorf("field %s: %s is not a valid %s", typ.Field, typ.Value, typ.Type)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("truncated scenario")
	}
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}

func (sc *Scenario) validate() error {
	switch {
	case !finite(sc.DurationS) || sc.DurationS <= 0 || sc.DurationS > maxSeconds:
		return fmt.Errorf("duration_s: %v must be in (0, %d]", sc.DurationS, maxSeconds)
	case sc.TickMs <= 0:
		return fmt.Errorf("tick_ms: %d must be > 0", sc.TickMs)
	case sc.durationMs()/sc.TickMs > MaxTicks:
		return fmt.Errorf("duration_s / tick_ms: %d ticks exceed the limit %d", sc.durationMs()/sc.TickMs, MaxTicks)
	case !finite(sc.SessionTimeoutS) || sc.SessionTimeoutS < 0 || sc.SessionTimeoutS > maxSeconds:
		return fmt.Errorf("session_timeout_s: %v must be in [0, %d]", sc.SessionTimeoutS, maxSeconds)
	case sc.HandOverMs < 0 || sc.HandOverMs > maxSeconds*1000:
		return fmt.Errorf("handover_ms: %d must be in [0, %d]", sc.HandOverMs, maxSeconds*1000)
	case sc.HandOverFirstMs != nil && (*sc.HandOverFirstMs < 0 || *sc.HandOverFirstMs > maxSeconds*1000):
		return fmt.Errorf("handover_first_ms: %d must be in [0, %d]", *sc.HandOverFirstMs, maxSeconds*1000)
	case sc.GrantMs < 0 || sc.GrantMs > maxSeconds*1000:
		return fmt.Errorf("grant_ms: %d must be in [0, %d]", sc.GrantMs, maxSeconds*1000)
	case sc.HeartbeatIntervalMs < 0 || sc.HeartbeatIntervalMs > maxSeconds*1000:
		return fmt.Errorf("heartbeat_interval_ms: %d must be in [0, %d]", sc.HeartbeatIntervalMs, maxSeconds*1000)
	case sc.GrantFirstMs != nil && (*sc.GrantFirstMs < 0 || *sc.GrantFirstMs > maxSeconds*1000):
		return fmt.Errorf("grant_first_ms: %d must be in [0, %d]", *sc.GrantFirstMs, maxSeconds*1000)
	case sc.ClassicRejoinMs != nil && (*sc.ClassicRejoinMs < 0 || *sc.ClassicRejoinMs > maxSeconds*1000):
		return fmt.Errorf("classic_rejoin_ms: %d must be in [0, %d]", *sc.ClassicRejoinMs, maxSeconds*1000)
	case sc.Reports != nil && (sc.Reports.TaskOffsetIntervalMs <= 0 || sc.Reports.TaskOffsetIntervalMs > maxSeconds*1000):
		return fmt.Errorf("reports.task_offset_interval_ms: %d must be in (0, %d]", sc.Reports.TaskOffsetIntervalMs, maxSeconds*1000)
	case sc.Reports != nil && (sc.Reports.EndOffsetsRefreshMs <= 0 || sc.Reports.EndOffsetsRefreshMs > maxSeconds*1000):
		return fmt.Errorf("reports.end_offsets_refresh_ms: %d must be in (0, %d]", sc.Reports.EndOffsetsRefreshMs, maxSeconds*1000)
	case sc.Reports != nil && (sc.Reports.EndOffsetsPhaseMs < 0 || sc.Reports.EndOffsetsPhaseMs >= sc.Reports.EndOffsetsRefreshMs):
		return fmt.Errorf("reports.end_offsets_phase_ms: %d must be in [0, end_offsets_refresh_ms)", sc.Reports.EndOffsetsPhaseMs)
	}
	if err := sc.validateSubtopologies(); err != nil {
		return err
	}
	if err := sc.validateReportTimes(); err != nil {
		return err
	}
	if err := sc.validateHostReads(); err != nil {
		return err
	}
	a := sc.Assignment
	switch {
	case a.NumStandbyReplicas < 0:
		return fmt.Errorf("assignment.num_standby_replicas: %d must be >= 0", a.NumStandbyReplicas)
	case a.NumWarmupReplicas < 0:
		return fmt.Errorf("assignment.num_warmup_replicas: %d must be >= 0", a.NumWarmupReplicas)
	case a.AcceptableRecoveryLag < 0:
		return fmt.Errorf("assignment.acceptable_recovery_lag: %d must be >= 0", a.AcceptableRecoveryLag)
	case a.ProbingIntervalMs <= 0:
		return fmt.Errorf("assignment.probing_interval_ms: %d must be > 0", a.ProbingIntervalMs)
	}
	st := sc.State
	switch {
	case st.ChangelogRecords < 0 || st.ChangelogRecords > maxRecords:
		return fmt.Errorf("state.changelog_records: %d must be in [0, 2^50]", st.ChangelogRecords)
	case st.ChangelogJitter < 0 || st.ChangelogJitter > maxRecords:
		return fmt.Errorf("state.changelog_jitter: %d must be in [0, 2^50]", st.ChangelogJitter)
	case st.AppendPerS < 0 || st.AppendPerS > maxRecords/maxSeconds:
		return fmt.Errorf("state.append_records_per_s: %d must be in [0, %d]", st.AppendPerS, maxRecords/maxSeconds)
	case st.RecordBytes < 0 || st.RecordBytes > maxRecordBytes:
		return fmt.Errorf("state.record_bytes: %d must be in [0, %d]", st.RecordBytes, maxRecordBytes)
	}
	if err := sc.validateRestore("state.restore_records_per_s", st.RestorePerS); err != nil {
		return err
	}
	if len(sc.Events) > MaxEvents {
		return fmt.Errorf("events: %d exceed the limit %d", len(sc.Events), MaxEvents)
	}
	return nil
}

// validateReportTimes checks reports.at and reports.values (times within
// the scenario, at most MaxEvents in all, known task ids, the values
// bounded as recorded inputs are) and orders each member's reports.
func (sc *Scenario) validateReportTimes() error {
	if sc.Reports == nil || (sc.Reports.At == nil && sc.Reports.Values == nil) {
		return nil
	}
	n := 0
	sc.reportAt, sc.reportVal = map[string][]int64{}, map[string][]reportValue{}
	check := func(label string, at float64) (int64, error) {
		if n++; n > MaxEvents {
			return 0, fmt.Errorf("more than %d times", MaxEvents)
		}
		if !finite(at) || at < 0 || at > sc.DurationS {
			return 0, fmt.Errorf("%q: %v must be in [0, duration_s]", label, at)
		}
		return ms(at), nil
	}
	for _, label := range slices.Sorted(maps.Keys(sc.Reports.At)) {
		if label == "" {
			return errors.New("reports.at: empty member label")
		}
		for _, at := range sc.Reports.At[label] {
			t, err := check(label, at)
			if err != nil {
				return fmt.Errorf("reports.at: %w", err)
			}
			sc.reportAt[label] = append(sc.reportAt[label], t)
		}
		slices.Sort(sc.reportAt[label])
	}
	for _, label := range slices.Sorted(maps.Keys(sc.Reports.Values)) {
		if err := sc.validateReportValues(label, check); err != nil {
			return fmt.Errorf("reports.values: %w", err)
		}
	}
	return nil
}

// hostRead is a HostRead as the replay uses it: per task, -1 unknown.
type hostRead struct {
	atMs int64
	ends []int64
}

// validateHostReads checks reports.host_reads (times within the
// scenario, at most MaxEvents, known task ids, the values bounded with
// reports.values') and orders them by time.
func (sc *Scenario) validateHostReads() error {
	if sc.Reports == nil || sc.Reports.HostReads == nil {
		return nil
	}
	reads := sc.Reports.HostReads
	if len(reads) > MaxEvents {
		return fmt.Errorf("reports.host_reads: %d exceed the limit %d", len(reads), MaxEvents)
	}
	total := len(sc.tasks)
	for i, r := range reads {
		if !finite(r.AtS) || r.AtS < 0 || r.AtS > sc.DurationS {
			return fmt.Errorf("reports.host_reads[%d]: at_s %v must be in [0, duration_s]", i, r.AtS)
		}
		if sc.reportValues += total; sc.reportValues > maxRecordedValues {
			return fmt.Errorf("reports.host_reads: more than %d offsets", maxRecordedValues)
		}
		hr := hostRead{atMs: ms(r.AtS), ends: none(total)}
		if err := sc.recordedOffsets(r.EndOffsets, hr.ends); err != nil {
			return fmt.Errorf("reports.host_reads[%d]: end_offsets: %w", i, err)
		}
		sc.hostReads = append(sc.hostReads, hr)
	}
	sort.SliceStable(sc.hostReads, func(i, j int) bool { return sc.hostReads[i].atMs < sc.hostReads[j].atMs })
	return nil
}

// reportValue is a ReportValue as the replay uses it: per task, -1 none.
type reportValue struct {
	offs, ends []int64
}

// validateReportValues checks and orders label's reports.values.
func (sc *Scenario) validateReportValues(label string, check func(string, float64) (int64, error)) error {
	if label == "" {
		return errors.New("empty member label")
	}
	if _, ok := sc.Reports.At[label]; ok {
		return fmt.Errorf("%q is in reports.at too", label)
	}
	vals := slices.Clone(sc.Reports.Values[label])
	sort.SliceStable(vals, func(i, j int) bool { return vals[i].AtS < vals[j].AtS })
	total := len(sc.tasks)
	for _, v := range vals {
		t, err := check(label, v.AtS)
		if err != nil {
			return err
		}
		if sc.reportValues += 2 * total; sc.reportValues > maxRecordedValues {
			return fmt.Errorf("more than %d offsets", maxRecordedValues)
		}
		rv := reportValue{offs: none(total), ends: none(total)}
		if err := sc.recordedOffsets(v.TaskOffsets, rv.offs); err != nil {
			return fmt.Errorf("%q at %v: task_offsets: %w", label, v.AtS, err)
		}
		if err := sc.recordedOffsets(v.TaskEndOffsets, rv.ends); err != nil {
			return fmt.Errorf("%q at %v: task_end_offsets: %w", label, v.AtS, err)
		}
		sc.reportAt[label] = append(sc.reportAt[label], t)
		sc.reportVal[label] = append(sc.reportVal[label], rv)
	}
	return nil
}

// validateRestore checks a restore rate: positive, bounded, and at least
// one record per tick.
func (sc *Scenario) validateRestore(field string, n int64) error {
	switch {
	case n <= 0 || n > maxRecords/maxSeconds:
		return fmt.Errorf("%s: %d must be in (0, %d]", field, n, maxRecords/maxSeconds)
	case n*sc.TickMs < 1000:
		return fmt.Errorf("%s: %d restores less than one record per tick of %d ms", field, n, sc.TickMs)
	}
	return nil
}

func (sc *Scenario) validateSubtopologies() error {
	if len(sc.Subtopologies) == 0 {
		return errors.New("subtopologies: none, want at least one")
	}
	var total int64
	seen := map[string]bool{}
	for i, s := range sc.Subtopologies {
		switch {
		case s.ID == "":
			return fmt.Errorf("subtopologies[%d]: id is empty", i)
		case seen[s.ID]:
			return fmt.Errorf("subtopologies[%d]: id %q appears twice", i, s.ID)
		case s.Partitions <= 0:
			return fmt.Errorf("subtopologies[%d] (%q): partitions %d must be > 0", i, s.ID, s.Partitions)
		case s.ChangelogRecords != nil && (*s.ChangelogRecords < 0 || *s.ChangelogRecords > maxRecords):
			return fmt.Errorf("subtopologies[%d] (%q): changelog_records %d must be in [0, 2^50]", i, s.ID, *s.ChangelogRecords)
		case s.ChangelogRecords != nil && !s.Stateful:
			return fmt.Errorf("subtopologies[%d] (%q): changelog_records on a stateless subtopology", i, s.ID)
		}
		if s.ChangelogRecords != nil {
			if sc.changelogOf == nil {
				sc.changelogOf = map[string]int64{}
			}
			sc.changelogOf[s.ID] = *s.ChangelogRecords
		}
		seen[s.ID] = true
		if total += int64(s.Partitions); total > abi.MaxTasks {
			return fmt.Errorf("subtopologies: %d tasks exceed the limit %d", total, abi.MaxTasks)
		}
		sc.subs = append(sc.subs, abi.Subtopology{ID: s.ID, Partitions: s.Partitions, Stateful: s.Stateful})
	}
	// The host lists subtopologies in ascending id order (abi/SPEC.md 4.1).
	sort.Slice(sc.subs, func(i, j int) bool { return sc.subs[i].ID < sc.subs[j].ID })
	sc.tasks = map[string]int32{}
	space := abi.NewTaskSpace(sc.subs)
	for i, st := range sc.subs {
		for p := range st.Partitions {
			sc.tasks[fmt.Sprintf("%s_%d", st.ID, p)] = space.Task(int32(i), p)
		}
	}
	return nil
}

// validateInitial checks the starting point's members (joined at 0 s)
// and task names; ValidateAssignment checks the rest when it is installed.
func (sc *Scenario) validateInitial() error {
	atZero := map[string]bool{}
	for _, s := range sc.steps {
		if s.atMs == 0 && s.kind == stepJoin {
			atZero[s.label] = true
		}
	}
	seen := map[string]bool{}
	for i, m := range sc.Initial {
		switch {
		case !atZero[m.Member]:
			return fmt.Errorf("initial[%d]: member %q does not join at 0 s", i, m.Member)
		case seen[m.Member]:
			return fmt.Errorf("initial[%d]: member %q appears twice", i, m.Member)
		}
		seen[m.Member] = true
		for _, set := range [][]string{m.Active, m.Standby} {
			for _, task := range set {
				if _, ok := sc.tasks[task]; !ok {
					return fmt.Errorf("initial[%d] (%q): no task %q", i, m.Member, task)
				}
			}
		}
		for task, lag := range m.Lags {
			if _, ok := sc.tasks[task]; !ok {
				return fmt.Errorf("initial[%d] (%q): lags: no task %q", i, m.Member, task)
			}
			if lag < 0 || lag > maxRecords {
				return fmt.Errorf("initial[%d] (%q): lags: %s: %d must be in [0, 2^50]", i, m.Member, task, lag)
			}
		}
	}
	return nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func (sc *Scenario) durationMs() int64 { return int64(math.Round(sc.DurationS * 1000)) }

// ms converts seconds (validated finite and bounded) to milliseconds.
func ms(s float64) int64 { return int64(math.Round(s * 1000)) }

// expand turns events into primitive steps in time order, checks that each
// names a member in the right state at its time, and draws member ids.
func (sc *Scenario) expand() error {
	var steps []step
	add := func(s step) {
		s.order = len(steps)
		steps = append(steps, s)
	}
	procs := map[string]string{} // label -> process of its last join
	racks := map[string]string{}
	for i, e := range sc.Events {
		if err := sc.expandEvent(e, procs, racks, add); err != nil {
			return fmt.Errorf("events[%d] (at_s %v): %w", i, e.AtS, err)
		}
		if len(steps) > MaxEvents {
			return fmt.Errorf("events: %d steps after expanding restarts exceed the limit %d", len(steps), MaxEvents)
		}
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].atMs < steps[j].atMs })
	rng := rand.New(rand.NewPCG(sc.Seed, 0x636f6f7264686f73)) // "coordhos"
	live := map[string]bool{}                                 // labels of the members in the group
	ids := map[string]string{}                                // member id -> label of every join: never another label's
	alive := 0
	for i := range steps {
		s := &steps[i]
		known := live[s.label]
		switch s.kind {
		case stepJoin:
			if known {
				return fmt.Errorf("at %v s: join %q: already a member", float64(s.atMs)/1000, s.label)
			}
			if alive++; alive > MaxMembers {
				return fmt.Errorf("at %v s: more than %d members", float64(s.atMs)/1000, MaxMembers)
			}
			live[s.label] = true
			if s.id == "" {
				s.id = memberID(rng)
			}
			// A member may join again with its own id after it left or
			// was fenced, as a Kafka Streams member fenced by the
			// coordinator rejoins with the id it had.
			if other, ok := ids[s.id]; ok && other != s.label {
				return fmt.Errorf("at %v s: join %q: member_id %q was %q's", float64(s.atMs)/1000, s.label, s.id, other)
			}
			ids[s.id] = s.label
		case stepLeave, stepCrash:
			if !known {
				return fmt.Errorf("at %v s: %s %q: not a running member", float64(s.atMs)/1000, verbs[s.kind], s.label)
			}
			delete(live, s.label)
			alive--
		}
		// A crashed member is fenced after the session timeout; it may
		// join again after that.
		if s.kind == stepCrash {
			fenceAt := s.atMs + ms(sc.SessionTimeoutS)
			for j := i + 1; j < len(steps); j++ {
				if steps[j].atMs >= fenceAt {
					break
				}
				if n := steps[j]; n.label == s.label && n.kind <= stepCrash {
					return fmt.Errorf("at %v s: %s %q: it crashed at %v s and is fenced only at %v s (session_timeout_s)",
						float64(n.atMs)/1000, verbs[n.kind], s.label, float64(s.atMs)/1000, float64(fenceAt)/1000)
				}
			}
		}
	}
	sc.steps = steps
	return nil
}

var verbs = map[stepKind]string{stepJoin: "join", stepLeave: "leave", stepCrash: "crash"}

func (sc *Scenario) expandEvent(e Event, procs, racks map[string]string, add func(step)) error {
	if !finite(e.AtS) || e.AtS < 0 || e.AtS > sc.DurationS {
		return fmt.Errorf("at_s: %v must be in [0, duration_s]", e.AtS)
	}
	at := ms(e.AtS)
	kinds := 0
	for _, set := range []bool{e.Join != "", e.Leave != "", e.Crash != "", e.Restart != nil, e.AppendPerS != nil, e.LoseState != "", e.CoordhostRestart != nil} {
		if set {
			kinds++
		}
	}
	if kinds != 1 {
		return errors.New("want exactly one of join, leave, crash, restart, append_records_per_s, lose_state, coordhost_restart")
	}
	if (e.Process != "" || e.Rack != "" || e.MemberID != "" || e.RestorePerS != nil || e.RestoreQuota != nil) && e.Join == "" {
		return errors.New("process, rack, member_id, restore_records_per_s and restore_quota belong to a join")
	}
	if e.RestoreQuota != nil {
		if !sc.State.SharedRestore {
			return errQuotaNeedsShared
		}
		if err := e.RestoreQuota.validate("restore_quota"); err != nil {
			return err
		}
	}
	if e.RestorePerS != nil {
		if err := sc.validateRestore("restore_records_per_s", *e.RestorePerS); err != nil {
			return err
		}
	}
	if len(e.MemberID) > maxMemberID {
		return fmt.Errorf("member_id: %d bytes exceed the limit %d", len(e.MemberID), maxMemberID)
	}
	if (e.DownS != 0 || e.EveryS != 0) && e.Restart == nil {
		return errors.New("down_s and every_s belong to a restart")
	}
	switch {
	case e.Protocol != "" && e.Join == "" && e.Restart == nil:
		return errors.New("protocol belongs to a join or a restart")
	case e.Protocol != "" && e.Protocol != "streams" && e.Protocol != "classic":
		return fmt.Errorf("protocol: %q, want streams or classic", e.Protocol)
	}

	switch {
	case e.Join != "":
		p := e.Process
		if p == "" {
			p = e.Join
		}
		procs[e.Join], racks[e.Join] = p, e.Rack
		j := step{atMs: at, kind: stepJoin, label: e.Join, process: p, rack: e.Rack, id: e.MemberID, protocol: e.Protocol}
		if e.RestorePerS != nil {
			j.n = *e.RestorePerS
		}
		j.quota = e.RestoreQuota
		add(j)
	case e.Leave != "":
		add(step{atMs: at, kind: stepLeave, label: e.Leave})
	case e.Crash != "":
		add(step{atMs: at, kind: stepCrash, label: e.Crash})
	case e.AppendPerS != nil:
		if n := *e.AppendPerS; n < 0 || n > maxRecords/maxSeconds {
			return fmt.Errorf("append_records_per_s: %d must be in [0, %d]", n, maxRecords/maxSeconds)
		}
		add(step{atMs: at, kind: stepAppend, n: *e.AppendPerS})
	case e.LoseState != "":
		add(step{atMs: at, kind: stepLoseState, process: e.LoseState})
	case e.CoordhostRestart != nil:
		if d := *e.CoordhostRestart; !finite(d) || d < 0 || d > maxSeconds {
			return fmt.Errorf("coordhost_restart: %v must be in [0, %d] seconds", d, maxSeconds)
		}
		add(step{atMs: at, kind: stepCoordhostRestart, n: ms(*e.CoordhostRestart)})
	default:
		return sc.expandRestart(e, at, procs, racks, add)
	}
	return nil
}

func (sc *Scenario) expandRestart(e Event, at int64, procs, racks map[string]string, add func(step)) error {
	switch {
	case len(e.Restart) == 0:
		return errors.New("restart: no members")
	case !finite(e.DownS) || e.DownS < 0 || e.DownS > maxSeconds:
		return fmt.Errorf("down_s: %v must be in [0, %d]", e.DownS, maxSeconds)
	case !finite(e.EveryS) || e.EveryS < 0 || e.EveryS > maxSeconds:
		return fmt.Errorf("every_s: %v must be in [0, %d]", e.EveryS, maxSeconds)
	case len(e.Restart) > MaxEvents:
		return fmt.Errorf("restart: %d members exceed the limit %d", len(e.Restart), MaxEvents)
	}
	for i, label := range e.Restart {
		p, ok := procs[label]
		if !ok {
			return fmt.Errorf("restart[%d]: %q never joined before", i, label)
		}
		leave := at + int64(i)*ms(e.EveryS)
		add(step{atMs: leave, kind: stepLeave, label: label})
		add(step{atMs: leave + ms(e.DownS), kind: stepJoin, label: label, process: p, rack: racks[label], protocol: e.Protocol})
	}
	return nil
}

// memberID draws a member id shaped like the ones Kafka clients send (22
// URL-safe base64 characters of a random UUID).
func memberID(rng *rand.Rand) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var b [22]byte
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b[:])
}

// classicRejoinMs is classic_rejoin_ms or its default.
func (sc *Scenario) classicRejoinMs() int64 {
	if sc.ClassicRejoinMs != nil {
		return *sc.ClassicRejoinMs
	}
	return 3000
}

// lastEventMs is the time of the scenario's last event (its steps, after
// expanding restarts); 0 without events.
func (sc *Scenario) lastEventMs() int64 {
	var last int64
	for _, s := range sc.steps {
		last = max(last, s.atMs)
	}
	return last
}
