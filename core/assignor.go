package core

import (
	"fmt"

	"github.com/coordhost/coordhost/core/records"
)

// The assignor contract. A target assignment is computed outside core: core
// emits an AssignorRun (an effect), the host runs the named assignor (a wasm
// plugin, or a native build of it) and hands the result back through
// the AssignorResult input to Coordinator.Step, possibly much later. The types are plain data
// with dense indices so a host can translate them to the plugin ABI without
// maps: tasks name their subtopology by its index in Input.Subtopologies,
// and the result lists members in the order of Input.Members.

// AssignorRun asks the host to compute a target assignment for Group at
// group epoch Epoch with the assignor named Assignor.
type AssignorRun struct {
	Group    string
	Epoch    int32
	Assignor string
	Input    AssignInput
	// Probe marks a probing run at the current group epoch (docs/WARMUPS.md
	// §2): its result is applied only if it changes the target.
	Probe bool
	// snapshot, for a Coordinator that defers inputs, is what BuildInput
	// builds Input from; nil once Input is built.
	snapshot *assignSnapshot
}

// BuildInput builds Input, if it is still to be built: a Coordinator
// after DeferAssignorInputs hands runs out with their Input empty and
// the group's state it is built from, so that the host builds it on
// another goroutine than the Coordinator's, off the group's partition.
// Call it once a run, before reading Input; it reads nothing the
// Coordinator changes afterwards.
func (r *AssignorRun) BuildInput() {
	if r.snapshot != nil {
		r.Input, r.snapshot = r.snapshot.build(), nil
	}
}

// AssignInput is everything an assignor may look at.
type AssignInput struct {
	// Subtopologies of the configured topology, sorted by ID.
	Subtopologies []AssignSubtopology
	// Members of the group, sorted by MemberID.
	Members []AssignMember
	Configs AssignConfigs
}

// AssignSubtopology describes one subtopology: its tasks are partitions
// 0..NumTasks-1; Stateful subtopologies have changelogs (and get standbys).
type AssignSubtopology struct {
	ID       string
	NumTasks int32
	Stateful bool
}

// AssignMember is one member as the assignor sees it: identity, placement,
// the tasks it currently owns (not its previous target) and the changelog
// offsets it last reported. Task lists are sorted. TaskEndOffsets holds,
// for the tasks in TaskOffsets, the end offsets the member reported with
// them (none where it reported none), and for the others the group's
// known end offsets (docs/WARMUPS.md §2.1).
type AssignMember struct {
	MemberID       string
	InstanceID     string // "" when not static
	RackID         string // "" when unknown
	ProcessID      string
	ClientTags     []records.KeyValue
	Active         []TaskRef
	Standby        []TaskRef
	Warmup         []TaskRef
	TaskOffsets    []TaskOffset
	TaskEndOffsets []TaskOffset
}

// TaskRef names a task: partition Partition of the subtopology at index
// Subtopology of AssignInput.Subtopologies.
type TaskRef struct {
	Subtopology int32
	Partition   int32
}

// TaskOffset is a cumulative changelog offset (or end offset) of a task.
type TaskOffset struct {
	Task   TaskRef
	Offset int64
}

// AssignConfigs are the group settings an assignor honours.
type AssignConfigs struct {
	NumStandbyReplicas      int32
	NumWarmupReplicas       int32
	AcceptableRecoveryLag   int64
	RackAwareAssignmentTags []string
	// ProbingIntervalMs is the probing interval (Kafka Streams'
	// probing.rebalance.interval.ms).
	ProbingIntervalMs int64
	// All is every setting above by Kafka Streams' assignment config name,
	// keys ascending: what an assignor plugin reads from its request's
	// configs (the probing interval only when > 0).
	All []records.KeyValue
}

// assignConfigs are the settings of cfg an assignor honours.
func assignConfigs(cfg StreamsConfig) AssignConfigs {
	a := AssignConfigs{NumStandbyReplicas: cfg.NumStandbyReplicas, NumWarmupReplicas: cfg.NumWarmupReplicas,
		AcceptableRecoveryLag: cfg.AcceptableRecoveryLag, RackAwareAssignmentTags: nonNil(cfg.RackAwareAssignmentTags),
		ProbingIntervalMs: cfg.ProbingIntervalMs}
	a.All = []records.KeyValue{
		{Key: "acceptable.recovery.lag", Value: fmt.Sprint(a.AcceptableRecoveryLag)},
		{Key: "num.standby.replicas", Value: fmt.Sprint(a.NumStandbyReplicas)},
		{Key: "num.warmup.replicas", Value: fmt.Sprint(a.NumWarmupReplicas)},
	}
	if a.ProbingIntervalMs > 0 { // keys stay ascending: it sorts last
		a.All = append(a.All, records.KeyValue{Key: "probing.rebalance.interval.ms", Value: fmt.Sprint(a.ProbingIntervalMs)})
	}
	return a
}

// AssignResult is an assignor's output: one entry per input member, in the
// order of AssignInput.Members. Warm-up tasks are allowed (a deliberate
// difference from Kafka 4.4, see docs/RATIONALE.md).
type AssignResult struct {
	Members []MemberTasks
	// NextProbeMs, when > 0, asks for a probing run that many ms after the
	// target is computed (the ABI's next_probe_ms; <= 0: no hint).
	NextProbeMs int64
}

// MemberTasks is the target of one member.
type MemberTasks struct {
	Active  []TaskRef
	Standby []TaskRef
	Warmup  []TaskRef
}
