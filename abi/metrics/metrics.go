// Package metrics measures the quality of one task assignment: balance,
// movement against the previous assignment (and which stateful hand-overs
// are cold), standby coverage, open warm-ups, rack spread and compute time.
//
// It works on the plugin ABI's own types (abi.AssignRequest and
// abi.AssignResponse), imports only the standard library and abi, reads no
// clock and does no I/O, so a plugin author can use it in tests and the host
// can use it on every target it computes. docs/PLUGINS.md defines each
// figure.
package metrics

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/coordhost/coordhost/abi"
)

// Options are the inputs of Measure besides the request and the response.
type Options struct {
	// Previous is the assignment movement is measured against, one entry
	// per request member (positional, like a response). Nil: the members'
	// current assignment in the request (their Active, Standby and Warmup).
	Previous []abi.MemberAssignment
	// ComputeTime is how long the assignor took; Measure only reports it.
	ComputeTime time.Duration
}

// Report holds every figure of one assignment.
type Report struct {
	Members   int `json:"members"`
	Processes int `json:"processes"` // processes with at least one member
	Tasks     int `json:"tasks"`
	Stateful  int `json:"stateful_tasks"`

	Balance  Balance  `json:"balance"`
	Movement Movement `json:"movement"`
	Standbys Standbys `json:"standbys"`
	Warmups  Warmups  `json:"warmups"`
	Racks    Racks    `json:"racks"`

	// ComputeTime is Options.ComputeTime, in nanoseconds in JSON.
	ComputeTime time.Duration `json:"compute_ns"`
}

// Range is the fewest and most tasks one member (or process) holds.
type Range struct {
	Min    int `json:"min"`
	Max    int `json:"max"`
	Spread int `json:"spread"` // Max - Min
}

// Balance is the spread of the target's load. "All" counts active, standby
// and warm-up tasks together. A process's load is the sum of its members'.
type Balance struct {
	ActivePerMember  Range `json:"active_per_member"`
	AllPerMember     Range `json:"all_per_member"`
	ActivePerProcess Range `json:"active_per_process"`
	AllPerProcess    Range `json:"all_per_process"`
}

// Movement compares the target's active tasks with the previous
// assignment's.
type Movement struct {
	// Kept: active on the same member as before. Moved: active before on
	// another member of the request; MovedProcess counts those of them now
	// on another process. New: active on no member of the request before
	// (a new task, or its owner left).
	Kept         int `json:"kept"`
	Moved        int `json:"moved"`
	MovedProcess int `json:"moved_process"`
	New          int `json:"new"`
	// HandOvers are the stateful tasks now active on a process that did
	// not run them as active before (moved to another process, or new);
	// each is Warm or Cold (see HandOver).
	HandOvers int `json:"hand_overs"`
	Warm      int `json:"warm"`
	Cold      int `json:"cold"`
	// ColdUnknownLag counts the cold hand-overs whose lag is unknown: no
	// member reported the task's end offset (e.g. a new group).
	ColdUnknownLag int `json:"cold_unknown_lag"`
	// StandbysMoved counts target standby placements on a process that
	// did not hold that task as a standby before.
	StandbysMoved int `json:"standbys_moved"`
}

// Standbys is the coverage of stateful tasks by standby replicas.
type Standbys struct {
	// Wanted is stateful tasks × num_standby_replicas; Possible caps each
	// task at the processes other than its active's.
	Wanted   int `json:"wanted"`
	Possible int `json:"possible"`
	Placed   int `json:"placed"`
	// Short counts stateful tasks with fewer standbys than possible.
	Short int `json:"tasks_short"`
}

// Warmups are the warm-up replicas the target opens.
type Warmups struct {
	Open int `json:"open"`
	// CaughtUp counts open warm-ups whose process is already within the
	// acceptable recovery lag (a probing rebalance could promote them).
	CaughtUp int `json:"caught_up"`
}

// Racks is the spread of each task's copies (active and standbys) over
// racks, for tasks whose copies all run on processes with a known rack.
type Racks struct {
	Known int `json:"known"` // distinct racks of the members
	// Checked counts tasks with two or more copies, all on known racks.
	// Spread of them have their copies on as many distinct racks as
	// possible (min(copies, Known)); Concentrated have fewer.
	Checked      int `json:"checked"`
	Spread       int `json:"spread"`
	Concentrated int `json:"concentrated"`
}

