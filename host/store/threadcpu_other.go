//go:build !linux

package store

import "time"

// threadCPU returns ok false: the thread's CPU time is not read here.
func threadCPU() (time.Duration, bool) { return 0, false }
