//go:build !linux

package ha_test

import "time"

// threadCPU is unavailable here: BenchmarkRatios reports wall time only.
func threadCPU() time.Duration { return 0 }