// HandOver is one stateful task that becomes active on a process that did
// not run it. It is warm when the new process reported an offset for the
// task and its lag (the task's end offset, the largest any member
// reported, minus that offset) is within acceptable.recovery.lag, or when
// the end offset is known and itself within it (nothing worth restoring);
// otherwise cold. An unknown end offset makes a reported offset's lag
// unknown: cold.
type HandOver struct {
	Task int32  `json:"task"`
	From string `json:"from,omitempty"` // previous active process; "" when new
	To   string `json:"to"`
	// Lag is the new process's lag for the task, -1 when unknown.
	Lag  int64 `json:"lag"`
	Cold bool  `json:"cold"`
}

// Measure computes the report of resp, the target assignment computed for
// req. It fails, naming the problem, when resp or opts.Previous do not
// have one entry per request member or name tasks or processes outside
// req; it does not require resp to be valid otherwise (SPEC.md section 6).
func Measure(req *abi.AssignRequest, resp *abi.AssignResponse, opts Options) (Report, error) {
	m, err := newMeasurer(req, resp, opts)
	if err != nil {
		return Report{}, err
	}
	r := Report{Members: len(req.Members), Tasks: int(m.total), ComputeTime: opts.ComputeTime}
	for _, s := range m.stateful {
		if s {
			r.Stateful++
		}
	}
	r.Balance, r.Processes = m.balance(), m.liveProcesses()
	r.Movement = m.movement(nil)
	r.Standbys = m.standbys()
	r.Warmups = m.warmups()
	r.Racks = m.racks()
	return r, nil
}

// HandOvers lists the stateful hand-overs of resp (see HandOver) in task
// order; Measure counts them.
func HandOvers(req *abi.AssignRequest, resp *abi.AssignResponse, opts Options) ([]HandOver, error) {
	m, err := newMeasurer(req, resp, opts)
	if err != nil {
		return nil, err
	}
	var out []HandOver
	m.movement(func(h HandOver) { out = append(out, h) })
	slices.SortFunc(out, func(a, b HandOver) int { return int(a.Task) - int(b.Task) })
	return out, nil
}

// measurer holds one request's derived tables.
type measurer struct {
	req      *abi.AssignRequest
	resp     *abi.AssignResponse
	prev     []abi.MemberAssignment
	total    int32
	stateful []bool  // per task
	end      []int64 // per task: largest reported end offset; -1 unknown
	offsets  map[procTask]int64
}

type procTask struct{ proc, task int32 }

func newMeasurer(req *abi.AssignRequest, resp *abi.AssignResponse, opts Options) (*measurer, error) {
	m := &measurer{req: req, resp: resp, prev: opts.Previous, total: req.NumTasks(), offsets: map[procTask]int64{}}
	if m.prev == nil {
		m.prev = make([]abi.MemberAssignment, len(req.Members))
		for i, mem := range req.Members {
			m.prev[i] = abi.MemberAssignment{Active: mem.Active, Standby: mem.Standby, Warmup: mem.Warmup}
		}
	}
	if err := m.check(); err != nil {
		return nil, err
	}
	m.stateful = make([]bool, 0, m.total)
	for _, s := range req.Subtopologies {
		for p := int32(0); p < s.Partitions; p++ {
			m.stateful = append(m.stateful, s.Stateful)
		}
	}
	m.end = make([]int64, m.total)
	for t := range m.end {
		m.end[t] = -1
	}
	for _, mem := range req.Members {
		for _, o := range mem.TaskEndOffsets {
			// Long.MAX_VALUE is the 4.4 client's "unknown".
			if o.Offset != math.MaxInt64 && o.Offset > m.end[o.Task] {
				m.end[o.Task] = o.Offset
			}
		}
	}
	// A member's offset is measured against the end offset it reported
	// with it, where it did (abi.Member.OffsetAgainst), as core and the
	// HA assignor measure it.
	for i := range req.Members {
		mem := &req.Members[i]
		for _, o := range mem.TaskOffsets {
			k, off := procTask{mem.Process, o.Task}, mem.OffsetAgainst(o.Task, o.Offset, m.end[o.Task])
			if cur, ok := m.offsets[k]; off >= 0 && (!ok || off > cur) {
				m.offsets[k] = off
			}
		}
	}
	return m, nil
}

