package experiment

// The assignor's lag input of a history entry: per task the changelog end
// offset the assignor was handed (the largest any member's request
// carried) and per process the offset of its local state (the largest
// any of its members reported). With them a replay (host/sim) hands the
// assignor what coordhost handed it, whatever the members reported when.
// Kept as compactly as the moves: tasks as partition and subtopology
// index, processes as indexes into the entry's names, offsets in one
// table.

import (
	"fmt"
	"math"
	"slices"

	"github.com/coordhost/coordhost/abi"
)

// maxInputValues bounds the offsets one entry keeps: tasks times
// (processes + 1). A larger input is not kept (the entry has no inputs).
const maxInputValues = 4096

// Inputs is the lag input the assignor was handed for a target: what
// decides which process is caught up on which task.
type Inputs struct {
	// EndOffsets are the changelog end offsets, by task id ("1_3"): per
	// task the largest any member's request carried.
	EndOffsets map[string]int64 `json:"end_offsets"`
	// Processes are the processes whose members reported offsets, in
	// the request's process order.
	Processes []ProcessOffsets `json:"processes"`
}

// ProcessOffsets is one process's reported state: per task id the offset
// of its local state (the largest any of its members reported, each as
// measured against the task's end offset: end − its own lag where the
// member reported its own end offset, docs/WARMUPS.md §2.1; running
// actives are not reported).
type ProcessOffsets struct {
	Process     string           `json:"process"`
	TaskOffsets map[string]int64 `json:"task_offsets"`
}

// inputs is Inputs as an entry keeps it.
type inputs struct {
	tasks []taskRef // with a known end offset or a reported offset, ascending
	procs []uint16  // processes with a reported offset, as indexes into entry.names
	// offs holds, per task, its end offset and then the offset of each
	// of procs: len(tasks)*(len(procs)+1) values, -1 when not known.
	offs []int64
}

// taskRef is a task as an index into entry.names (its subtopology) and a
// partition.
type taskRef struct {
	partition int32
	sub       uint16
}

// newInputs is req's lag input, naming subtopologies and processes with
// name; nil when req carries no offsets or too many to keep.
func newInputs(req *abi.AssignRequest, name func(string) uint16) *inputs {
	total := req.NumTasks()
	known := make([]bool, total)
	procHas := make([]bool, len(req.Processes))
	for _, m := range req.Members {
		for _, o := range m.TaskEndOffsets {
			if validOffset(o, total) {
				known[o.Task] = true
			}
		}
		for _, o := range m.TaskOffsets {
			if validOffset(o, total) && int(m.Process) < len(procHas) {
				known[o.Task] = true
				procHas[m.Process] = true
			}
		}
	}
	var tasks []int32
	for t, k := range known {
		if k {
			tasks = append(tasks, int32(t))
		}
	}
	var procs []int32
	for p, h := range procHas {
		if h {
			procs = append(procs, int32(p))
		}
	}
	if len(tasks) == 0 || len(tasks)*(len(procs)+1) > maxInputValues {
		return nil
	}
	col := make(map[int32]int, len(tasks))
	for i, t := range tasks {
		col[t] = i
	}
	row := make(map[int32]int, len(procs))
	for i, p := range procs {
		row[p] = i + 1
	}
	in := &inputs{tasks: make([]taskRef, len(tasks)), procs: make([]uint16, len(procs)),
		offs: slices.Repeat([]int64{-1}, len(tasks)*(len(procs)+1))}
	ts := abi.NewTaskSpace(req.Subtopologies)
	for i, t := range tasks {
		s, p := ts.Locate(t)
		in.tasks[i] = taskRef{partition: p, sub: name(req.Subtopologies[s].ID)}
	}
	for i, p := range procs {
		in.procs[i] = name(req.Processes[p])
	}
	n := len(tasks)
	for _, m := range req.Members {
		for _, o := range m.TaskEndOffsets {
			if validOffset(o, total) {
				in.offs[col[o.Task]] = max(in.offs[col[o.Task]], o.Offset)
			}
		}
	}
	// A process's offset is kept as measured against the task's end offset
	// (abi.Member.OffsetAgainst: a member that reported its own end offset
	// keeps its own lag), so the end offset and it give the lag the
	// assignor computed.
	for i := range req.Members {
		m := &req.Members[i]
		for _, o := range m.TaskOffsets {
			if validOffset(o, total) && int(m.Process) < len(procHas) {
				k := row[m.Process]*n + col[o.Task]
				in.offs[k] = max(in.offs[k], m.OffsetAgainst(o.Task, o.Offset, in.offs[col[o.Task]]))
			}
		}
	}
	return in
}

// validOffset: a reported offset for a task of the request that is not
// "unknown" (negative, or Long.MAX_VALUE for an end offset).
func validOffset(o abi.TaskOffset, total int32) bool {
	return o.Task >= 0 && o.Task < total && o.Offset >= 0 && o.Offset != math.MaxInt64
}

// record is in as served, its names in names.
func (in *inputs) record(names []string) *Inputs {
	r := &Inputs{EndOffsets: map[string]int64{}, Processes: make([]ProcessOffsets, len(in.procs))}
	id := func(t taskRef) string { return fmt.Sprintf("%s_%d", names[t.sub], t.partition) }
	n := len(in.tasks)
	for i, t := range in.tasks {
		if e := in.offs[i]; e >= 0 {
			r.EndOffsets[id(t)] = e
		}
	}
	for j, p := range in.procs {
		po := ProcessOffsets{Process: names[p], TaskOffsets: map[string]int64{}}
		for i, t := range in.tasks {
			if o := in.offs[(j+1)*n+i]; o >= 0 {
				po.TaskOffsets[id(t)] = o
			}
		}
		r.Processes[j] = po
	}
	return r
}
