package abi

// KV is one key/value pair (client tags, configs), sorted by key on the wire.
type KV struct {
	Key   string
	Value string
}

// Configs are the assignment configs of a group.
type Configs struct {
	NumStandbyReplicas      int32
	NumWarmupReplicas       int32
	AcceptableRecoveryLag   int64
	RackAwareAssignmentTags []string
	// All holds every assignment config as text, keys strictly ascending.
	All []KV
}

// Subtopology is one entry of the subtopology name table.
type Subtopology struct {
	ID         string
	Partitions int32
	Stateful   bool
}

// TaskOffset is a reported offset sum for one task index.
type TaskOffset struct {
	Task   int32
	Offset int64
}

// Member is one group member and its current assignment. Task sets hold
// task indices in strictly ascending order.
type Member struct {
	ID         string
	InstanceID string
	Process    int32 // index into AssignRequest.Processes
	Rack       string
	ClientTags []KV
	Active     []int32
	Standby    []int32
	Warmup     []int32
	// TaskOffsets and TaskEndOffsets are ascending by task. A member's
	// offset is measured against its own TaskEndOffsets entry for the
	// task (reported with it), else against the task's end offset: the
	// largest over members (SPEC.md 5.1).
	TaskOffsets    []TaskOffset
	TaskEndOffsets []TaskOffset
}

// AssignRequest is the input of the assign operation (SPEC.md 5.1).
type AssignRequest struct {
	GroupID       string
	GroupEpoch    int32
	Seed          uint64
	Configs       Configs
	Processes     []string      // strictly ascending
	Subtopologies []Subtopology // strictly ascending by ID
	Members       []Member
}

// MemberAssignment is the target assignment of one member.
type MemberAssignment struct {
	Active  []int32
	Standby []int32
	Warmup  []int32
}

// AssignResponse is the output of the assign operation (SPEC.md 5.2):
// Members[i] is the assignment of request member i.
type AssignResponse struct {
	Members     []MemberAssignment
	NextProbeMs int64 // -1: no hint
}

// ProbeRequest is the input of the probe operation (SPEC.md 5.3).
type ProbeRequest struct {
	NowMs        int64
	LastAssignMs int64
	Group        AssignRequest
	Target       []MemberAssignment
}

// ProbeResponse is the output of the probe operation (SPEC.md 5.4).
type ProbeResponse struct {
	Rebalance   bool
	NextProbeMs int64 // -1: host default
}

// NumTasks returns the total task count T of the request's subtopologies.
func (r *AssignRequest) NumTasks() int32 {
	var n int32
	for _, s := range r.Subtopologies {
		n += s.Partitions
	}
	return n
}

// TaskSpace maps between dense task indices and (subtopology, partition).
type TaskSpace struct {
	base []int32 // base[s] = first task index of subtopology s; base[len] = T
}

// NewTaskSpace builds the task numbering of SPEC.md 4.1 for subs.
func NewTaskSpace(subs []Subtopology) TaskSpace {
	base := make([]int32, len(subs)+1)
	for i, s := range subs {
		base[i+1] = base[i] + s.Partitions
	}
	return TaskSpace{base: base}
}

// Total is the number of tasks T.
func (ts TaskSpace) Total() int32 { return ts.base[len(ts.base)-1] }

// Task returns the index of partition p of subtopology s.
func (ts TaskSpace) Task(s, p int32) int32 { return ts.base[s] + p }

// Base returns the first task index of subtopology s.
func (ts TaskSpace) Base(s int32) int32 { return ts.base[s] }

// Locate returns the subtopology and partition of task t, which must be in
// [0, Total()). Empty subtopologies are skipped: the last subtopology whose
// base is <= t owns it.
func (ts TaskSpace) Locate(t int32) (sub, partition int32) {
	lo, hi := 0, len(ts.base)-2
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if ts.base[mid] <= t {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return int32(lo), t - ts.base[lo]
}
