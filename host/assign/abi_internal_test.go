package assign

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/core/records"
)

// TestToABIPassesConfigsByName: the ABI translation copies core's
// assignment configs by name, whatever their keys, in core's order.
func TestToABIPassesConfigsByName(t *testing.T) {
	run := core.AssignorRun{Group: "g", Epoch: 3, Input: core.AssignInput{Configs: core.AssignConfigs{
		NumStandbyReplicas: 1, All: []records.KeyValue{{Key: "a.plugin.key", Value: "x"}, {Key: "num.standby.replicas", Value: "1"}}}}}
	req, _ := ToABI(run)
	want := []abi.KV{{Key: "a.plugin.key", Value: "x"}, {Key: "num.standby.replicas", Value: "1"}}
	if !reflect.DeepEqual(req.Configs.All, want) || req.Configs.NumStandbyReplicas != 1 {
		t.Fatalf("configs %+v, want All %v", req.Configs, want)
	}
}

// randomRun builds a core assignor run with several subtopologies,
// members sharing processes and owned tasks and offsets in random order.
func randomRun(r *rand.Rand) core.AssignorRun {
	var in core.AssignInput
	nsub := 1 + r.IntN(4)
	for s := 0; s < nsub; s++ {
		in.Subtopologies = append(in.Subtopologies, core.AssignSubtopology{ID: fmt.Sprintf("s%d", s), NumTasks: int32(r.IntN(6)), Stateful: r.IntN(2) == 0})
	}
	nm := 1 + r.IntN(6)
	for m := 0; m < nm; m++ {
		am := core.AssignMember{MemberID: fmt.Sprintf("m%02d", m), ProcessID: fmt.Sprintf("p%d", r.IntN(3)),
			ClientTags: []records.KeyValue{{Key: "zone", Value: "a"}, {Key: "az", Value: "b"}}}
		for s, sub := range in.Subtopologies {
			for p := int32(0); p < sub.NumTasks; p++ {
				ref := core.TaskRef{Subtopology: int32(s), Partition: p}
				switch r.IntN(6) {
				case 0:
					am.Active = append([]core.TaskRef{ref}, am.Active...) // reversed: the host must sort
				case 1:
					am.Standby = append(am.Standby, ref)
				}
				if r.IntN(3) == 0 {
					am.TaskOffsets = append([]core.TaskOffset{{Task: ref, Offset: int64(r.IntN(100))}}, am.TaskOffsets...)
				}
			}
		}
		in.Members = append(in.Members, am)
	}
	return core.AssignorRun{Group: "g", Epoch: 3, Assignor: "sticky", Input: in}
}

// TestABITranslation: core's assignor input translates to a valid ABI
// request (it encodes and decodes under the ABI's ordering rules), owned
// tasks map to the right dense indices and back, and the native sticky
// assignor's answer translates back to a result core accepts (every task
// active exactly once).
func TestABITranslation(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		run := randomRun(r)
		req, ts := ToABI(run)
		b, err := abi.AppendAssignRequest(nil, req)
		if err != nil {
			t.Fatalf("case %d: request breaks the ABI rules: %v", i, err)
		}
		var back abi.AssignRequest
		if err := abi.DecodeAssignRequest(b, &back); err != nil {
			t.Fatalf("case %d: decode: %v", i, err)
		}
		echo := &abi.AssignResponse{NextProbeMs: -1}
		for _, m := range req.Members {
			echo.Members = append(echo.Members, abi.MemberAssignment{Active: m.Active, Standby: m.Standby})
		}
		res, err := FromABI(ts, echo, len(run.Input.Members))
		if err != nil {
			t.Fatal(err)
		}
		for j, m := range run.Input.Members {
			if !sameRefs(m.Active, res.Members[j].Active) || !sameRefs(m.Standby, res.Members[j].Standby) {
				t.Fatalf("case %d member %d: owned %v/%v came back as %v/%v", i, j, m.Active, m.Standby, res.Members[j].Active, res.Members[j].Standby)
			}
			if req.Processes[req.Members[j].Process] != m.ProcessID {
				t.Fatalf("case %d member %d: process %q became %q", i, j, m.ProcessID, req.Processes[req.Members[j].Process])
			}
		}
		resp, err := Builtins["sticky"].Native(req)
		if err != nil {
			t.Fatalf("case %d: sticky: %v", i, err)
		}
		out, err := FromABI(ts, resp, len(run.Input.Members))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[core.TaskRef]int{}
		for _, m := range out.Members {
			for _, ref := range m.Active {
				seen[ref]++
			}
		}
		if int32(len(seen)) != ts.Total() {
			t.Fatalf("case %d: %d of %d tasks active", i, len(seen), ts.Total())
		}
		for ref, n := range seen {
			if n != 1 {
				t.Fatalf("case %d: task %v active %d times", i, ref, n)
			}
		}
	}
	if _, err := FromABI(abi.NewTaskSpace([]abi.Subtopology{{ID: "a", Partitions: 2}}), &abi.AssignResponse{Members: []abi.MemberAssignment{{Active: []int32{2}}}}, 1); err == nil {
		t.Fatal("a task index beyond the task space was accepted")
	}
}

// TestFromABIKeepsTheProbeHint: the assignor's next_probe_ms reaches
// core (it used to be dropped, so a hint without warm-ups open never
// scheduled a probe).
func TestFromABIKeepsTheProbeHint(t *testing.T) {
	ts := abi.NewTaskSpace([]abi.Subtopology{{ID: "a", Partitions: 1}})
	for _, hint := range []int64{-1, 0, 60_000} {
		res, err := FromABI(ts, &abi.AssignResponse{Members: []abi.MemberAssignment{{Active: []int32{0}}}, NextProbeMs: hint}, 1)
		if err != nil || res.NextProbeMs != hint {
			t.Fatalf("hint %d: got %d, %v", hint, res.NextProbeMs, err)
		}
	}
}

func sameRefs(a, b []core.TaskRef) bool {
	set := func(s []core.TaskRef) map[core.TaskRef]bool {
		m := map[core.TaskRef]bool{}
		for _, r := range s {
			m[r] = true
		}
		return m
	}
	return reflect.DeepEqual(set(a), set(b))
}
