package experiment

import (
	"runtime"
	"syscall"
)

// shadowThread makes the calling goroutine's OS thread its own and lowers
// that thread's scheduling priority to the lowest (nice 19), so that on a
// busy machine the kernel runs the primary's runs and the event loop
// before shadow runs. The goroutine never unlocks: its thread exits with
// it instead of going back to the runtime's pool with the low priority.
func shadowThread() error {
	runtime.LockOSThread()
	return syscall.Setpriority(syscall.PRIO_PROCESS, syscall.Gettid(), 19)
}
