package sticky_test

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/plugin/plugintest"
	sticky "github.com/coordhost/coordhost/plugins/assignor-sticky"
)

const wasmPkg = "plugins/assignor-sticky/wasm"

func loadWasm(tb testing.TB, cfg plugin.Config) *plugin.Plugin {
	tb.Helper()
	return loadModule(tb, plugintest.GoPlugin(tb, wasmPkg), cfg)
}

// cSrc is the C build of the sticky algorithm (make plugins builds it to
// build/plugins/assignor-sticky-c.wasm).
const cSrc = "plugins/assignor-sticky/c/sticky.c"

func loadC(tb testing.TB, cfg plugin.Config) *plugin.Plugin {
	tb.Helper()
	return loadModule(tb, plugintest.CPlugin(tb, cSrc), cfg)
}

// loadModule loads a built .wasm, closed when the test ends.
func loadModule(tb testing.TB, wasm []byte, cfg plugin.Config) *plugin.Plugin {
	tb.Helper()
	p, err := plugin.Load(context.Background(), wasm, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close(context.Background()) })
	return p
}

// TestWasmConformanceAndNativeEquality runs the conformance kit on the
// .wasm build and checks it answers exactly as the native package.
func TestWasmConformanceAndNativeEquality(t *testing.T) {
	p := loadWasm(t, plugin.Config{Name: "sticky"})
	assign := func(req *abi.AssignRequest) (*abi.AssignResponse, error) { return p.Assign(context.Background(), req) }
	cases := abitest.Cases(testing.Short())
	for _, r := range abitest.Run(assign, cases) {
		if r.Err != nil {
			t.Errorf("%s: %v", r.Case, r.Err)
		}
	}
	for i, sh := range parityShapes() {
		req := abitest.Generate(sh)
		if len(req.Members) == 0 {
			continue // the host never runs an assignor for an empty group
		}
		want, _ := sticky.Assign(req)
		got, err := assign(req)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) && !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: wasm and native differ", i)
		}
	}
}

// TestWasmMemoryStaysFlat: on 100 members x 1,000 tasks, the instance's
// linear memory after call N is at most 1.25x its size after call 100
// (N = 10,000 with COORDHOST_LONG=1, else 1,000).
func TestWasmMemoryStaysFlat(t *testing.T) {
	calls := 1000
	if os.Getenv("COORDHOST_LONG") == "1" {
		calls = 10000
	}
	if testing.Short() {
		t.Skip("long-running")
	}
	p := loadWasm(t, plugin.Config{Name: "sticky", PoolSize: 1, NoDeadline: true})
	req := abitest.Generate(memShape)
	in, err := abi.AppendAssignRequest(nil, req)
	if err != nil {
		t.Fatal(err)
	}
	var at100 uint64
	for i := 1; i <= calls; i++ {
		if _, err := p.AssignRaw(context.Background(), in); err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if i == 100 {
			at100 = p.Metrics().MemoryBytes
		}
		if i&(i-1) == 0 || i%2000 == 0 {
			t.Logf("after call %d: %d KiB", i, p.Metrics().MemoryBytes>>10)
		}
	}
	m := p.Metrics()
	t.Logf("linear memory after call 100: %d KiB; after call %d: %d KiB; instances created: %d",
		at100>>10, calls, m.MemoryBytes>>10, m.InstancesCreated)
	if m.InstancesCreated != 1 {
		t.Fatalf("the instance was replaced (%d created): the test must watch one instance", m.InstancesCreated)
	}
	if float64(m.MemoryBytes) > 1.25*float64(at100) {
		t.Fatalf("memory grew from %d to %d bytes (> 1.25x)", at100, m.MemoryBytes)
	}
}

var memShape = abitest.Shape{Members: 100, Processes: 50, Subtopologies: 10, Partitions: 100, StatelessEach: 5,
	Standbys: 1, History: 90, Offsets: true, Seed: 77}
