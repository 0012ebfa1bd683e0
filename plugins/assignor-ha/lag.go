package ha

import (
	"math"
	"slices"

	"github.com/coordhost/coordhost/abi"
)

// LagRunning is the lag of a task on the process that currently runs it as
// active (Kafka's Task.LATEST_OFFSET, -2): always caught up, and sorted
// before every real lag. KIP-1071 clients omit running actives from their
// task offsets; the member's current active set says it instead.
const LagRunning int64 = -2

// endUnknown marks a task whose changelog end offset sum nobody reported
// (or everyone reported as Long.MAX_VALUE, the 4.4 client's "unknown").
const endUnknown int64 = math.MaxInt64

// lagEntry is a process's lag for one task that differs from the task's
// default (the lag of a process without state for it).
type lagEntry struct {
	task int32
	lag  int64
}

// Lags holds the per-process task lags of one request, computed as Kafka's
// ClientState.computeTaskLags does, from offsets the members reported:
//
//   - a process running the task as active (a member has it in Active): LagRunning;
//   - end offset unknown: MaxInt64 - offset (sorts after every known lag,
//     more local state first) and never caught up;
//   - offset > end (corrupt local state): the end offset, as if restoring from scratch;
//   - otherwise end - offset, where a process without state has offset 0.
//
// The end offset of a task is the largest known end offset any member
// reported for it. A member's offset for a task is measured against the
// end offset the same member reported for it (its TaskEndOffsets entry:
// the two come from one report, docs/WARMUPS.md §2.1), the task's end
// offset only when it reported none: its lag is its own end − offset, 0
// at or beyond its own end (a position one past the last offset), and
// stands as the offset end − that lag. A process's offset is the largest
// of its members'. Negative reported offsets count as absent; a
// MaxInt64 offset ("not restoring yet") is not measured against its own end.
type Lags struct {
	end   []int64      // per task; endUnknown when nobody knows
	procs [][]lagEntry // per process, ascending by task
}

// ComputeLags derives the lags of every process for every task of req.
func ComputeLags(req *abi.AssignRequest) *Lags {
	total := req.NumTasks()
	l := &Lags{end: make([]int64, total), procs: make([][]lagEntry, len(req.Processes))}
	for t := range l.end {
		l.end[t] = -1
	}
	for i := range req.Members {
		for _, o := range req.Members[i].TaskEndOffsets {
			if o.Offset >= 0 && o.Offset != endUnknown && o.Offset > l.end[o.Task] {
				l.end[o.Task] = o.Offset
			}
		}
	}
	for t, e := range l.end {
		if e < 0 {
			l.end[t] = endUnknown
		}
	}
	// Each process's entries in one pass over its members' reports: acc
	// collects per task (runningMark, or the largest offset), touched
	// the tasks seen, sorted once; one backing array for all processes.
	first, next := make([]int32, len(req.Processes)), make([]int32, len(req.Members))
	for p := range first {
		first[p] = -1
	}
	n := 0
	for i := len(req.Members) - 1; i >= 0; i-- { // lists in member order
		m := &req.Members[i]
		next[i], first[m.Process] = first[m.Process], int32(i)
		n += len(m.TaskOffsets) + len(m.Active)
	}
	acc := make([]int64, total)
	for t := range acc {
		acc[t] = accUnset
	}
	all := make([]lagEntry, 0, n)
	var touched []int32
	for p := range req.Processes {
		touched = touched[:0]
		for i := first[p]; i >= 0; i = next[i] {
			m := &req.Members[i]
			for _, o := range m.TaskOffsets { // its own lag where it reported its own end
				touched = accumulate(acc, touched, o.Task, m.OffsetAgainst(o.Task, o.Offset, l.end[o.Task]))
			}
			for _, t := range m.Active {
				touched = accumulate(acc, touched, t, runningMark)
			}
		}
		slices.Sort(touched)
		start := len(all)
		for _, t := range touched {
			switch v := acc[t]; {
			case v == runningMark:
				all = append(all, lagEntry{t, LagRunning})
			case v >= 0:
				all = append(all, lagEntry{t, l.lagFrom(t, v)})
			}
			acc[t] = accUnset
		}
		l.procs[p] = all[start:len(all):len(all)]
	}
	return l
}

// runningMark is an offset no client can report (negative reports are
// dropped), standing for "runs it as active".
const runningMark int64 = math.MinInt64

// accUnset marks a task ComputeLags has not seen yet for the process.
const accUnset int64 = math.MinInt64 + 1

// accumulate records one report of offset o for task t in acc: a running
// active wins, then the largest non-negative offset; a negative offset
// alone leaves the process without an entry (-1).
func accumulate(acc []int64, touched []int32, t int32, o int64) []int32 {
	v := acc[t]
	if v == accUnset {
		touched = append(touched, t)
		v = -1
	}
	if o == runningMark || (v != runningMark && o > v) {
		v = o
	}
	acc[t] = v
	return touched
}

func (l *Lags) lagFrom(t int32, offset int64) int64 {
	end := l.end[t]
	switch {
	case end == endUnknown:
		return endUnknown - offset
	case offset > end:
		return end
	default:
		return end - offset
	}
}

// Lag returns process p's lag for task t.
func (l *Lags) Lag(p, t int32) int64 {
	es := l.procs[p]
	lo, hi := 0, len(es) // sort.Search without a closure call per probe
	for lo < hi {
		if mid := int(uint(lo+hi) >> 1); es[mid].task < t {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if i := lo; i < len(es) && es[i].task == t {
		return es[i].lag
	}
	return l.end[t] // no state: offset 0
}

// EndKnown reports whether some member reported task t's end offset.
func (l *Lags) EndKnown(t int32) bool { return l.end[t] != endUnknown }

// CaughtUp reports whether process p may take task t as active without a
// warm-up (HighAvailabilityTaskAssignor.tasksToCaughtUpClients): it runs
// the task, or acceptable.recovery.lag is MaxInt64 (caught-up-ness is off),
// or the end offset is known and 0 <= lag <= acceptable.
func (l *Lags) CaughtUp(p, t int32, acceptable int64) bool {
	return l.caughtUpAt(t, l.Lag(p, t), acceptable)
}

// caughtUpAt is CaughtUp for a process whose lag for t is lag.
func (l *Lags) caughtUpAt(t int32, lag, acceptable int64) bool {
	if lag == LagRunning || acceptable == math.MaxInt64 {
		return true
	}
	return l.end[t] != endUnknown && lag >= 0 && lag <= acceptable
}
