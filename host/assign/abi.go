package assign

// The ABI translation of assignor runs: core's AssignorRun to the plugin
// ABI's AssignRequest and the AssignResponse back to core's AssignResult.
// It is generic: the assignment configs pass through by name, as core
// lists them, so the host knows no plugin's config keys.

import (
	"fmt"
	"hash/fnv"
	"sort"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/core"
)

// ToABI translates core's assignor input to the plugin ABI request.
func ToABI(run core.AssignorRun) (*abi.AssignRequest, abi.TaskSpace) {
	in := run.Input
	req := &abi.AssignRequest{GroupID: run.Group, GroupEpoch: run.Epoch, Seed: seedOf(run.Group, run.Epoch)}
	req.Configs = abi.Configs{
		NumStandbyReplicas: in.Configs.NumStandbyReplicas, NumWarmupReplicas: in.Configs.NumWarmupReplicas,
		AcceptableRecoveryLag: in.Configs.AcceptableRecoveryLag, RackAwareAssignmentTags: in.Configs.RackAwareAssignmentTags,
		All: make([]abi.KV, 0, len(in.Configs.All)),
	}
	for _, kv := range in.Configs.All {
		req.Configs.All = append(req.Configs.All, abi.KV{Key: kv.Key, Value: kv.Value})
	}
	for _, s := range in.Subtopologies {
		req.Subtopologies = append(req.Subtopologies, abi.Subtopology{ID: s.ID, Partitions: s.NumTasks, Stateful: s.Stateful})
	}
	ts := abi.NewTaskSpace(req.Subtopologies)
	procs := map[string]bool{}
	for _, m := range in.Members {
		procs[m.ProcessID] = true
	}
	for p := range procs {
		req.Processes = append(req.Processes, p)
	}
	sort.Strings(req.Processes)
	procIdx := make(map[string]int32, len(req.Processes))
	for i, p := range req.Processes {
		procIdx[p] = int32(i)
	}
	tasks := func(refs []core.TaskRef) []int32 {
		out := make([]int32, 0, len(refs))
		for _, r := range refs {
			out = append(out, ts.Task(r.Subtopology, r.Partition))
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return out
	}
	offsets := func(os []core.TaskOffset) []abi.TaskOffset {
		out := make([]abi.TaskOffset, 0, len(os))
		for _, o := range os {
			out = append(out, abi.TaskOffset{Task: ts.Task(o.Task.Subtopology, o.Task.Partition), Offset: o.Offset})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Task < out[j].Task })
		return out
	}
	for _, m := range in.Members {
		am := abi.Member{ID: m.MemberID, InstanceID: m.InstanceID, Process: procIdx[m.ProcessID], Rack: m.RackID,
			Active: tasks(m.Active), Standby: tasks(m.Standby), Warmup: tasks(m.Warmup),
			TaskOffsets: offsets(m.TaskOffsets), TaskEndOffsets: offsets(m.TaskEndOffsets)}
		for _, kv := range m.ClientTags {
			am.ClientTags = append(am.ClientTags, abi.KV{Key: kv.Key, Value: kv.Value})
		}
		sort.Slice(am.ClientTags, func(i, j int) bool { return am.ClientTags[i].Key < am.ClientTags[j].Key })
		req.Members = append(req.Members, am)
	}
	return req, ts
}

// FromABI translates an ABI response back to core's result.
func FromABI(ts abi.TaskSpace, resp *abi.AssignResponse, members int) (core.AssignResult, error) {
	if len(resp.Members) != members {
		return core.AssignResult{}, fmt.Errorf("assignor answered %d members, the group has %d", len(resp.Members), members)
	}
	refs := func(idx []int32) ([]core.TaskRef, error) {
		out := make([]core.TaskRef, 0, len(idx))
		for _, t := range idx {
			if t < 0 || t >= ts.Total() {
				return nil, fmt.Errorf("task index %d out of range [0,%d)", t, ts.Total())
			}
			s, p := ts.Locate(t)
			out = append(out, core.TaskRef{Subtopology: s, Partition: p})
		}
		return out, nil
	}
	var res core.AssignResult
	for _, m := range resp.Members {
		var mt core.MemberTasks
		var err error
		if mt.Active, err = refs(m.Active); err != nil {
			return res, err
		}
		if mt.Standby, err = refs(m.Standby); err != nil {
			return res, err
		}
		if mt.Warmup, err = refs(m.Warmup); err != nil {
			return res, err
		}
		res.Members = append(res.Members, mt)
	}
	// The assignor's probing hint (-1: none) reaches core, which probes
	// that long after the target (a positive hint only).
	res.NextProbeMs = resp.NextProbeMs
	return res, nil
}

func seedOf(group string, epoch int32) uint64 {
	h := fnv.New64a()
	h.Write([]byte(group))
	return h.Sum64() ^ uint64(epoch)
}
