package assign

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/core"
)

// Probing policies (docs/WARMUPS.md §2.5): a group's streams.probing.policy
// names a loaded module whose coordhost_probe export decides when core
// probes. Policies live in the same registry as assignors: a module may
// export either operation or both.

// NativeProbe is an in-process probing policy: the native build of a
// plugin's probe operation.
type NativeProbe func(req *abi.ProbeRequest) (*abi.ProbeResponse, error)

// The special values of streams.probing.policy.
const (
	// ProbingPolicyAuto (the default) uses the group assignor's own probe
	// export when its module has one, else core's built-in interval policy.
	ProbingPolicyAuto = ""
	// ProbingPolicyBuiltin is core's built-in interval policy.
	ProbingPolicyBuiltin = "builtin"
)

type probeCounters struct {
	calls, failures atomic.Int64
}

// ProbingPolicy resolves a group's streams.probing.policy, given its
// assignor, to the module core should ask ("" = core's built-in policy):
// "builtin" is the built-in; "" (auto) is the assignor itself when its
// module (or native build) has a probing policy; any other value names a
// module. A named module that is missing or has no probe export is not
// refused here: each check then fails and the built-in policy decides,
// with a log line.
func (a *Registry) ProbingPolicy(policy, assignor string) string {
	switch policy {
	case ProbingPolicyBuiltin:
		return ""
	case ProbingPolicyAuto:
		if a.hasProbe(assignor) {
			return assignor
		}
		return ""
	}
	return policy
}

// hasProbe reports whether the named module can answer probes. It never
// calls the plugin (the loop goroutine asks): a plugin's kinds are read
// when it is loaded.
func (a *Registry) hasProbe(name string) bool {
	as := a.get(name)
	if as == nil {
		return false
	}
	if as.plugin != nil {
		return as.hasProbe.Load()
	}
	return as.probe != nil
}

// noteKinds records whether as's plugin exports a probing policy.
func (as *assignor) noteKinds(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	k, err := as.plugin.Kinds(ctx)
	as.hasProbe.Store(err == nil && k&abi.KindProbe != 0)
	as.hasPartitions.Store(err == nil && k&abi.KindAssignPartitions != 0)
}

// Probe runs the named module's probing policy: its plugin's probe export,
// or the native build of a built-in. Failures are *plugin.Error values for
// plugins (counted in the plugin's metrics, instance discarded) and plain
// errors otherwise; a native panic is recovered into an error.
func (a *Registry) Probe(ctx context.Context, name string, req *abi.ProbeRequest) (*abi.ProbeResponse, error) {
	as := a.get(name)
	if as == nil {
		return nil, fmt.Errorf("probing policy %q is not loaded (have %v)", name, a.Names())
	}
	as.probes.calls.Add(1)
	var resp *abi.ProbeResponse
	var err error
	switch {
	case as.plugin != nil:
		resp, err = as.plugin.Probe(ctx, req)
	case as.probe != nil:
		resp, err = recoverNative(as, "probe", func() (*abi.ProbeResponse, error) { return as.probe(req) })
	default:
		err = fmt.Errorf("module %q has no probing policy (no coordhost_probe export)", name)
	}
	if err == nil && resp == nil {
		err = fmt.Errorf("probing policy %q returned no response", name)
	}
	if err != nil {
		as.probes.failures.Add(1)
		return nil, err
	}
	return resp, nil
}

// Check runs chk's probing policy (chk.Policy) at nowMs and turns its
// answer into core's decision. When the policy fails, the decision is
// core's built-in interval policy and the error says why.
func (a *Registry) Check(ctx context.Context, chk core.ProbeCheck, nowMs int64) (core.ProbeDecision, error) {
	resp, err := a.Probe(ctx, chk.Policy, ProbeToABI(chk, nowMs))
	return ProbeFromABI(resp, err), err
}

// runNative runs a native assignor for as (op: "assign" or "fallback
// assign"), turning a panic into an error.
func runNative(as *assignor, op string, fn Native, req *abi.AssignRequest) (*abi.AssignResponse, error) {
	return recoverNative(as, op, func() (*abi.AssignResponse, error) { return fn(req) })
}

// recoverNative calls fn; a panic becomes an error (with the stack, for the
// log line the caller writes) and is counted on as.
func recoverNative[T any](as *assignor, op string, fn func() (*T, error)) (resp *T, err error) {
	defer func() {
		if r := recover(); r != nil {
			as.panics.Add(1)
			resp, err = nil, fmt.Errorf("native %s of %q panicked: %v\n%s", op, as.name, r, debug.Stack())
		}
	}()
	return fn()
}

// ProbeToABI translates a core probe check into the ABI's ProbeRequest.
func ProbeToABI(chk core.ProbeCheck, nowMs int64) *abi.ProbeRequest {
	req, ts := ToABI(core.AssignorRun{Group: chk.Group, Epoch: chk.Epoch, Input: chk.Input})
	pr := &abi.ProbeRequest{NowMs: nowMs, LastAssignMs: chk.LastAssignMs, Group: *req,
		Target: make([]abi.MemberAssignment, len(chk.Target))}
	tasks := func(refs []core.TaskRef) []int32 {
		out := make([]int32, len(refs))
		for i, r := range refs {
			out[i] = ts.Task(r.Subtopology, r.Partition)
		}
		return out // core lists refs in (subtopology, partition) order: ascending
	}
	for i, t := range chk.Target {
		pr.Target[i] = abi.MemberAssignment{Active: tasks(t.Active), Standby: tasks(t.Standby), Warmup: tasks(t.Warmup)}
	}
	return pr
}

// ProbeFromABI turns a policy's answer, or its failure, into core's input.
func ProbeFromABI(resp *abi.ProbeResponse, err error) core.ProbeDecision {
	if err != nil {
		return core.ProbeDecision{Builtin: true}
	}
	return core.ProbeDecision{Rebalance: resp.Rebalance, NextProbeMs: resp.NextProbeMs}
}
