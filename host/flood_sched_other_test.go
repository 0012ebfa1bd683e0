//go:build !linux

package host_test

import (
	"errors"
	"os/exec"
)

var errNoSchedIdle = errors.New("SCHED_IDLE is Linux's")

func startIdle(*exec.Cmd) error { return errNoSchedIdle }
func allIdle(int) (bool, error) { return false, errNoSchedIdle }
