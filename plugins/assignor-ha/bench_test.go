package ha_test

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/coordhost/coordhost/abi/abitest"
	"github.com/coordhost/coordhost/host/plugin"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
)

// ratioCases are the fixed inputs of BenchmarkRatios: the kit's largest
// group (1,000 members on 1,000 processes × 10,004 tasks × 2 standbys)
// and three smaller groups with history and offsets.
func ratioCases() []abitest.Case {
	tiny := abitest.Shape{Members: 10, Processes: 5, Subtopologies: 10, Partitions: 100,
		Standbys: 1, History: 90, Offsets: true, RandomIDs: true, Seed: 1001}
	small := abitest.Shape{Members: 100, Processes: 50, Subtopologies: 10, Partitions: 100,
		Standbys: 1, History: 90, Offsets: true, RandomIDs: true, Seed: 1101}
	mid := abitest.Shape{Members: 1000, Processes: 500, Subtopologies: 10, Partitions: 100,
		Standbys: 1, History: 90, Offsets: true, RandomIDs: true, Seed: 2101}
	return []abitest.Case{
		{Name: "m10_t1k_sb1", Req: abitest.Generate(tiny)},
		{Name: "m100_t1k_sb1", Req: abitest.Generate(small)},
		{Name: "m1000_t1k_sb1", Req: abitest.Generate(mid)},
		abitest.Largest(),
	}
}

// BenchmarkRatios interleaves, on identical inputs, one native ha.Assign,
// one call of the Go .wasm build and one call of the C .wasm build (c/ha.c)
// through host/plugin (no deadline, the built-in setting; everything a
// caller pays: encode, copy in, guest decode + assign + encode, copy out,
// decode, validation), so the ratios hold while the machine's load drifts.
// Metrics: native-ms, wasm-ms, c-wasm-ms, wasm/native and c-wasm/native
// (of the sums) and wasm/native-median and c-wasm/native-median (medians of
// the per-iteration ratios), all wall time; and the same of the calls'
// thread CPU time (cpu-...; Linux), which other processes on a shared
// machine move far less than wall time: the goroutine is locked to its
// thread, and all three calls run on it. Without clang the C build skips
// the benchmark (fails it under CI=true).
func BenchmarkRatios(b *testing.B) {
	ctx := context.Background()
	cfg := plugin.Config{NoDeadline: true, PoolSize: 1}
	goWasm, cWasm := loadHA(b, false, cfg), loadHA(b, true, cfg)
	for _, c := range ratioCases() {
		// One untimed call of each first: an instance is created on its
		// first call and the guest's heap grows to the shape; the ratio is
		// the steady state. Both builds are checked equal to native.
		want, err := ha.Assign(c.Req)
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range []*plugin.Plugin{goWasm, cWasm} {
			got, err := p.Assign(ctx, c.Req)
			if err != nil {
				b.Fatal(err)
			}
			if d := diffResponses(want, got); d != "" {
				b.Fatalf("%s: %s differs from native: %s", c.Name, p.Name(), d)
			}
		}
		b.Run(c.Name, func(b *testing.B) {
			runtime.LockOSThread() // the thread CPU clock follows this goroutine
			defer runtime.UnlockOSThread()
			var wall, cpu [3]time.Duration // native, Go wasm, C wasm
			var ratios, cpuRatios [2][]float64
			for b.Loop() {
				var t [4]time.Time
				var u [4]time.Duration
				t[0], u[0] = time.Now(), threadCPU()
				if _, err := ha.Assign(c.Req); err != nil {
					b.Fatal(err)
				}
				t[1], u[1] = time.Now(), threadCPU()
				for i, p := range []*plugin.Plugin{goWasm, cWasm} {
					if _, err := p.Assign(ctx, c.Req); err != nil {
						b.Fatal(err)
					}
					t[i+2], u[i+2] = time.Now(), threadCPU()
				}
				for i := range wall {
					wall[i] += t[i+1].Sub(t[i])
					cpu[i] += u[i+1] - u[i]
				}
				for i := range ratios {
					ratios[i] = append(ratios[i], float64(t[i+2].Sub(t[i+1]))/float64(t[1].Sub(t[0])))
					if u[1] > u[0] {
						cpuRatios[i] = append(cpuRatios[i], float64(u[i+2]-u[i+1])/float64(u[1]-u[0]))
					}
				}
			}
			n := float64(b.N)
			names := [3]string{"native", "wasm", "c-wasm"}
			for i, d := range wall {
				b.ReportMetric(float64(d.Microseconds())/1000/n, names[i]+"-ms")
			}
			for i := range ratios {
				b.ReportMetric(float64(wall[i+1])/float64(wall[0]), names[i+1]+"/native")
				b.ReportMetric(median(ratios[i]), names[i+1]+"/native-median")
			}
			if len(cpuRatios[0]) == 0 {
				return
			}
			for i, d := range cpu {
				b.ReportMetric(float64(d.Microseconds())/1000/n, "cpu-"+names[i]+"-ms")
			}
			for i := range cpuRatios {
				b.ReportMetric(float64(cpu[i+1])/float64(cpu[0]), "cpu-"+names[i+1]+"/native")
				b.ReportMetric(median(cpuRatios[i]), "cpu-"+names[i+1]+"/native-median")
			}
		})
	}
}

// BenchmarkNative runs ha.Assign alone on the same inputs (for profiles:
// -cpuprofile, -memprofile).
func BenchmarkNative(b *testing.B) {
	for _, c := range ratioCases() {
		b.Run(c.Name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ha.Assign(c.Req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// median returns the middle value of xs (the upper of the two middle
// values for an even count), sorting xs in place; xs is not empty.
func median(xs []float64) float64 {
	slices.Sort(xs)
	return xs[len(xs)/2]
}
