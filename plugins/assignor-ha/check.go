package ha

import (
	"fmt"

	"github.com/coordhost/coordhost/abi"
)

// checkRequest rejects what the ABI decoder rejects, for requests built
// in-process (a host's native build never decodes bytes): a process index
// outside the processes table, a negative partition count, and task
// indices outside [0, T) or not strictly ascending. The assignor indexes
// arrays with these values, so they must never reach it unchecked.
func checkRequest(req *abi.AssignRequest) error {
	for _, s := range req.Subtopologies {
		if s.Partitions < 0 {
			return fmt.Errorf("subtopology %q: negative partition count %d", s.ID, s.Partitions)
		}
	}
	total, procs := req.NumTasks(), int32(len(req.Processes))
	for i := range req.Members {
		m := &req.Members[i]
		if m.Process < 0 || m.Process >= procs {
			return fmt.Errorf("member %q: process index %d outside [0,%d)", m.ID, m.Process, procs)
		}
		for _, set := range []struct {
			name  string
			tasks []int32
		}{{"active", m.Active}, {"standby", m.Standby}, {"warmup", m.Warmup}} {
			if err := checkTasks(m.ID, set.name, set.tasks, total); err != nil {
				return err
			}
		}
		for _, os := range []struct {
			name string
			offs []abi.TaskOffset
		}{{"task_offsets", m.TaskOffsets}, {"task_end_offsets", m.TaskEndOffsets}} {
			prev := int32(-1)
			for _, o := range os.offs {
				if o.Task <= prev || o.Task >= total {
					return fmt.Errorf("member %q: %s: task index %d out of range [0,%d) or not ascending", m.ID, os.name, o.Task, total)
				}
				prev = o.Task
			}
		}
	}
	return nil
}

// checkTasks checks one task set of member against the task count.
func checkTasks(member, name string, tasks []int32, total int32) error {
	prev := int32(-1)
	for _, t := range tasks {
		if t <= prev || t >= total {
			return fmt.Errorf("member %q: %s: task index %d out of range [0,%d) or not ascending", member, name, t, total)
		}
		prev = t
	}
	return nil
}

// checkProbeRequest is checkRequest for a probing request, plus its target.
func checkProbeRequest(req *abi.ProbeRequest) error {
	if err := checkRequest(&req.Group); err != nil {
		return err
	}
	if len(req.Target) != len(req.Group.Members) {
		return fmt.Errorf("probe: target has %d entries for %d members", len(req.Target), len(req.Group.Members))
	}
	total := req.Group.NumTasks()
	for i, t := range req.Target {
		id := req.Group.Members[i].ID
		for _, set := range []struct {
			name  string
			tasks []int32
		}{{"target active", t.Active}, {"target standby", t.Standby}, {"target warmup", t.Warmup}} {
			if err := checkTasks(id, set.name, set.tasks, total); err != nil {
				return err
			}
		}
	}
	return nil
}
