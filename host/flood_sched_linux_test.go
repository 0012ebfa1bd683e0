package host_test

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"syscall"
	"unsafe"
)

// schedIdle is Linux's SCHED_IDLE scheduling policy: a thread that runs
// only when no thread of another policy wants its core.
const schedIdle = 5

// startIdle starts cmd at the lowest scheduling priority, SCHED_IDLE: it
// is forked from a thread set to that policy, which a child and every
// thread it starts inherit. The thread is never unlocked, so it ends with
// its goroutine and no other goroutine runs at that priority.
func startIdle(cmd *exec.Cmd) error {
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		var param struct{ priority int32 }
		if _, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETSCHEDULER, 0, schedIdle, uintptr(unsafe.Pointer(&param))); e != 0 {
			errc <- fmt.Errorf("sched_setscheduler SCHED_IDLE: %w", e)
			return
		}
		errc <- cmd.Start()
	}()
	return <-errc
}

// allIdle reports whether every thread of process pid runs under
// SCHED_IDLE (the policy, field 41 of /proc/<pid>/task/<tid>/stat).
func allIdle(pid int) (bool, error) {
	stats, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
	if err != nil || len(stats) == 0 {
		return false, fmt.Errorf("threads of process %d: %v", pid, err)
	}
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			return false, err
		}
		// Fields after the command name start with state (field 3).
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) < 39 {
			return false, fmt.Errorf("%s: %d fields", path, len(f))
		}
		if f[38] != fmt.Sprint(schedIdle) {
			return false, nil
		}
	}
	return true, nil
}
