// Package proccpu reads a process's CPU time from /proc, for the
// benchmarks that report server CPU-seconds per unit of work.
package proccpu

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's times: 100 on
// every Linux architecture Go supports.
const clockTicks = 100

// Seconds is the user+system CPU seconds of process pid so far (all its
// threads, live and exited), 0 when pid is 0 or unreadable.
func Seconds(pid int) float64 {
	u, s := Times(pid)
	return u + s
}

// Times is the user and the system CPU seconds of process pid so far
// (all its threads, live and exited), 0 and 0 when pid is 0 or
// unreadable. The system part is the kernel's work on the process's
// behalf: its system calls, and the page faults of memory it touches.
func Times(pid int) (user, system float64) {
	if pid == 0 {
		return 0, 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	// The command name (field 2) may hold spaces; fields after it start
	// with state (field 3), so utime (14) and stime (15) are at 11 and 12.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return u / clockTicks, s / clockTicks
}

// Switches are a process's context switches so far, summed over the
// threads it has now (/proc/<pid>/task/*/status): voluntary ones, where a
// thread went to sleep (waiting in the poller, on a lock or a queue), and
// involuntary ones, where the kernel took its CPU away. A thread that
// exited took its counts with it, so a difference of two readings holds
// only for threads that lived through both; the servers measured here
// keep theirs.
type Switches struct {
	Voluntary, Involuntary int64
}

// ReadSwitches reads process pid's Switches; ok is false when pid is 0
// or its tasks cannot be read.
func ReadSwitches(pid int) (s Switches, ok bool) {
	if pid == 0 {
		return s, false
	}
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil || len(tasks) == 0 {
		return s, false
	}
	for _, t := range tasks {
		b, err := os.ReadFile(dir + "/" + t.Name() + "/status")
		if err != nil {
			continue // the thread exited between the listing and the read
		}
		s.Voluntary += statusField(b, "voluntary_ctxt_switches:")
		s.Involuntary += statusField(b, "nonvoluntary_ctxt_switches:")
	}
	return s, true
}

// statusField is the number after name at the start of a line of a
// /proc status file, 0 when it is not there.
func statusField(b []byte, name string) int64 {
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		if rest, ok := bytes.CutPrefix(line, []byte(name)); ok {
			n, _ := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64)
			return n
		}
	}
	return 0
}
