//go:build wasip1

package guest

import (
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"unsafe"

	"github.com/coordhost/coordhost/abi"
)

//go:wasmimport coordhost_v1 input_read
func inputRead(dst unsafe.Pointer, capacity int32) int32

//go:wasmimport coordhost_v1 output_write
func outputWrite(src unsafe.Pointer, n int32) int32

//go:wasmimport coordhost_v1 log
func logImport(level int32, src unsafe.Pointer, n int32)

var in []byte // reused input buffer

// abiV1 is the version marker: the host checks that it exists and never
// calls it.
//
//go:wasmexport coordhost_abi_v1
func abiV1() {}

//go:wasmexport coordhost_kinds
func kinds() int32 { return Kinds() }

//go:wasmexport coordhost_assign
func assign(n int32) int32 { return run(n, InvokeAssign) }

//go:wasmexport coordhost_probe
func probe(n int32) int32 { return run(n, InvokeProbe) }

func run(n int32, op func([]byte) (abi.Status, []byte)) int32 {
	if n < 0 {
		return int32(abi.StatusDecodeError)
	}
	if cap(in) < int(n) {
		in = make([]byte, n)
	}
	in = in[:n]
	if n > 0 && inputRead(unsafe.Pointer(&in[0]), n) != n {
		return int32(abi.StatusDecodeError)
	}
	status, output := op(in)
	if len(output) > 0 {
		if outputWrite(unsafe.Pointer(&output[0]), int32(len(output))) != 0 {
			status = abi.StatusPanic
		}
	}
	collect()
	return int32(status)
}

// gcEveryBytes is how much a guest may allocate between two collections.
const gcEveryBytes = 16 << 20

var (
	allocs    = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	lastAlloc uint64
)

// The runtime's own GC cycles cannot finish inside a reactor export (its
// workers only run when the export yields), and letting them run in a
// yield at the end of every call was measured at several ms per call under
// wazero (see docs/BENCHMARKS.md). So the SDK switches the automatic GC off
// and runs a blocking collection at the end of a call once gcEveryBytes
// were allocated since the last one: the heap, and so linear memory, stays
// bounded by the live data plus gcEveryBytes plus one call's garbage.
func init() { debug.SetGCPercent(-1) }

func collect() {
	metrics.Read(allocs)
	if a := allocs[0].Value.Uint64(); a-lastAlloc >= gcEveryBytes {
		runtime.GC()
		metrics.Read(allocs)
		lastAlloc = allocs[0].Value.Uint64()
	}
}

func hostLog(level int32, msg string) {
	if len(msg) == 0 {
		return
	}
	b := []byte(msg)
	logImport(level, unsafe.Pointer(&b[0]), int32(len(b)))
}
