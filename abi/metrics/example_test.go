package metrics_test

import (
	"fmt"
	"time"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/metrics"
)

// A stateful task moves from process A to process B, which reported state
// 20 records behind the changelog's end: within the acceptable recovery
// lag, so the hand-over is warm.
func ExampleMeasure() {
	req := &abi.AssignRequest{
		Configs:       abi.Configs{AcceptableRecoveryLag: 100},
		Processes:     []string{"A", "B"},
		Subtopologies: []abi.Subtopology{{ID: "0", Partitions: 2, Stateful: true}},
		Members: []abi.Member{
			{ID: "a", Process: 0, Active: []int32{0, 1}, TaskEndOffsets: []abi.TaskOffset{{Task: 1, Offset: 500}}},
			{ID: "b", Process: 1, TaskOffsets: []abi.TaskOffset{{Task: 1, Offset: 480}}},
		},
	}
	resp := &abi.AssignResponse{Members: []abi.MemberAssignment{{Active: []int32{0}}, {Active: []int32{1}}}}
	r, err := metrics.Measure(req, resp, metrics.Options{ComputeTime: 3 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	fmt.Printf("active per member %d..%d, kept %d, moved %d, warm %d, cold %d, in %v\n",
		r.Balance.ActivePerMember.Min, r.Balance.ActivePerMember.Max,
		r.Movement.Kept, r.Movement.Moved, r.Movement.Warm, r.Movement.Cold, r.ComputeTime)
	// Output: active per member 1..1, kept 1, moved 1, warm 1, cold 0, in 3ms
}
