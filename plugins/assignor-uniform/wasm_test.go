package uniform_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/plugin/plugintest"
	rangeassignor "github.com/coordhost/coordhost/plugins/assignor-range"
	uniform "github.com/coordhost/coordhost/plugins/assignor-uniform"
)

type nativeAssign func(*abi.PartitionAssignRequest) (*abi.PartitionAssignResponse, error)

// TestWasmConformanceAndNativeEquality builds both plugins, runs the
// conformance kit on them and checks that each .wasm answers exactly as
// its native package on every parity vector (so both equal Kafka).
func TestWasmConformanceAndNativeEquality(t *testing.T) {
	for _, a := range []struct {
		name, pkg string
		native    nativeAssign
	}{
		{"uniform", "plugins/assignor-uniform/wasm", uniform.Assign},
		{"range", "plugins/assignor-range/wasm", rangeassignor.Assign},
	} {
		t.Run(a.name, func(t *testing.T) {
			ctx := context.Background()
			p, err := plugin.Load(ctx, plugintest.GoPlugin(t, a.pkg), plugin.Config{Name: a.name})
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(ctx)
			kinds, err := p.Kinds(ctx)
			if err != nil || kinds != abi.KindAssignPartitions {
				t.Fatalf("kinds %d, %v; want only the partition assignor", kinds, err)
			}
			wasm := func(req *abi.PartitionAssignRequest) (*abi.PartitionAssignResponse, error) {
				return p.AssignPartitions(ctx, req)
			}
			for _, r := range abitest.RunPartitions(wasm, abitest.PartitionCases()) {
				if r.Err != nil {
					t.Errorf("%s: %v", r.Case, r.Err)
				}
			}
			for i, sh := range parityShapes() {
				req := abitest.GeneratePartitions(sh)
				want, werr := a.native(req)
				got, gerr := wasm(req)
				if fmt.Sprint(want, werr == nil) != fmt.Sprint(got, gerr == nil) {
					t.Errorf("%s: wasm %v (%v), native %v (%v)", vectorName(i), got, gerr, want, werr)
				}
			}
			if a.name != "uniform" {
				return
			}
			// The hand-off vectors through the ABI: the member order
			// travels in the request (tag 0), and the plugin answers
			// as Kafka's coordinator does from its member map.
			for i, sh := range handOffShapes() {
				c := genHandOff(i, sh)
				if got, want := sections(answer(c.ordered(), wasm))["uniform"], handOffWant(t, i); got != want {
					t.Errorf("%s: the wasm plugin differs from Kafka's:\n%s", handOffName(i), firstDiff(got, want))
				}
			}
		})
	}
}

// TestNativeConformance runs the conformance kit on the native packages;
// uniform assignments of homogeneous groups differ by at most one
// partition between members.
func TestNativeConformance(t *testing.T) {
	cases := abitest.PartitionCases()
	for name, f := range map[string]nativeAssign{"uniform": uniform.Assign, "range": rangeassignor.Assign} {
		for i, r := range abitest.RunPartitions(abitest.PartitionAssignFunc(f), cases) {
			if r.Err != nil {
				t.Errorf("%s %s: %v", name, r.Case, r.Err)
			}
			if name == "uniform" && !cases[i].Req.Heterogeneous && r.Figures.ActiveMax-r.Figures.ActiveMin > 1 {
				t.Errorf("%s %s: unbalanced: %v", name, r.Case, r.Figures)
			}
		}
	}
}
