package plugin

import (
	"errors"
	"fmt"

	"github.com/coordhost/coordhost/abi"
)

// Kind classifies a plugin failure. Metrics count errors by kind.
type Kind string

// The kinds of plugin failure.
const (
	KindLoad              Kind = "load"               // not a valid or acceptable module
	KindABIVersion        Kind = "abi_version"        // no marker, or a version this host does not serve
	KindInit              Kind = "init_trap"          // _initialize trapped or exited
	KindTrap              Kind = "trap"               // the call trapped (panic not recovered, unreachable, OOM)
	KindDeadline          Kind = "deadline"           // the per-call deadline expired (or the caller's context ended)
	KindMemory            Kind = "memory_limit"       // the call trapped with linear memory at its limit
	KindStatus            Kind = "status"             // the guest returned a non-zero status
	KindBadOutput         Kind = "bad_output"         // output missing, too large, or not a decodable message
	KindInvalidAssignment Kind = "invalid_assignment" // output decodes but breaks abi/SPEC.md section 6
	KindUnsupported       Kind = "unsupported"        // the plugin does not export the operation
	KindRequest           Kind = "request"            // the host could not encode the request
	KindClosed            Kind = "closed"             // the plugin was closed
)

// kinds lists every Kind in metric order.
var kinds = []Kind{KindLoad, KindABIVersion, KindInit, KindTrap, KindDeadline, KindMemory, KindStatus,
	KindBadOutput, KindInvalidAssignment, KindUnsupported, KindRequest, KindClosed}

func kindIndex(k Kind) int {
	for i, x := range kinds {
		if x == k {
			return i
		}
	}
	return 0
}

// Error is every error a plugin operation returns.
type Error struct {
	Plugin string
	Op     string // "load", "assign", "probe", ...
	Kind   Kind
	Status abi.Status // for KindStatus
	Err    error

	discarded bool // the failing instance was closed
}

func (e *Error) Error() string {
	if e.Kind == KindStatus {
		return fmt.Sprintf("plugin %q: %s: %s: guest returned %v: %v", e.Plugin, e.Op, e.Kind, e.Status, e.Err)
	}
	return fmt.Sprintf("plugin %q: %s: %s: %v", e.Plugin, e.Op, e.Kind, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the Kind of a plugin error, or "" for other errors.
func KindOf(err error) Kind {
	var pe *Error
	if errors.As(err, &pe) {
		return pe.Kind
	}
	return ""
}
