package core

import "sort"

// ReferenceAssign is a small, deterministic assignor for tests and as a
// last-resort fallback; production assignors are the wasm plugins. It keeps
// each active task with its current owner while that member is under its
// quota (ceil(tasks/members)), then gives the rest round-robin to the least
// loaded members (ties by member order), and places NumStandbyReplicas
// standbys of stateful tasks on other processes, least loaded first. It
// never produces warm-ups.
func ReferenceAssign(in AssignInput) AssignResult {
	n := len(in.Members)
	out := AssignResult{Members: make([]MemberTasks, n)}
	for i := range out.Members {
		out.Members[i] = MemberTasks{Active: []TaskRef{}, Standby: []TaskRef{}, Warmup: []TaskRef{}}
	}
	if n == 0 {
		return out
	}
	var tasks []TaskRef
	for s, st := range in.Subtopologies {
		for p := int32(0); p < st.NumTasks; p++ {
			tasks = append(tasks, TaskRef{int32(s), p})
		}
	}
	quota := (len(tasks) + n - 1) / n
	owner := map[TaskRef]int{}
	for i, m := range in.Members {
		for _, t := range m.Active {
			if _, dup := owner[t]; !dup {
				owner[t] = i
			}
		}
	}
	load := make([]int, n)
	var rest []TaskRef
	for _, t := range tasks {
		if i, ok := owner[t]; ok && load[i] < quota {
			out.Members[i].Active = append(out.Members[i].Active, t)
			load[i]++
			continue
		}
		rest = append(rest, t)
	}
	for _, t := range rest {
		best := 0
		for i := 1; i < n; i++ {
			if load[i] < load[best] {
				best = i
			}
		}
		out.Members[best].Active = append(out.Members[best].Active, t)
		load[best]++
	}
	referenceStandbys(in, &out, load)
	for i := range out.Members {
		sortRefs(out.Members[i].Active)
		sortRefs(out.Members[i].Standby)
	}
	return out
}

func referenceStandbys(in AssignInput, out *AssignResult, load []int) {
	if in.Configs.NumStandbyReplicas <= 0 {
		return
	}
	activeProc := map[TaskRef]string{}
	for i, m := range out.Members {
		for _, t := range m.Active {
			activeProc[t] = in.Members[i].ProcessID
		}
	}
	for s, st := range in.Subtopologies {
		if !st.Stateful {
			continue
		}
		for p := int32(0); p < st.NumTasks; p++ {
			t := TaskRef{int32(s), p}
			used := map[string]bool{activeProc[t]: true}
			for r := int32(0); r < in.Configs.NumStandbyReplicas; r++ {
				best := -1
				for i, m := range in.Members {
					if used[m.ProcessID] {
						continue
					}
					if best < 0 || load[i] < load[best] {
						best = i
					}
				}
				if best < 0 {
					break
				}
				used[in.Members[best].ProcessID] = true
				out.Members[best].Standby = append(out.Members[best].Standby, t)
				load[best]++
			}
		}
	}
}

func sortRefs(r []TaskRef) {
	sort.Slice(r, func(i, j int) bool {
		if r[i].Subtopology != r[j].Subtopology {
			return r[i].Subtopology < r[j].Subtopology
		}
		return r[i].Partition < r[j].Partition
	})
}
