package experiment

// A history entry as kept in memory: the history holds the last targets
// of up to maxGroups groups, so each entry is kept compact and turned
// into a TargetRecord only when served. The time is an integer, the
// moved tasks are indexes into the entry's own table of the subtopology
// ids and process ids they name (the strings are the request's, not
// copies), and the reasons are a slice of exactly their length.

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/metrics"
	"github.com/coordhost/coordhost/core"
)

// Target is a primary's measured result on its way to the history: the
// host carries it from the assignor worker to the input that hands the
// result to core.
type Target struct {
	e entry
}

// entry is one target of a group's history.
type entry struct {
	unixNano  int64
	epoch     int32
	notListed int32
	probe     bool
	assignor  string
	version   string
	reasons   []Reason
	metrics   report
	names     []string // subtopology and process ids the moves and inputs name
	moves     []move
	inputs    *inputs // the assignor's lag input; nil: none kept
}

// move is one listed move: a task (subtopology and partition) and the
// processes it left and joined, as indexes into entry.names.
type move struct {
	partition     int32
	sub, from, to uint16 // from is noName when no member ran the task
	cold          bool
}

// noName is move.from when no member ran the task.
const noName = math.MaxUint16

// newTarget is the history entry of the primary's result resp for run,
// measured as rep, computed at now.
func newTarget(run core.AssignorRun, req *abi.AssignRequest, resp *abi.AssignResponse, version string, rep metrics.Report, now time.Time) *Target {
	hand, _ := metrics.HandOvers(req, resp, metrics.Options{})
	t := &Target{e: entry{epoch: run.Epoch, unixNano: now.UnixNano(), probe: run.Probe, assignor: run.Assignor,
		version: version, metrics: packReport(rep)}}
	names := newNameTable(nil)
	t.e.moves, t.e.notListed = moves(req, resp, hand, names.id)
	t.e.names = slices.Clip(names.names)
	return t
}

// keepInputs adds req's lag input to t's entry, naming what the moves do
// not already name after their names.
func (t *Target) keepInputs(req *abi.AssignRequest) {
	names := newNameTable(t.e.names)
	t.e.inputs = newInputs(req, names.id)
	t.e.names = slices.Clip(names.names)
}

// nameTable numbers the names (subtopologies, processes) an entry
// refers to, in the order they are first named.
type nameTable struct {
	names []string
	index map[string]uint16
}

// newNameTable continues the numbering of names.
func newNameTable(names []string) *nameTable {
	nt := &nameTable{names: names, index: make(map[string]uint16, len(names))}
	for i, s := range names {
		nt.index[s] = uint16(i)
	}
	return nt
}

// id is s's number, the next one if s is new.
func (nt *nameTable) id(s string) uint16 {
	i, ok := nt.index[s]
	if !ok {
		i = uint16(len(nt.names))
		nt.index[s] = i
		nt.names = append(nt.names, s)
	}
	return i
}

// moves lists the active tasks of resp on another process than in req's
// current assignment, in task order, with the cold hand-overs marked,
// naming subtopologies and processes with name; notListed counts those
// beyond maxListedMoves.
func moves(req *abi.AssignRequest, resp *abi.AssignResponse, hand []metrics.HandOver, name func(string) uint16) (out []move, notListed int32) {
	ts := abi.NewTaskSpace(req.Subtopologies)
	was := make(map[int32]int32, ts.Total())
	for _, m := range req.Members {
		for _, t := range m.Active {
			was[t] = m.Process
		}
	}
	cold := map[int32]bool{}
	for _, h := range hand {
		cold[h.Task] = h.Cold
	}
	type mv struct{ task, from, to int32 }
	var all []mv
	for i, m := range resp.Members {
		to := req.Members[i].Process
		for _, t := range m.Active {
			from, ok := was[t]
			if !ok {
				from = -1
			}
			if from != to {
				all = append(all, mv{t, from, to})
			}
		}
	}
	slices.SortFunc(all, func(a, b mv) int { return int(a.task) - int(b.task) })
	if len(all) > maxListedMoves {
		all, notListed = all[:maxListedMoves], int32(len(all)-maxListedMoves)
	}
	// Each listed move names at most three strings and the inputs at
	// most maxInputValues: the index of a name fits in a uint16 below
	// noName.
	out = make([]move, len(all))
	for i, x := range all {
		s, p := ts.Locate(x.task)
		out[i] = move{partition: p, sub: name(req.Subtopologies[s].ID), from: noName, to: name(req.Processes[x.to]), cold: cold[x.task]}
		if x.from >= 0 {
			out[i].from = name(req.Processes[x.from])
		}
	}
	return out, notListed
}

// record is e as served.
func (e *entry) record() TargetRecord {
	r := TargetRecord{Epoch: e.epoch, Time: time.Unix(0, e.unixNano).UTC(), Reasons: e.reasons, Probe: e.probe,
		Assignor: e.assignor, Version: e.version, Metrics: e.metrics.unpack(), Moves: make([]Move, len(e.moves)),
		MovesNotListed: int(e.notListed)}
	if e.inputs != nil {
		r.Inputs = e.inputs.record(e.names)
	}
	for i, m := range e.moves {
		r.Moves[i] = Move{Task: fmt.Sprintf("%s_%d", e.names[m.sub], m.partition), To: e.names[m.to], Cold: m.cold}
		if m.from != noName {
			r.Moves[i].From = e.names[m.from]
		}
	}
	return r
}

// report is a metrics.Report in half the space: its counts as int32s
// (all of them fit in any realistic group), or the report itself when one
// does not.
type report struct {
	counts  [reportCounts]int32
	compute time.Duration
	full    *metrics.Report // when a count does not fit in an int32
}

// reportCounts is the number of counts in a metrics.Report.
const reportCounts = 35

// countsOf lists the counts of r, in the one order report keeps them.
func countsOf(r *metrics.Report) [reportCounts]*int {
	b, m := &r.Balance, &r.Movement
	return [reportCounts]*int{&r.Members, &r.Processes, &r.Tasks, &r.Stateful,
		&b.ActivePerMember.Min, &b.ActivePerMember.Max, &b.ActivePerMember.Spread,
		&b.AllPerMember.Min, &b.AllPerMember.Max, &b.AllPerMember.Spread,
		&b.ActivePerProcess.Min, &b.ActivePerProcess.Max, &b.ActivePerProcess.Spread,
		&b.AllPerProcess.Min, &b.AllPerProcess.Max, &b.AllPerProcess.Spread,
		&m.Kept, &m.Moved, &m.MovedProcess, &m.New, &m.HandOvers, &m.Warm, &m.Cold, &m.ColdUnknownLag, &m.StandbysMoved,
		&r.Standbys.Wanted, &r.Standbys.Possible, &r.Standbys.Placed, &r.Standbys.Short,
		&r.Warmups.Open, &r.Warmups.CaughtUp,
		&r.Racks.Known, &r.Racks.Checked, &r.Racks.Spread, &r.Racks.Concentrated}
}

func packReport(r metrics.Report) report {
	p := report{compute: r.ComputeTime}
	for i, c := range countsOf(&r) {
		if *c != int(int32(*c)) {
			return report{full: &r}
		}
		p.counts[i] = int32(*c)
	}
	return p
}

func (p *report) unpack() metrics.Report {
	if p.full != nil {
		return *p.full
	}
	r := metrics.Report{ComputeTime: p.compute}
	for i, c := range countsOf(&r) {
		*c = int(p.counts[i])
	}
	return r
}
