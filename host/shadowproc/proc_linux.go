package shadowproc

import (
	"os"
	"strconv"
	"syscall"
)

// Supported reports whether shadow plugins run in a shadow process on
// this system (Linux: the child dies with its parent and runs at nice 19).
const Supported = true

// sysProcAttr kills the child when the thread that started it exits (the
// parent's exit included) and keeps it out of the terminal's process
// group, so Ctrl-C reaches coordhost, which then kills it.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// lowerPriority sets every thread of the process to nice 19 (on Linux
// the nice value is per thread; threads started later inherit it from
// the thread that starts them).
func lowerPriority() error {
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return err
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		if err := syscall.Setpriority(syscall.PRIO_PROCESS, tid, 19); err != nil && err != syscall.ESRCH {
			return err
		}
	}
	return nil
}
