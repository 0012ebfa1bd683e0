package ha_test

import (
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
)

// TestInvalidInputIsAnError: requests built in-process (never decoded)
// with out-of-range indices make Assign and Probe return an error naming
// the problem instead of panicking.
func TestInvalidInputIsAnError(t *testing.T) {
	valid := func() *abi.AssignRequest {
		return &abi.AssignRequest{GroupID: "g", Processes: []string{"p0", "p1"},
			Configs:       abi.Configs{AcceptableRecoveryLag: 100, NumWarmupReplicas: 1},
			Subtopologies: []abi.Subtopology{{ID: "0", Partitions: 4, Stateful: true}},
			Members: []abi.Member{{ID: "a", Process: 0, Active: []int32{0, 1, 2, 3},
				TaskOffsets: []abi.TaskOffset{{Task: 0, Offset: 5}}, TaskEndOffsets: []abi.TaskOffset{{Task: 0, Offset: 10}}},
				{ID: "b", Process: 1}}}
	}
	if _, err := ha.Assign(valid()); err != nil {
		t.Fatalf("valid request: %v", err)
	}
	cases := []struct {
		name, want string
		mut        func(r *abi.AssignRequest)
	}{
		{"process index too large", "process index 7", func(r *abi.AssignRequest) { r.Members[1].Process = 7 }},
		{"negative process index", "process index -1", func(r *abi.AssignRequest) { r.Members[1].Process = -1 }},
		{"active task out of range", "active: task index 4", func(r *abi.AssignRequest) { r.Members[0].Active = []int32{0, 4} }},
		{"negative standby task", "standby: task index -3", func(r *abi.AssignRequest) { r.Members[1].Standby = []int32{-3} }},
		{"warm-up not ascending", "warmup: task index 1", func(r *abi.AssignRequest) { r.Members[1].Warmup = []int32{2, 1} }},
		{"offset for an unknown task", "task_offsets: task index 99", func(r *abi.AssignRequest) {
			r.Members[1].TaskOffsets = []abi.TaskOffset{{Task: 99, Offset: 1}}
		}},
		{"end offset for a negative task", "task_end_offsets: task index -1", func(r *abi.AssignRequest) {
			r.Members[0].TaskEndOffsets = []abi.TaskOffset{{Task: -1, Offset: 1}}
		}},
		{"negative partition count", "negative partition count", func(r *abi.AssignRequest) { r.Subtopologies[0].Partitions = -2 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := valid()
			c.mut(req)
			_, err := ha.Assign(req)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Assign: got %v, want an error containing %q", err, c.want)
			}
			_, err = ha.Probe(&abi.ProbeRequest{Group: *req, Target: make([]abi.MemberAssignment, len(req.Members))})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Probe: got %v, want an error containing %q", err, c.want)
			}
		})
	}
	t.Run("target warm-up out of range", func(t *testing.T) {
		req := valid()
		_, err := ha.Probe(&abi.ProbeRequest{Group: *req, Target: []abi.MemberAssignment{{}, {Warmup: []int32{12}}}})
		if err == nil || !strings.Contains(err.Error(), "target warmup: task index 12") {
			t.Fatalf("Probe: got %v", err)
		}
	})
}
