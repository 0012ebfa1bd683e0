package abi_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
)

func twoProcReq() *abi.AssignRequest {
	return &abi.AssignRequest{
		Processes:     []string{"A", "B"},
		Subtopologies: []abi.Subtopology{{ID: "0", Partitions: 2, Stateful: true}, {ID: "1", Partitions: 1}},
		Members:       []abi.Member{{ID: "a1", Process: 0}, {ID: "a2", Process: 0}, {ID: "b1", Process: 1}},
	}
}

func TestValidateAssignment(t *testing.T) {
	ok := []abi.MemberAssignment{{Active: []int32{0}}, {Active: []int32{2}}, {Active: []int32{1}, Standby: []int32{0}}}
	if err := abi.ValidateAssignment(twoProcReq(), &abi.AssignResponse{Members: ok}); err != nil {
		t.Fatalf("valid assignment rejected: %v", err)
	}
	bad := map[string]struct {
		ms   []abi.MemberAssignment
		want string
	}{
		"unknown member": {append(ok, abi.MemberAssignment{}), "4 member entries for 3 members"},
		"unknown task":   {[]abi.MemberAssignment{{Active: []int32{0, 3}}, {Active: []int32{2}}, {Active: []int32{1}}}, "unknown active task 3"},
		"task twice":     {[]abi.MemberAssignment{{Active: []int32{0}}, {Active: []int32{0, 2}}, {Active: []int32{1}}}, "task 0 is active on both"},
		"missing task":   {[]abi.MemberAssignment{{Active: []int32{0}}, {}, {Active: []int32{1}}}, "task 2 (subtopology \"1\" partition 0) is not active"},
		"standby on active process": {[]abi.MemberAssignment{{Active: []int32{0}}, {Active: []int32{2}, Standby: []int32{0}}, {Active: []int32{1}}},
			"process \"A\" holds task 0 more than once"},
		"stateless standby": {[]abi.MemberAssignment{{Active: []int32{0}}, {Active: []int32{2}}, {Active: []int32{1}, Standby: []int32{2}}},
			"standby task 2 of a stateless"},
	}
	for name, c := range bad {
		err := abi.ValidateAssignment(twoProcReq(), &abi.AssignResponse{Members: c.ms})
		if !errors.Is(err, abi.ErrInvalidAssignment) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", name, err, c.want)
		}
	}
}

// referenceValid is SPEC.md section 6 written the plain way (a set of
// holding processes per task), the oracle for ValidateAssignment.
func referenceValid(req *abi.AssignRequest, resp *abi.AssignResponse) bool {
	if len(resp.Members) != len(req.Members) {
		return false
	}
	space := abi.NewTaskSpace(req.Subtopologies)
	total := space.Total()
	active := make(map[int32]int)
	holders := make(map[[2]int32]bool) // (task, process)
	for i, ma := range resp.Members {
		proc := req.Members[i].Process
		for kind, set := range [3][]int32{ma.Active, ma.Standby, ma.Warmup} {
			for j, t := range set {
				if t < 0 || t >= total || j > 0 && t <= set[j-1] {
					return false
				}
				if s, _ := space.Locate(t); kind > 0 && !req.Subtopologies[s].Stateful {
					return false
				}
				if kind == 0 {
					active[t]++
				}
				if holders[[2]int32{t, proc}] {
					return false
				}
				holders[[2]int32{t, proc}] = true
			}
		}
	}
	for t := int32(0); t < total; t++ {
		if active[t] != 1 {
			return false
		}
	}
	return true
}

// TestValidateAssignmentMatchesReference: on valid assignments of generated
// groups and on random damage to them (a task moved, copied or dropped,
// a set reordered), ValidateAssignment accepts exactly what the plain
// reference accepts, including processes whose members are not adjacent.
func TestValidateAssignmentMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	verdicts := map[bool]int{}
	for c := range 300 {
		req := abitest.Generate(abitest.Shape{Members: 2 + c%9, Processes: 1 + c%5, Subtopologies: 1 + c%3,
			Partitions: 1 + c%7, Standbys: c % 2, History: 100, RandomIDs: true, Seed: uint64(c)})
		resp := &abi.AssignResponse{Members: make([]abi.MemberAssignment, len(req.Members))}
		for i, m := range req.Members {
			resp.Members[i] = abi.MemberAssignment{Active: slices.Clone(m.Active), Standby: slices.Clone(m.Standby)}
		}
		for range rng.IntN(3) {
			ma := &resp.Members[rng.IntN(len(resp.Members))]
			sets := []*[]int32{&ma.Active, &ma.Standby, &ma.Warmup}
			set := sets[rng.IntN(3)]
			switch total := req.NumTasks(); rng.IntN(4) {
			case 0: // add a task (maybe a duplicate placement, maybe unknown)
				*set = append(*set, rng.Int32N(total+1))
				slices.Sort(*set)
				*set = slices.Compact(*set)
			case 1: // drop one
				if len(*set) > 0 {
					*set = slices.Delete(*set, 0, 1)
				}
			case 2: // break the order
				if len(*set) > 1 {
					(*set)[0], (*set)[1] = (*set)[1], (*set)[0]
				}
			case 3: // negative index
				*set = append([]int32{-1}, *set...)
			}
		}
		want := referenceValid(req, resp)
		verdicts[want]++
		err := abi.ValidateAssignment(req, resp)
		if (err == nil) != want {
			t.Fatalf("case %d: ValidateAssignment = %v, reference valid = %v", c, err, want)
		}
		if err != nil && !errors.Is(err, abi.ErrInvalidAssignment) {
			t.Fatalf("case %d: %v does not wrap ErrInvalidAssignment", c, err)
		}
	}
	if verdicts[true] < 30 || verdicts[false] < 30 {
		t.Fatalf("too few cases of one verdict to compare: %v", verdicts)
	}
}
