package ha_test

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/coordhost/coordhost/abi/abitest"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/plugin/plugintest"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
)

// ratioCases are the fixed inputs of BenchmarkRatios: the kit's largest
// group (1,000 members on 1,000 processes × 10,004 tasks × 2 standbys)
// and two smaller groups with history and offsets.
func ratioCases() []abitest.Case {
	small := abitest.Shape{Members: 100, Processes: 50, Subtopologies: 10, Partitions: 100,
		Standbys: 1, History: 90, Offsets: true, RandomIDs: true, Seed: 1101}
	mid := abitest.Shape{Members: 1000, Processes: 500, Subtopologies: 10, Partitions: 100,
		Standbys: 1, History: 90, Offsets: true, RandomIDs: true, Seed: 2101}
	return []abitest.Case{
		{Name: "m100_t1k_sb1", Req: abitest.Generate(small)},
		{Name: "m1000_t1k_sb1", Req: abitest.Generate(mid)},
		abitest.Largest(),
	}
}

// BenchmarkRatios interleaves, on identical inputs, one native ha.Assign
// and one call of the .wasm build through host/plugin (no deadline, the
// built-in setting; everything a caller pays: encode, copy in, guest
// decode + assign + encode, copy out, decode, validation), so the ratio
// holds while the machine's load drifts. Metrics: native-ms, wasm-ms,
// wasm/native (of the sums) and wasm/native-median (median of the
// per-iteration ratios), all wall time; and the same of the calls' thread
// CPU time (cpu-native-ms, cpu-wasm-ms, cpu-wasm/native,
// cpu-wasm/native-median; Linux), which other processes on a shared
// machine move far less than wall time: the goroutine is locked to its
// thread, and both calls run on it.
func BenchmarkRatios(b *testing.B) {
	ctx := context.Background()
	p, err := plugin.Load(ctx, plugintest.GoPlugin(b, "plugins/assignor-ha/wasm"),
		plugin.Config{Name: "assignor-ha", NoDeadline: true, PoolSize: 1})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close(ctx)
	for _, c := range ratioCases() {
		// One untimed call first: the instance is created on its first
		// call and the guest's heap grows to the shape; the ratio is the
		// steady state. It is also checked equal to native.
		want, err := ha.Assign(c.Req)
		if err != nil {
			b.Fatal(err)
		}
		got, err := p.Assign(ctx, c.Req)
		if err != nil {
			b.Fatal(err)
		}
		if d := diffResponses(want, got); d != "" {
			b.Fatalf("%s: wasm differs from native: %s", c.Name, d)
		}
		b.Run(c.Name, func(b *testing.B) {
			runtime.LockOSThread() // the thread CPU clock follows this goroutine
			defer runtime.UnlockOSThread()
			var native, wasm, cpuNative, cpuWasm time.Duration
			var ratios, cpuRatios []float64
			for b.Loop() {
				t0, c0 := time.Now(), threadCPU()
				if _, err := ha.Assign(c.Req); err != nil {
					b.Fatal(err)
				}
				t1, c1 := time.Now(), threadCPU()
				if _, err := p.Assign(ctx, c.Req); err != nil {
					b.Fatal(err)
				}
				t2, c2 := time.Now(), threadCPU()
				native += t1.Sub(t0)
				wasm += t2.Sub(t1)
				ratios = append(ratios, float64(t2.Sub(t1))/float64(t1.Sub(t0)))
				cpuNative += c1 - c0
				cpuWasm += c2 - c1
				if c1 > c0 {
					cpuRatios = append(cpuRatios, float64(c2-c1)/float64(c1-c0))
				}
			}
			n := float64(b.N)
			b.ReportMetric(float64(native.Microseconds())/1000/n, "native-ms")
			b.ReportMetric(float64(wasm.Microseconds())/1000/n, "wasm-ms")
			b.ReportMetric(float64(wasm)/float64(native), "wasm/native")
			b.ReportMetric(median(ratios), "wasm/native-median")
			if len(cpuRatios) > 0 {
				b.ReportMetric(float64(cpuNative.Microseconds())/1000/n, "cpu-native-ms")
				b.ReportMetric(float64(cpuWasm.Microseconds())/1000/n, "cpu-wasm-ms")
				b.ReportMetric(float64(cpuWasm)/float64(cpuNative), "cpu-wasm/native")
				b.ReportMetric(median(cpuRatios), "cpu-wasm/native-median")
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
