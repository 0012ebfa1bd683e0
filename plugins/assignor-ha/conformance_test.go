package ha_test

import (
	"context"
	"testing"
	"time"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
	"github.com/coordhost/coordhost/abi/guest"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/plugin/plugintest"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
)

// haCases is the standard suite plus groups with lags and warm-ups, so the
// movement code runs under the kit's validity and determinism checks.
func haCases(short bool) []abitest.Case {
	cases := abitest.Cases(short)
	for _, seed := range []uint64{11, 12, 13} {
		cases = append(cases, abitest.Case{Name: "lagging-" + string(rune('a'+seed-11)), Req: laggingGroup(seed)})
	}
	return cases
}

func TestConformanceNative(t *testing.T) {
	check(t, ha.Assign, haCases(testing.Short()))
}

// TestConformanceGuestSDK runs the same suite through the guest SDK's
// encode/decode path (what the wasm exports run).
func TestConformanceGuestSDK(t *testing.T) {
	guest.HandleAssign(ha.Assign)
	check(t, func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
		in, err := abi.AppendAssignRequest(nil, req)
		if err != nil {
			return nil, err
		}
		status, out := guest.InvokeAssign(in)
		if status != abi.StatusOK {
			t.Fatalf("status %d: %s", status, out)
		}
		var resp abi.AssignResponse
		return &resp, abi.DecodeAssignResponse(out, &resp)
	}, haCases(true))
}

// TestConformanceWasm builds plugins/assignor-ha/wasm to a real .wasm,
// loads it through host/plugin and runs the kit against it, then checks
// its probing policy export answers too.
func TestConformanceWasm(t *testing.T) {
	ctx := context.Background()
	p, err := plugin.Load(ctx, plugintest.GoPlugin(t, "plugins/assignor-ha/wasm"), plugin.Config{Name: "assignor-ha"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if kinds, err := p.Kinds(ctx); err != nil || kinds != abi.KindAssign|abi.KindProbe {
		t.Fatalf("kinds = %d (%v), want assign|probe", kinds, err)
	}
	cases := haCases(testing.Short())
	check(t, func(req *abi.AssignRequest) (*abi.AssignResponse, error) { return p.Assign(ctx, req) }, cases)
	// The wasm answers exactly what the native build answers.
	for _, c := range cases {
		want, _ := ha.Assign(c.Req)
		got, err := p.Assign(ctx, c.Req)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffResponses(want, got); d != "" {
			t.Errorf("%s: wasm differs from native: %s", c.Name, d)
		}
	}
	req := laggingGroup(11)
	target, _ := ha.Assign(req)
	probe := &abi.ProbeRequest{NowMs: 1000, LastAssignMs: 0, Group: *req, Target: target.Members}
	got, err := p.Probe(ctx, probe)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := ha.Probe(probe)
	if *got != *want {
		t.Fatalf("wasm probe = %+v, native = %+v", got, want)
	}
}

func check(t *testing.T, assign abitest.AssignFunc, cases []abitest.Case) {
	t.Helper()
	for _, r := range abitest.Run(assign, cases) {
		if r.Err != nil {
			t.Errorf("%s: %v", r.Case, r.Err)
			continue
		}
		t.Logf("%s: %v", r.Case, r.Figures)
	}
}

// TestLargestShapeWasm runs the kit's largest group (1,000 members × 10,004
// tasks × 2 standbys) once through the wasm build with the default memory
// limit: it must answer, exactly as the native build does, instead of
// trapping into the fallback. The deadline is raised so that a loaded CI
// machine cannot turn a slow call into a failure (time is measured in
// docs/BENCHMARKS.md, not asserted).
func TestLargestShapeWasm(t *testing.T) {
	if testing.Short() {
		t.Skip("one call takes seconds as WebAssembly")
	}
	ctx := context.Background()
	p, err := plugin.Load(ctx, plugintest.GoPlugin(t, "plugins/assignor-ha/wasm"), plugin.Config{Name: "assignor-ha", Deadline: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	c := abitest.Largest()
	got, err := p.Assign(ctx, c.Req)
	if err != nil {
		t.Fatalf("%s: %v", c.Name, err)
	}
	if err := abi.ValidateAssignment(c.Req, got); err != nil {
		t.Fatal(err)
	}
	want, _ := ha.Assign(c.Req)
	if d := diffResponses(want, got); d != "" {
		t.Fatalf("%s: wasm differs from native: %s", c.Name, d)
	}
	t.Logf("linear memory after the call: %d MiB", p.Metrics().MemoryBytes>>20)
}
