package sticky_test

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
	sticky "github.com/coordhost/coordhost/plugins/assignor-sticky"
)

func TestConformance(t *testing.T) {
	for _, r := range abitest.Run(sticky.Assign, abitest.Cases(testing.Short())) {
		if r.Err != nil {
			t.Errorf("%s: %v", r.Case, r.Err)
			continue
		}
		t.Logf("%s: %v", r.Case, r.Figures)
	}
}

// TestAssignReusingEqualsAssign: the guest's entry point, which reuses its
// state and response memory from call to call, answers every parity input,
// in sequence and growing and shrinking, exactly as Assign does.
func TestAssignReusingEqualsAssign(t *testing.T) {
	shapes := parityShapes()
	for i := range 2 * len(shapes) {
		sh := shapes[(i*7)%len(shapes)]
		req := abitest.Generate(sh)
		want, werr := sticky.Assign(req)
		var order []int32
		if i%2 == 1 { // as the guest calls it: with the decoder's id order
			order = abi.MemberIDOrder(nil, req.Members, new([]uint64))
		}
		got, gerr := sticky.AssignReusing(req, order)
		if fmt.Sprint(werr) != fmt.Sprint(gerr) {
			t.Fatalf("shape %d: errors %v / %v", i, werr, gerr)
		}
		if werr == nil && !reflect.DeepEqual(normalize(want), normalize(got)) {
			t.Fatalf("shape %d: AssignReusing differs from Assign", i)
		}
	}
	req := abitest.Generate(shapes[5])
	for _, bad := range [][]int32{{0}, make([]int32, len(req.Members)+1), append(make([]int32, len(req.Members)-1), int32(len(req.Members)))} {
		if _, err := sticky.AssignReusing(req, bad); err == nil {
			t.Fatalf("member order %v for %d members accepted", bad, len(req.Members))
		}
	}
}

// normalize makes empty task sets nil, so that responses built in fresh
// and in reused memory compare by content.
func normalize(r *abi.AssignResponse) *abi.AssignResponse {
	out := &abi.AssignResponse{NextProbeMs: r.NextProbeMs, Members: make([]abi.MemberAssignment, len(r.Members))}
	for i, m := range r.Members {
		for _, p := range []struct {
			dst *[]int32
			src []int32
		}{{&out.Members[i].Active, m.Active}, {&out.Members[i].Standby, m.Standby}, {&out.Members[i].Warmup, m.Warmup}} {
			if len(p.src) > 0 {
				*p.dst = slices.Clone(p.src)
			}
		}
	}
	return out
}
