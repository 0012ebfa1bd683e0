//go:build !linux

package shadowproc

import (
	"errors"
	"syscall"
)

// Supported reports whether shadow plugins run in a shadow process on
// this system: only on Linux, where the child dies with its parent
// (Pdeathsig) and runs at nice 19.
const Supported = false

func sysProcAttr() *syscall.SysProcAttr { return nil }

func lowerPriority() error { return errors.New("not supported on this system") }
