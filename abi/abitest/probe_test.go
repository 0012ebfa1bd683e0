package abitest

import (
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
)

// TestRunProbe: the probing-policy checks pass a policy that depends only
// on the group's content and fail one that depends on call order, on member
// order, or answers an impossible delay.
func TestRunProbe(t *testing.T) {
	cases := Cases(true)
	good := func(req *abi.ProbeRequest) (*abi.ProbeResponse, error) {
		return &abi.ProbeResponse{Rebalance: req.NowMs-req.LastAssignMs > 300_000, NextProbeMs: int64(len(req.Group.Members))}, nil
	}
	if failed := Failed(RunProbe(good, cases)); len(failed) > 0 {
		t.Fatalf("a deterministic policy failed: %v", failed[0].Err)
	}
	calls := 0
	for _, bad := range []struct {
		name  string
		probe ProbeFunc
		want  string
	}{
		{"call order", func(*abi.ProbeRequest) (*abi.ProbeResponse, error) {
			calls++
			return &abi.ProbeResponse{NextProbeMs: int64(calls)}, nil
		}, "same request"},
		{"member order", func(req *abi.ProbeRequest) (*abi.ProbeResponse, error) {
			if len(req.Group.Members) == 0 {
				return &abi.ProbeResponse{NextProbeMs: -1}, nil
			}
			return &abi.ProbeResponse{Rebalance: len(req.Target[0].Active) > len(req.Target[len(req.Target)-1].Active) ||
				req.Group.Members[0].ID < req.Group.Members[len(req.Group.Members)-1].ID}, nil
		}, "permuted"},
		{"negative delay", func(*abi.ProbeRequest) (*abi.ProbeResponse, error) {
			return &abi.ProbeResponse{NextProbeMs: -5}, nil
		}, "next_probe_ms -5"},
	} {
		failed := Failed(RunProbe(bad.probe, cases))
		if len(failed) == 0 || !strings.Contains(failed[0].Err.Error(), bad.want) {
			t.Errorf("%s: want a failure naming %q, got %v", bad.name, bad.want, failed)
		}
	}
}
