package sticky_test

import (
	"context"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
	"github.com/coordhost/coordhost/host/plugin"
)

// BenchmarkWasmCallFixedCost: a one-member, one-task call measures what
// every wasm call costs regardless of size.
func BenchmarkWasmCallFixedCost(b *testing.B) {
	p := loadWasm(b, plugin.Config{NoDeadline: true, PoolSize: 1})
	in, _ := abi.AppendAssignRequest(nil, abitest.Generate(abitest.Shape{Members: 1, Processes: 1, Subtopologies: 1, Partitions: 1}))
	for b.Loop() {
		if _, err := p.AssignRaw(context.Background(), in); err != nil {
			b.Fatal(err)
		}
	}
}
