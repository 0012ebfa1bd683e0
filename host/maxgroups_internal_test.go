package host

import (
	"testing"

	"github.com/coordhost/coordhost/host/runtime"
)

// TestPartitionShare: runtime.max.groups is split over the store's own
// partition count when it has one, else the configured count, rounded up
// so the shares cover the total; 0 stays 0 (no cap).
func TestPartitionShare(t *testing.T) {
	for _, c := range []struct{ max, storeParts, configured, want int }{
		{100000, 50, 7, 2000},
		{100000, 0, 7, 14286},
		{100001, 50, 50, 2001},
		{10, 0, 0, (10 + runtime.DefaultPartitions - 1) / runtime.DefaultPartitions},
		{0, 50, 50, 0},
	} {
		if got := partitionShare(c.max, c.storeParts, c.configured); got != c.want {
			t.Errorf("partitionShare(%d, %d, %d) = %d, want %d", c.max, c.storeParts, c.configured, got, c.want)
		}
	}
}