// check rejects inputs whose indices would be out of range.
func (m *measurer) check() error {
	n := len(m.req.Members)
	if len(m.resp.Members) != n {
		return fmt.Errorf("metrics: response has %d member entries for %d members", len(m.resp.Members), n)
	}
	if len(m.prev) != n {
		return fmt.Errorf("metrics: previous assignment has %d member entries for %d members", len(m.prev), n)
	}
	var total int64
	for _, s := range m.req.Subtopologies {
		if s.Partitions < 0 {
			return fmt.Errorf("metrics: subtopology %q has %d partitions", s.ID, s.Partitions)
		}
		total += int64(s.Partitions)
	}
	if total > abi.MaxTasks {
		return fmt.Errorf("metrics: %d tasks exceed the limit %d", total, abi.MaxTasks)
	}
	for i, mem := range m.req.Members {
		if mem.Process < 0 || int(mem.Process) >= len(m.req.Processes) {
			return fmt.Errorf("metrics: member %q: process index %d, only %d processes", mem.ID, mem.Process, len(m.req.Processes))
		}
		sets := [][]int32{m.resp.Members[i].Active, m.resp.Members[i].Standby, m.resp.Members[i].Warmup,
			m.prev[i].Active, m.prev[i].Standby, m.prev[i].Warmup}
		for j, set := range sets {
			for _, t := range set {
				if t < 0 || t >= m.total {
					return fmt.Errorf("metrics: member %q: task %d out of range (%d tasks) in %s", mem.ID, t, m.total, setNames[j])
				}
			}
		}
		for _, os := range [][]abi.TaskOffset{mem.TaskOffsets, mem.TaskEndOffsets} {
			for _, o := range os {
				if o.Task < 0 || o.Task >= m.total {
					return fmt.Errorf("metrics: member %q: offset for task %d out of range (%d tasks)", mem.ID, o.Task, m.total)
				}
			}
		}
	}
	return nil
}

var setNames = [6]string{"target active", "target standby", "target warm-up",
	"previous active", "previous standby", "previous warm-up"}

// lag returns process p's lag for task t and whether the process may take
// the task over warm (see HandOver). The lag is -1 when unknown.
func (m *measurer) lag(p, t int32) (lag int64, warm bool) {
	end := m.end[t]
	off, reported := m.offsets[procTask{p, t}]
	acceptable := m.req.Configs.AcceptableRecoveryLag
	switch {
	case end < 0:
		return -1, false
	case !reported:
		return end, end <= acceptable
	case off > end: // local state ahead of the changelog: restored from scratch
		return end, end <= acceptable
	default:
		return end - off, end-off <= acceptable
	}
}

// liveProcesses counts the processes with at least one member.
func (m *measurer) liveProcesses() int {
	seen := make([]bool, len(m.req.Processes))
	n := 0
	for _, mem := range m.req.Members {
		if !seen[mem.Process] {
			seen[mem.Process] = true
			n++
		}
	}
	return n
}

func (m *measurer) balance() Balance {
	procActive := make([]int, len(m.req.Processes))
	procAll := make([]int, len(m.req.Processes))
	seen := make([]bool, len(m.req.Processes))
	var b Balance
	var am, allm, ap, allp rangeOf
	for i, mem := range m.req.Members {
		a := m.resp.Members[i]
		n := len(a.Active) + len(a.Standby) + len(a.Warmup)
		am.add(len(a.Active))
		allm.add(n)
		procActive[mem.Process] += len(a.Active)
		procAll[mem.Process] += n
		seen[mem.Process] = true
	}
	for p, ok := range seen {
		if ok {
			ap.add(procActive[p])
			allp.add(procAll[p])
		}
	}
	b.ActivePerMember, b.AllPerMember = am.Range, allm.Range
	b.ActivePerProcess, b.AllPerProcess = ap.Range, allp.Range
	return b
}

// rangeOf accumulates a Range.
type rangeOf struct {
	Range
	any bool
}

func (r *rangeOf) add(v int) {
	if !r.any || v < r.Min {
		r.Min = v
	}
	if !r.any || v > r.Max {
		r.Max = v
	}
	r.any = true
	r.Spread = r.Max - r.Min
}

