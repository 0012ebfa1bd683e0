//go:build !linux

package experiment

import "runtime"

// shadowThread makes the calling goroutine's OS thread its own; only
// Linux lowers its priority (shadow_linux.go).
func shadowThread() error {
	runtime.LockOSThread()
	return nil
}
