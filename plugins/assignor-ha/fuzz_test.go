package ha_test

import (
	"testing"

	"github.com/coordhost/coordhost/abi"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
)

// FuzzAssign feeds any request the ABI decoder accepts to the assignor and
// the probing policy: they must not panic, and an assignment they return
// must be valid (abi/SPEC.md 6).
func FuzzAssign(f *testing.F) {
	for _, c := range haCases(true) {
		b, err := abi.AppendAssignRequest(nil, c.Req)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, int64(1000))
	}
	f.Fuzz(func(t *testing.T, b []byte, now int64) {
		var req abi.AssignRequest
		if abi.DecodeAssignRequest(b, &req) != nil || req.NumTasks() > 4096 || len(req.Members) > 256 {
			return
		}
		resp, err := ha.Assign(&req)
		if err != nil {
			return
		}
		if err := abi.ValidateAssignment(&req, resp); err != nil {
			t.Fatalf("invalid assignment: %v", err)
		}
		if _, err := ha.Probe(&abi.ProbeRequest{NowMs: now, Group: req, Target: resp.Members}); err != nil {
			t.Fatalf("probe: %v", err)
		}
	})
}
