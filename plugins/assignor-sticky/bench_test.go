package sticky_test

import (
	"context"
	"fmt"
	"slices"
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

func benchWasm(b *testing.B, cfg plugin.Config) { benchPlugin(b, loadWasm(b, cfg)) }

func benchPlugin(b *testing.B, p *plugin.Plugin) {
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

// BenchmarkStickyCWasm: the C build of the same algorithm (c/sticky.c)
// through host/plugin, without the deadline.
func BenchmarkStickyCWasm(b *testing.B) {
	benchPlugin(b, loadC(b, plugin.Config{NoDeadline: true, PoolSize: 1}))
}

// hostWork is what host/plugin does around the guest on every assign
// call, step for step: encode the request into a reused buffer, copy it
// into guest memory (here: into a reused buffer), copy the output out,
// decode it and validate it against the request.
type hostWork struct {
	in, mem, out []byte
}

func (h *hostWork) run(req *abi.AssignRequest, guestOut []byte) error {
	var err error
	if h.in, err = abi.AppendAssignRequest(h.in[:0], req); err != nil {
		return err
	}
	h.mem = append(h.mem[:0], h.in...)
	h.out = append(h.out[:0], guestOut...)
	var back abi.AssignResponse
	if err := abi.DecodeAssignResponse(h.out, &back); err != nil {
		return err
	}
	return abi.ValidateAssignment(req, &back)
}

// BenchmarkHostOverhead measures what the host adds around the guest's
// work (hostWork: encode, copy in, copy out, decode, validate).
func BenchmarkHostOverhead(b *testing.B) {
	for _, c := range benchShapes() {
		req := abitest.Generate(c.s)
		resp, _ := sticky.Assign(req)
		out, _ := abi.AppendAssignResponse(nil, resp)
		var h hostWork
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if err := h.run(req, out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStickyGuestPathNative runs, natively, everything the wasm guest
// runs per call: decode the request, assign, encode the response.
func BenchmarkStickyGuestPathNative(b *testing.B) {
	guest.SetOptions(guest.Options{AliasInput: true}) // as wasm/main.go
	guest.HandleAssign(func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
		return sticky.AssignReusing(req, guest.MemberOrder())
	})
	defer guest.SetOptions(guest.Options{})
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
// (hostWork: encode, copy in and out, decode, validate), so that the
// reported ratios hold even when the machine's load drifts during the run;
// then one call of the C build (c/sticky.c, same algorithm, no deadline).
// Metrics: native-ms, wasm-ms, deadline-ms, wasm/native (of the sums),
// wasm/native-median (the median of the per-iteration ratios: a burst of
// load from other processes moves it less than the sums), deadline/wasm,
// host-overhead-% (of the wasm call, sums) and host-overhead-median-%
// (the median of the per-iteration shares), c-ms, c/native and
// c/native-median (the C build's call against the same native call).
func BenchmarkRatios(b *testing.B) {
	ctx := context.Background()
	fast := loadWasm(b, plugin.Config{Name: "fast", NoDeadline: true, PoolSize: 1})
	guarded := loadWasm(b, plugin.Config{Name: "guarded", PoolSize: 1})
	cbuild := loadC(b, plugin.Config{Name: "c", NoDeadline: true, PoolSize: 1})
	for _, c := range benchShapes() {
		req := abitest.Generate(c.s)
		resp, _ := sticky.Assign(req)
		out, _ := abi.AppendAssignResponse(nil, resp)
		// One untimed call each first: the plugins' instances are created
		// on their first call (instantiate + _initialize, measured apart
		// by host/plugin's BenchmarkInstantiate), and every path sizes its
		// reused memory for this shape; the ratios are the steady state.
		for _, p := range []*plugin.Plugin{fast, guarded, cbuild} {
			if _, err := p.Assign(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
		var h hostWork
		b.Run(c.name, func(b *testing.B) {
			var native, wasm, deadline, host, cwasm time.Duration
			var ratios []float64   // per iteration: wasm / native, measured back to back
			var overhead []float64 // per iteration: host work / wasm call
			var cratios []float64  // per iteration: C build / native
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
				if err := h.run(req, out); err != nil {
					b.Fatal(err)
				}
				t4 := time.Now()
				if _, err := cbuild.Assign(ctx, req); err != nil {
					b.Fatal(err)
				}
				t5 := time.Now()
				cratios = append(cratios, float64(t5.Sub(t4))/float64(t1.Sub(t0)))
				cwasm += t5.Sub(t4)
				ratios = append(ratios, float64(t2.Sub(t1))/float64(t1.Sub(t0)))
				overhead = append(overhead, 100*float64(t4.Sub(t3))/float64(t2.Sub(t1)))
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
			b.ReportMetric(median(ratios), "wasm/native-median")
			b.ReportMetric(float64(deadline)/float64(wasm), "deadline/wasm")
			b.ReportMetric(100*float64(host)/float64(wasm), "host-overhead-%")
			b.ReportMetric(median(overhead), "host-overhead-median-%")
			b.ReportMetric(float64(cwasm.Microseconds())/1000/n, "c-ms")
			b.ReportMetric(float64(cwasm)/float64(native), "c/native")
			b.ReportMetric(median(cratios), "c/native-median")
		})
	}
}

// median returns the middle value of xs (the mean of the two middle values
// for an even count), sorting xs in place; 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}
