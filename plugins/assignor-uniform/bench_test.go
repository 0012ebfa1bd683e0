package uniform_test

import (
	"testing"

	"github.com/coordhost/coordhost/abi/abitest"
	rangeassignor "github.com/coordhost/coordhost/plugins/assignor-range"
	uniform "github.com/coordhost/coordhost/plugins/assignor-uniform"
)

// Large groups: 1,000 members, 200 topics of up to 100 partitions, 90% of
// the partitions currently owned.
func benchShape(het bool) abitest.PartitionShape {
	return abitest.PartitionShape{Members: 1000, Topics: 200, MaxPartitions: 100, Heterogeneous: het, History: 90, Seed: 42}
}

func BenchmarkUniformHomogeneous(b *testing.B)   { benchAssign(b, uniform.Assign, false) }
func BenchmarkUniformHeterogeneous(b *testing.B) { benchAssign(b, uniform.Assign, true) }
func BenchmarkRangeHeterogeneous(b *testing.B)   { benchAssign(b, rangeassignor.Assign, true) }

func benchAssign(b *testing.B, f nativeAssign, het bool) {
	req := abitest.GeneratePartitions(benchShape(het))
	b.ResetTimer()
	for range b.N {
		if _, err := f(req); err != nil {
			b.Fatal(err)
		}
	}
}
