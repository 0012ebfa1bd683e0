// Package guest is the Go SDK for writing coordhost plugins: register an
// assign and/or probe handler in init(), build the main package with
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plugin.wasm .
//
// and the SDK provides the ABI v1 exports and imports of abi/SPEC.md. Under
// the wasip1 build tag the real exports are compiled in; elsewhere a stub
// keeps the package compiling so handlers can be unit-tested natively
// through InvokeAssign and InvokeProbe, which run exactly the code the
// exports run.
//
// The SDK turns a handler's panic into a PANIC status with the panic value
// and stack as the error text (the instance is then discarded by the host),
// and keeps the heap bounded: a reactor's GC cannot finish a cycle unless an
// export yields, so the real build switches automatic GC off and collects
// at the end of a call once the heap grew by max(2 MiB, live heap)
// (guest_wasip1.go).
package guest

import (
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/coordhost/coordhost/abi"
)

// AssignFunc computes a target assignment. Returning an error fails the call
// with ASSIGN_ERROR (or UNSUPPORTED, for errors wrapping ErrUnsupported).
// The SDK encodes the response before the call returns and never keeps it,
// so a handler may return memory it reuses on its next call.
type AssignFunc func(req *abi.AssignRequest) (*abi.AssignResponse, error)

// Options tune the SDK's per-call memory use. Set them from init().
type Options struct {
	// AliasInput: the strings of a decoded request (ids, names, tags)
	// point into the SDK's input buffer instead of a copy of it, saving
	// one input-sized allocation per call. The next call overwrites that
	// buffer, so a handler that sets it must not keep any string of a
	// request past its call (copy what it keeps, e.g. strings.Clone).
	AliasInput bool
}

// MemberOrder returns, during an assign call, the indices of the request's
// members in ascending member-id order (the SDK's decoder sorts them to
// check that ids are unique), so that a handler need not sort them again.
// It is valid until the handler returns.
func MemberOrder() []int32 { return dec.MemberOrder() }

// SetOptions sets the SDK's options.
func SetOptions(o Options) { dec.AliasInput = o.AliasInput }

// PartitionAssignFunc is a consumer-group partition assignor (SPEC.md 3.5).
// Errors map to statuses as for AssignFunc.
type PartitionAssignFunc func(req *abi.PartitionAssignRequest) (*abi.PartitionAssignResponse, error)

// ProbeFunc is a probing policy.
type ProbeFunc func(req *abi.ProbeRequest) (*abi.ProbeResponse, error)

// ErrUnsupported marks a handler error as the UNSUPPORTED status: the input
// uses a feature the plugin does not implement.
var ErrUnsupported = errors.New("unsupported")

var (
	assignFn AssignFunc
	probeFn  ProbeFunc
	partsFn  PartitionAssignFunc
	out      []byte      // reused output buffer: one call runs at a time
	dec      abi.Decoder // reused decoding memory, for the same reason
	// assignReq is the decoded request of the call in progress (a local
	// would escape to the heap through the handler call).
	assignReq abi.AssignRequest
)

// HandleAssign registers the plugin's task assignor. Call it from init().
func HandleAssign(f AssignFunc) { assignFn = f }

// HandleAssignPartitions registers the plugin's partition assignor. Call it
// from init().
func HandleAssignPartitions(f PartitionAssignFunc) { partsFn = f }

// HandleProbe registers the plugin's probing policy. Call it from init().
func HandleProbe(f ProbeFunc) { probeFn = f }

// Kinds returns the coordhost_kinds bit set of the registered handlers.
func Kinds() int32 {
	var k int32
	if assignFn != nil {
		k |= abi.KindAssign
	}
	if probeFn != nil {
		k |= abi.KindProbe
	}
	if partsFn != nil {
		k |= abi.KindAssignPartitions
	}
	return k
}

// InvokeAssign runs the assign operation on an encoded AssignRequest, as the
// coordhost_assign export does, and returns the status and output bytes
// (an AssignResponse, or an error text). The output is valid until the next
// call.
func InvokeAssign(input []byte) (status abi.Status, output []byte) {
	defer recoverInto(&status, &output)
	if assignFn == nil {
		return fail(abi.StatusUnsupported, "this plugin has no task assignor")
	}
	req := &assignReq
	defer func() { *req = abi.AssignRequest{} }() // keep nothing past the call
	if err := dec.DecodeAssignRequest(input, req); err != nil {
		return fail(abi.StatusDecodeError, err.Error())
	}
	resp, err := assignFn(req)
	if err != nil {
		return handlerError(err)
	}
	if resp == nil {
		return fail(abi.StatusPanic, "assign handler returned neither a response nor an error")
	}
	b, err := abi.AppendAssignResponse(out[:0], resp)
	if err != nil {
		return fail(abi.StatusPanic, "encoding the response: "+err.Error())
	}
	out = b
	return abi.StatusOK, out
}

// InvokeProbe runs the probe operation on an encoded ProbeRequest, as the
// coordhost_probe export does.
func InvokeProbe(input []byte) (status abi.Status, output []byte) {
	defer recoverInto(&status, &output)
	if probeFn == nil {
		return fail(abi.StatusUnsupported, "this plugin has no probing policy")
	}
	var req abi.ProbeRequest
	if err := abi.DecodeProbeRequest(input, &req); err != nil {
		return fail(abi.StatusDecodeError, err.Error())
	}
	resp, err := probeFn(&req)
	if err != nil {
		return handlerError(err)
	}
	if resp == nil {
		return fail(abi.StatusPanic, "probe handler returned neither a response nor an error")
	}
	out = abi.AppendProbeResponse(out[:0], resp)
	return abi.StatusOK, out
}

// InvokeAssignPartitions runs the partition-assignor operation on an
// encoded PartitionAssignRequest, as the coordhost_assign_partitions export
// does. The output is valid until the next call.
func InvokeAssignPartitions(input []byte) (status abi.Status, output []byte) {
	defer recoverInto(&status, &output)
	if partsFn == nil {
		return fail(abi.StatusUnsupported, "this plugin has no partition assignor")
	}
	var req abi.PartitionAssignRequest
	if err := abi.DecodePartitionAssignRequest(input, &req); err != nil {
		return fail(abi.StatusDecodeError, err.Error())
	}
	resp, err := partsFn(&req)
	if err != nil {
		return handlerError(err)
	}
	if resp == nil {
		return fail(abi.StatusPanic, "partition assign handler returned neither a response nor an error")
	}
	b, err := abi.AppendPartitionAssignResponse(out[:0], resp)
	if err != nil {
		return fail(abi.StatusPanic, "encoding the response: "+err.Error())
	}
	out = b
	return abi.StatusOK, out
}

func handlerError(err error) (abi.Status, []byte) {
	if errors.Is(err, ErrUnsupported) {
		return fail(abi.StatusUnsupported, err.Error())
	}
	return fail(abi.StatusAssignError, err.Error())
}

func fail(s abi.Status, msg string) (abi.Status, []byte) {
	out = append(out[:0], msg...)
	return s, out
}

func recoverInto(status *abi.Status, output *[]byte) {
	if v := recover(); v != nil {
		stack := debug.Stack()
		if len(stack) > 2048 {
			stack = stack[:2048]
		}
		*status, *output = fail(abi.StatusPanic, fmt.Sprintf("panic: %v\n%s", v, stack))
	}
}

// Log levels of the log import.
const (
	LevelDebug = 0
	LevelInfo  = 1
	LevelWarn  = 2
	LevelError = 3
)

// Log emits a diagnostic line through the host (SPEC.md section 2).
func Log(level int32, msg string) { hostLog(level, msg) }
