//go:build !linux

package main

import "time"

// processCPU is not read outside Linux: runtime.procs=0 then leaves the
// runtime's default GOMAXPROCS.
func processCPU() (time.Duration, bool) { return 0, false }
