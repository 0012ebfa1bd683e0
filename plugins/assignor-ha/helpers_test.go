package ha_test

import (
	"fmt"
	"math/rand/v2"
	"reflect"

	"github.com/coordhost/coordhost/abi"
)

// laggingGroup is a scale-out in progress: process 0's member k runs the
// tasks t with t%2 == k (with one member, odd tasks have no owner); its
// first member reports end offsets of the stateful tasks it does not run,
// except every fifth (the others stay unknown); the other processes hold
// partial state; processes carry zone tags.
func laggingGroup(seed uint64) *abi.AssignRequest {
	rng := rand.New(rand.NewPCG(seed, 7))
	procs := 3 + rng.IntN(4)
	req := &abi.AssignRequest{GroupID: fmt.Sprint("lag-", seed), Seed: seed}
	req.Configs = abi.Configs{NumStandbyReplicas: int32(rng.IntN(2)), NumWarmupReplicas: 2, AcceptableRecoveryLag: 100}
	if seed%2 == 1 {
		req.Configs.RackAwareAssignmentTags = []string{"zone"}
	}
	req.Subtopologies = []abi.Subtopology{{ID: "0", Partitions: 6, Stateful: true}, {ID: "1", Partitions: 4}, {ID: "2", Partitions: 5, Stateful: true}}
	total := req.NumTasks()
	stateful := []bool{}
	for _, s := range req.Subtopologies {
		for p := int32(0); p < s.Partitions; p++ {
			stateful = append(stateful, s.Stateful)
		}
	}
	for p := 0; p < procs; p++ {
		req.Processes = append(req.Processes, fmt.Sprintf("proc-%02d", p))
		for k := 0; k < 1+rng.IntN(2); k++ {
			m := abi.Member{ID: fmt.Sprintf("m-%02d-%d", p, k), Process: int32(p),
				ClientTags: []abi.KV{{Key: "zone", Value: fmt.Sprint("z", p%3)}}}
			for t := int32(0); t < total; t++ {
				switch {
				case p == 0 && int(t)%2 == k:
					m.Active = append(m.Active, t)
				case p == 0 && k == 0 && stateful[t] && t%5 != 3:
					m.TaskEndOffsets = append(m.TaskEndOffsets, abi.TaskOffset{Task: t, Offset: 1000})
				case p > 0 && stateful[t] && rng.IntN(3) == 0:
					m.TaskOffsets = append(m.TaskOffsets, abi.TaskOffset{Task: t, Offset: int64(800 + rng.IntN(200))})
				}
			}
			req.Members = append(req.Members, m)
		}
	}
	return req // lists were built in task order, as the ABI wants
}

func diffResponses(a, b *abi.AssignResponse) string {
	if len(a.Members) != len(b.Members) {
		return fmt.Sprintf("%d vs %d members", len(a.Members), len(b.Members))
	}
	for i := range a.Members {
		x, y := norm(a.Members[i]), norm(b.Members[i])
		if !reflect.DeepEqual(x, y) {
			return fmt.Sprintf("member %d: %+v vs %+v", i, x, y)
		}
	}
	if a.NextProbeMs != b.NextProbeMs {
		return fmt.Sprintf("next probe %d vs %d", a.NextProbeMs, b.NextProbeMs)
	}
	return ""
}

func norm(m abi.MemberAssignment) abi.MemberAssignment {
	nz := func(s []int32) []int32 {
		if len(s) == 0 {
			return nil
		}
		return s
	}
	return abi.MemberAssignment{Active: nz(m.Active), Standby: nz(m.Standby), Warmup: nz(m.Warmup)}
}