// owners returns, per task, the member index + 1 holding it in sets (0:
// none; the first member wins if several do).
func (m *measurer) owners(sets func(i int) []int32) []int32 {
	own := make([]int32, m.total)
	for i := range m.req.Members {
		for _, t := range sets(i) {
			if own[t] == 0 {
				own[t] = int32(i) + 1
			}
		}
	}
	return own
}

// movement counts moves; each stateful hand-over also goes to each, when
// not nil.
func (m *measurer) movement(each func(HandOver)) Movement {
	var mv Movement
	before := m.owners(func(i int) []int32 { return m.prev[i].Active })
	procs := m.req.Processes
	for i, mem := range m.req.Members {
		for _, t := range m.resp.Members[i].Active {
			from := before[t] - 1
			switch {
			case from == int32(i):
				mv.Kept++
				continue
			case from < 0:
				mv.New++
			default:
				mv.Moved++
				if m.req.Members[from].Process == mem.Process {
					continue
				}
				mv.MovedProcess++
			}
			if !m.stateful[t] {
				continue
			}
			mv.HandOvers++
			lag, warm := m.lag(mem.Process, t)
			if warm {
				mv.Warm++
			} else {
				mv.Cold++
				if lag < 0 {
					mv.ColdUnknownLag++
				}
			}
			if each != nil {
				h := HandOver{Task: t, To: procs[mem.Process], Lag: lag, Cold: !warm}
				if from >= 0 {
					h.From = procs[m.req.Members[from].Process]
				}
				each(h)
			}
		}
	}
	mv.StandbysMoved = m.standbysMoved()
	return mv
}

func (m *measurer) standbysMoved() int {
	held := map[procTask]bool{}
	for i, mem := range m.req.Members {
		for _, t := range m.prev[i].Standby {
			held[procTask{mem.Process, t}] = true
		}
	}
	n := 0
	for i, mem := range m.req.Members {
		for _, t := range m.resp.Members[i].Standby {
			if !held[procTask{mem.Process, t}] {
				n++
			}
		}
	}
	return n
}

func (m *measurer) standbys() Standbys {
	var s Standbys
	count := make([]int, m.total)
	for i := range m.req.Members {
		for _, t := range m.resp.Members[i].Standby {
			count[t]++
			s.Placed++
		}
	}
	replicas := int(max(m.req.Configs.NumStandbyReplicas, 0))
	procs := m.liveProcesses()
	possible := min(replicas, max(procs-1, 0))
	for t, st := range m.stateful {
		if !st {
			continue
		}
		s.Wanted += replicas
		s.Possible += possible
		if count[t] < possible {
			s.Short++
		}
	}
	return s
}

func (m *measurer) warmups() Warmups {
	var w Warmups
	for i, mem := range m.req.Members {
		for _, t := range m.resp.Members[i].Warmup {
			w.Open++
			if _, warm := m.lag(mem.Process, t); warm {
				w.CaughtUp++
			}
		}
	}
	return w
}

func (m *measurer) racks() Racks {
	var r Racks
	ids := map[string]int{}
	for _, mem := range m.req.Members {
		if _, ok := ids[mem.Rack]; mem.Rack != "" && !ok {
			ids[mem.Rack] = len(ids)
		}
	}
	r.Known = len(ids)
	if r.Known == 0 {
		return r
	}
	copies := make([][]int, m.total) // per task: rack ids of its copies, -1 unknown
	for i, mem := range m.req.Members {
		rack, ok := ids[mem.Rack]
		if !ok {
			rack = -1
		}
		for _, set := range [2][]int32{m.resp.Members[i].Active, m.resp.Members[i].Standby} {
			for _, t := range set {
				copies[t] = append(copies[t], rack)
			}
		}
	}
	seen := make([]bool, r.Known)
	for _, cs := range copies {
		if len(cs) < 2 || slices.Contains(cs, -1) {
			continue
		}
		clear(seen)
		distinct := 0
		for _, c := range cs {
			if !seen[c] {
				seen[c] = true
				distinct++
			}
		}
		r.Checked++
		if distinct >= min(len(cs), r.Known) {
			r.Spread++
		} else {
			r.Concentrated++
		}
	}
	return r
}
