package experiment

import (
	"math"
	"reflect"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/metrics"
	"github.com/coordhost/coordhost/core"
)

// TestInputsRecorded: a history entry keeps the lag input the assignor
// was handed: per task the largest end offset any member carried, per
// process the largest offset its members reported; "unknown" offsets
// (negative, Long.MAX_VALUE ends) are left out, as the assignors leave
// them out; an input beyond maxInputValues is not kept.
func TestInputsRecorded(t *testing.T) {
	req := &abi.AssignRequest{GroupID: "g", Processes: []string{"p0", "p1", "p2"},
		Subtopologies: []abi.Subtopology{{ID: "0", Partitions: 2}, {ID: "1", Partitions: 3, Stateful: true}},
		Members: []abi.Member{
			{ID: "a", Process: 0, Active: []int32{2},
				TaskOffsets:    []abi.TaskOffset{{Task: 3, Offset: 60}, {Task: 4, Offset: -1}},
				TaskEndOffsets: []abi.TaskOffset{{Task: 2, Offset: 100}, {Task: 3, Offset: 62}, {Task: 4, Offset: math.MaxInt64}}},
			{ID: "b", Process: 0, TaskOffsets: []abi.TaskOffset{{Task: 3, Offset: 70}},
				TaskEndOffsets: []abi.TaskOffset{{Task: 3, Offset: 95}}},
			{ID: "c", Process: 2, TaskOffsets: []abi.TaskOffset{{Task: 2, Offset: 100}, {Task: 3, Offset: 10}}},
			{ID: "d", Process: 1}, // reported nothing
		}}
	resp := &abi.AssignResponse{Members: make([]abi.MemberAssignment, 4)}
	resp.Members[0].Active = []int32{0, 1, 2, 3, 4}
	rep, err := metrics.Measure(req, resp, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tg := newTarget(core.AssignorRun{Group: "g", Epoch: 1, Assignor: "ha"}, req, resp, "native", rep, fixedClock()())
	if tg.e.inputs != nil {
		t.Fatal("a target keeps its inputs only when asked to")
	}
	tg.keepInputs(req)
	rec := tg.e.record()
	want := &Inputs{EndOffsets: map[string]int64{"1_0": 100, "1_1": 95},
		Processes: []ProcessOffsets{
			// a's 60 against its own end offset 62 (lag 2) beats b's 70
			// against 95 (lag 25): kept as 95 - 2.
			{Process: "p0", TaskOffsets: map[string]int64{"1_1": 93}},
			{Process: "p2", TaskOffsets: map[string]int64{"1_0": 100, "1_1": 10}},
		}}
	if !reflect.DeepEqual(rec.Inputs, want) {
		t.Fatalf("inputs %+v, want %+v", rec.Inputs, want)
	}

	// Nothing reported: no inputs.
	bare := &abi.AssignRequest{GroupID: "g", Processes: []string{"p0"},
		Subtopologies: []abi.Subtopology{{ID: "0", Partitions: 2, Stateful: true}}, Members: []abi.Member{{ID: "a"}}}
	if in := newInputs(bare, func(string) uint16 { return 0 }); in != nil {
		t.Fatalf("inputs of a request without offsets: %+v", in)
	}
	// Too large to keep: tasks * (processes + 1) beyond maxInputValues.
	big := &abi.AssignRequest{GroupID: "g", Subtopologies: []abi.Subtopology{{ID: "0", Partitions: 64, Stateful: true}}}
	for p := range maxInputValues / 64 {
		big.Processes = append(big.Processes, string(rune('a'+p%26))+string(rune('a'+p/26)))
		m := abi.Member{ID: big.Processes[p], Process: int32(p)}
		for task := range int32(64) {
			m.TaskOffsets = append(m.TaskOffsets, abi.TaskOffset{Task: task, Offset: 1})
		}
		big.Members = append(big.Members, m)
	}
	if in := newInputs(big, func(string) uint16 { return 0 }); in != nil {
		t.Fatalf("kept an input of %d values, beyond %d", 64*(len(big.Processes)+1), maxInputValues)
	}
	big.Members = big.Members[1:]
	if in := newInputs(big, func(string) uint16 { return 0 }); in == nil || len(in.offs) != 64*len(big.Members)+64 {
		t.Fatalf("an input of %d values, within the bound, not kept", 64*len(big.Members)+64)
	}
}
