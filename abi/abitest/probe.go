package abitest

import (
	"errors"
	"fmt"

	"github.com/coordhost/coordhost/abi"
)

// ProbeFunc is a probing policy under test.
type ProbeFunc func(req *abi.ProbeRequest) (*abi.ProbeResponse, error)

// RunProbe checks a probing policy on every case (SPEC.md 5.3, 5.4): with
// the case's group and a valid target (round-robin actives), at two clock
// readings, the answer must decode, name a next-probe delay that is -1 or
// >= 0, be the same on a second call, and not change when the members —
// and with them the target — are permuted.
func RunProbe(probe ProbeFunc, cases []Case) []Result {
	out := make([]Result, len(cases))
	for i, c := range cases {
		out[i] = Result{Case: c.Name, Err: probeCase(probe, c.Req)}
	}
	return out
}

func probeCase(probe ProbeFunc, group *abi.AssignRequest) error {
	for _, now := range []int64{1_000_000, 1_600_000} {
		req := &abi.ProbeRequest{NowMs: now, LastAssignMs: 1_000_000, Group: *group, Target: roundRobin(group)}
		first, err := callProbe(probe, req)
		if err != nil {
			return fmt.Errorf("call at +%d ms: %w", now-req.LastAssignMs, err)
		}
		if first.NextProbeMs < -1 {
			return fmt.Errorf("next_probe_ms %d: must be -1 or >= 0", first.NextProbeMs)
		}
		again, err := callProbe(probe, req)
		if err != nil {
			return fmt.Errorf("second call: %w", err)
		}
		if *again != *first {
			return fmt.Errorf("not deterministic: %+v, then %+v for the same request", *first, *again)
		}
		perm, order := Permute(group, 0x85ebca6b)
		preq := &abi.ProbeRequest{NowMs: req.NowMs, LastAssignMs: req.LastAssignMs, Group: *perm,
			Target: make([]abi.MemberAssignment, len(order))}
		for i, o := range order {
			preq.Target[i] = req.Target[o]
		}
		permuted, err := callProbe(probe, preq)
		if err != nil {
			return fmt.Errorf("permuted call: %w", err)
		}
		if *permuted != *first {
			return fmt.Errorf("not deterministic: %+v, but %+v with the members permuted", *first, *permuted)
		}
	}
	return nil
}

// callProbe runs probe and round-trips its answer through the codec.
func callProbe(probe ProbeFunc, req *abi.ProbeRequest) (*abi.ProbeResponse, error) {
	resp, err := probe(req)
	if err != nil {
		return nil, err
	}
	if resp == nil {
		return nil, errors.New("nil response without an error")
	}
	var back abi.ProbeResponse
	if err := abi.DecodeProbeResponse(abi.AppendProbeResponse(nil, resp), &back); err != nil {
		return nil, err
	}
	return &back, nil
}

// roundRobin is a valid target for group: every task active on one member.
func roundRobin(group *abi.AssignRequest) []abi.MemberAssignment {
	t := make([]abi.MemberAssignment, len(group.Members))
	if len(t) == 0 {
		return t
	}
	for task := int32(0); task < group.NumTasks(); task++ {
		m := &t[int(task)%len(t)]
		m.Active = append(m.Active, task)
	}
	return t
}
