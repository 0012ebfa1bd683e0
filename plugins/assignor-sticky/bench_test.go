package sticky_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
	"github.com/coordhost/coordhost/abi/guest"
	"github.com/coordhost/coordhost/host/plugin"
	sticky "github.com/coordhost/coordhost/plugins/assignor-sticky"
)

// benchShapes are the fixed inputs of the native-vs-wasm benchmarks:
// 100 and 1000 members, 1k and 10k tasks, 0 and 1 standby, with history.
func benchShapes() []struct {
	name string
	s    abitest.Shape
} {
	var out []struct {
		name string
		s    abitest.Shape
	}
	for _, m := range []int{100, 1000} {
		for _, tasks := range []int{1000, 10000} {
			for _, sb := range []int{0, 1} {
				out = append(out, struct {
					name string
					s    abitest.Shape
				}{fmt.Sprintf("m%d_t%d_sb%d", m, tasks, sb), abitest.Shape{
					Members: m, Processes: m / 2, Subtopologies: 10, Partitions: tasks / 10,
					Standbys: sb, History: 90, Offsets: true, RandomIDs: true, Seed: uint64(m + tasks + sb)}})
			}
		}
	}
	return out
}

func BenchmarkStickyNative(b *testing.B) {
	for _, c := range benchShapes() {
		req := abitest.Generate(c.s)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := sticky.Assign(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchWasm(b *testing.B, cfg plugin.Config) {
	p := loadWasm(b, cfg)
	for _, c := range benchShapes() {
		req := abitest.Generate(c.s)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := p.Assign(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStickyWasm: the .wasm build through host/plugin, without the
// per-call deadline (trusted built-in setting).
func BenchmarkStickyWasm(b *testing.B) { benchWasm(b, plugin.Config{NoDeadline: true, PoolSize: 1}) }

// BenchmarkStickyWasmDeadline: the same with the deadline enforced.
func BenchmarkStickyWasmDeadline(b *testing.B) { benchWasm(b, plugin.Config{PoolSize: 1}) }

// BenchmarkHostOverhead measures what the host adds around the guest's
// work: encoding the request, decoding and validating the response (the
// copy in and out is inside the wasm call).
func BenchmarkHostOverhead(b *testing.B) {
	for _, c := range benchShapes() {
		req := abitest.Generate(c.s)
		resp, _ := sticky.Assign(req)
		out, _ := abi.AppendAssignResponse(nil, resp)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := abi.AppendAssignRequest(nil, req); err != nil {
					b.Fatal(err)
				}
				var back abi.AssignResponse
				if err := abi.DecodeAssignResponse(out, &back); err != nil {
					b.Fatal(err)
				}
				if err := abi.ValidateAssignment(req, &back); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStickyGuestPathNative runs, natively, everything the wasm guest
// runs per call: decode the request, assign, encode the response.
func BenchmarkStickyGuestPathNative(b *testing.B) {
	guest.HandleAssign(sticky.Assign)
	for _, c := range benchShapes() {
		in, _ := abi.AppendAssignRequest(nil, abitest.Generate(c.s))
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if st, out := guest.InvokeAssign(in); st != abi.StatusOK {
					b.Fatalf("%v: %s", st, out)
				}
			}
		})
	}
}

// BenchmarkRatios interleaves, on identical inputs, one native call, one
// wasm call without the deadline, one with it, and the host's own work
// (encode the request, decode and validate the response), so that the
// reported ratios hold even when the machine's load drifts during the run.
// Metrics: native-ms, wasm-ms, deadline-ms, wasm/native, deadline/wasm,
// host-overhead-% (of the wasm call).
func BenchmarkRatios(b *testing.B) {
	ctx := context.Background()
	fast := loadWasm(b, plugin.Config{Name: "fast", NoDeadline: true, PoolSize: 1})
	guarded := loadWasm(b, plugin.Config{Name: "guarded", PoolSize: 1})
	for _, c := range benchShapes() {
		req := abitest.Generate(c.s)
		resp, _ := sticky.Assign(req)
		out, _ := abi.AppendAssignResponse(nil, resp)
		b.Run(c.name, func(b *testing.B) {
			var native, wasm, deadline, host time.Duration
			for b.Loop() {
				t0 := time.Now()
				if _, err := sticky.Assign(req); err != nil {
					b.Fatal(err)
				}
				t1 := time.Now()
				if _, err := fast.Assign(ctx, req); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				if _, err := guarded.Assign(ctx, req); err != nil {
					b.Fatal(err)
				}
				t3 := time.Now()
				in, _ := abi.AppendAssignRequest(nil, req)
				var back abi.AssignResponse
				if err := abi.DecodeAssignResponse(out, &back); err != nil || len(in) == 0 {
					b.Fatal(err)
				}
				if err := abi.ValidateAssignment(req, &back); err != nil {
					b.Fatal(err)
				}
				t4 := time.Now()
				native += t1.Sub(t0)
				wasm += t2.Sub(t1)
				deadline += t3.Sub(t2)
				host += t4.Sub(t3)
			}
			n := float64(b.N)
			b.ReportMetric(float64(native.Microseconds())/1000/n, "native-ms")
			b.ReportMetric(float64(wasm.Microseconds())/1000/n, "wasm-ms")
			b.ReportMetric(float64(deadline.Microseconds())/1000/n, "deadline-ms")
			b.ReportMetric(float64(wasm)/float64(native), "wasm/native")
			b.ReportMetric(float64(deadline)/float64(wasm), "deadline/wasm")
			b.ReportMetric(100*float64(host)/float64(wasm), "host-overhead-%")
		})
	}
}
