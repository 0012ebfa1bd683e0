package sticky_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
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
