package assign

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/plugin/plugintest"
)

// outOfRange is a native assignor that indexes the request's tables
// without checking them, as the HA build did before it validated input:
// an out-of-range process index panics.
func outOfRange(req *abi.AssignRequest) (*abi.AssignResponse, error) {
	resp := &abi.AssignResponse{Members: make([]abi.MemberAssignment, len(req.Members)), NextProbeMs: -1}
	for i, m := range req.Members {
		_ = req.Processes[m.Process+int32(len(req.Processes))] // always out of range
		resp.Members[i] = abi.MemberAssignment{}
	}
	return resp, nil
}

func outOfRangeProbe(req *abi.ProbeRequest) (*abi.ProbeResponse, error) {
	_ = req.Target[len(req.Target)]
	return &abi.ProbeResponse{}, nil
}

// TestNativeAssignorPanicRecovered: a native assignor or probing
// policy that panics on its input is an assignor failure, not a crash:
// Run and Probe return an error naming the panic, counted in native_panics
// and errors/probe_failures. With a plugin in front, a panicking native
// fallback is recovered too. (TestNativePanicInLoop runs one in a group.)
func TestNativeAssignorPanicRecovered(t *testing.T) {
	asg := &Registry{log: slog.New(slog.DiscardHandler), byName: map[string]*assignor{
		"boom":   {name: "boom", native: outOfRange, probe: outOfRangeProbe, fallback: "sticky"},
		"sticky": {name: "sticky", native: Builtins["sticky"].Native, fallback: "sticky"},
	}}
	req := &abi.AssignRequest{GroupID: "g", Processes: []string{"p"}, Subtopologies: []abi.Subtopology{{ID: "0", Partitions: 2}},
		Members: []abi.Member{{ID: "m", Process: 0}}}
	if _, err := asg.Run(context.Background(), "boom", req); err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("Run: got %v, want a recovered panic", err)
	}
	if _, err := asg.Probe(context.Background(), "boom", &abi.ProbeRequest{Group: *req, Target: make([]abi.MemberAssignment, 1)}); err == nil ||
		!strings.Contains(err.Error(), "panicked") {
		t.Fatalf("Probe: got %v, want a recovered panic", err)
	}
	pi := asg.Info()[0]
	if pi.Name != "boom" || pi.Panics != 2 || pi.Errors != 1 || pi.ProbeFailures != 1 {
		t.Fatalf("info %+v: want 2 panics, 1 error, 1 probe failure", pi)
	}
	// A failing plugin whose native fallback panics.
	p, err := plugin.Load(context.Background(), plugintest.GoPlugin(t, "testdata/plugins/gopanic"), plugin.Config{Name: "gopanic", Logger: asg.log})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	asg.byName["gopanic"] = &assignor{name: "gopanic", plugin: p, fallback: "boom"}
	if _, err := asg.Run(context.Background(), "gopanic", req); err == nil || !strings.Contains(err.Error(), "native fallback assign of \"gopanic\" panicked") {
		t.Fatalf("Run with a panicking fallback: got %v", err)
	}

}

// TestProbingPolicyResolution: streams.probing.policy "" uses the group
// assignor's own module when it has a probe export (native ha; a loaded
// plugin exporting coordhost_probe), else the built-in (""); "builtin" is
// always the built-in; another value names a module as given.
func TestProbingPolicyResolution(t *testing.T) {
	asg := New(context.Background(), t.TempDir(), "sticky", plugin.Config{}, slog.New(slog.DiscardHandler))
	defer asg.Close(context.Background())
	path := filepath.Join(t.TempDir(), "goprobe.wasm")
	if err := os.WriteFile(path, plugintest.GoPlugin(t, "testdata/plugins/goprobe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := asg.Load(context.Background(), "probeonly", path); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ policy, assignor, want string }{
		{"", "sticky", ""}, {"", "ha", "ha"}, {"", "probeonly", "probeonly"}, {"", "missing", ""},
		{"builtin", "ha", ""}, {"probeonly", "sticky", "probeonly"}, {"missing", "sticky", "missing"},
	} {
		if got := asg.ProbingPolicy(c.policy, c.assignor); got != c.want {
			t.Errorf("ProbingPolicy(%q, %q) = %q, want %q", c.policy, c.assignor, got, c.want)
		}
	}
	if _, err := asg.Probe(context.Background(), "sticky", &abi.ProbeRequest{}); err == nil || !strings.Contains(err.Error(), "no probing policy") {
		t.Fatalf("Probe on sticky: %v", err)
	}
}

// TestCheck: a probe check reaches the policy translated to the ABI (the
// clock, the last assignment's time, the target as task indices) and its
// answer comes back as core's decision; a policy that cannot answer
// leaves the decision to the built-in interval policy, with the reason.
func TestCheck(t *testing.T) {
	var got *abi.ProbeRequest
	asg := &Registry{log: slog.New(slog.DiscardHandler), byName: map[string]*assignor{
		"rec": {name: "rec", probe: func(req *abi.ProbeRequest) (*abi.ProbeResponse, error) {
			got = req
			return &abi.ProbeResponse{Rebalance: true, NextProbeMs: 1234}, nil
		}},
		"sticky": {name: "sticky", native: Builtins["sticky"].Native, fallback: "sticky"},
	}}
	chk := core.ProbeCheck{Group: "g", Epoch: 4, Policy: "rec", LastAssignMs: 500,
		Input: core.AssignInput{Subtopologies: []core.AssignSubtopology{{ID: "s0", NumTasks: 2}},
			Members: []core.AssignMember{{MemberID: "a", ProcessID: "p1"}, {MemberID: "b", ProcessID: "p2"}}},
		Target: []core.MemberTasks{{Active: []core.TaskRef{{Subtopology: 0, Partition: 1}}}, {Active: []core.TaskRef{{Subtopology: 0, Partition: 0}}}}}
	dec, err := asg.Check(context.Background(), chk, 9000)
	if err != nil || dec != (core.ProbeDecision{Rebalance: true, NextProbeMs: 1234}) {
		t.Fatalf("Check: %+v, %v; want the policy's answer", dec, err)
	}
	if got.NowMs != 9000 || got.LastAssignMs != 500 || got.Group.GroupID != "g" || got.Group.GroupEpoch != 4 ||
		!slices.Equal(got.Target[0].Active, []int32{1}) || !slices.Equal(got.Target[1].Active, []int32{0}) {
		t.Fatalf("request %+v", got)
	}
	chk.Policy = "sticky"
	dec, err = asg.Check(context.Background(), chk, 9000)
	if err == nil || !strings.Contains(err.Error(), "no probing policy") || dec != (core.ProbeDecision{Builtin: true}) {
		t.Fatalf("Check with no policy: %+v, %v; want the built-in's decision and the reason", dec, err)
	}
}
