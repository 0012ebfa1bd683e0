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

//go:wasmexport coordhost_assign_partitions
func assignPartitions(n int32) int32 { return run(n, InvokeAssignPartitions) }

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

// minGCBytes is the least a guest may allocate between two collections;
// otherwise it may allocate as much as was live after the last one (the
// runtime's own GOGC=100 rule, with a smaller floor).
const minGCBytes = 2 << 20

var (
	stats     = []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}, {Name: "/gc/heap/live:bytes"}}
	lastAlloc uint64
	nextGC    uint64 = minGCBytes
)

// The runtime's own GC cycles cannot finish inside a reactor export (its
// workers only run when the export yields), and letting them run in a
// yield at the end of every call was measured at several ms per call under
// wazero (see docs/RATIONALE.md). So the SDK switches the automatic GC off
// and runs a blocking collection at the end of a call once the heap has
// grown by max(minGCBytes, live heap) since the last one: linear memory
// stays bounded by about twice the live data plus one call's garbage.
func init() { debug.SetGCPercent(-1) }

func collect() {
	metrics.Read(stats)
	if stats[0].Value.Uint64()-lastAlloc < nextGC {
		return
	}
	runtime.GC()
	metrics.Read(stats)
	lastAlloc = stats[0].Value.Uint64()
	nextGC = max(minGCBytes, stats[1].Value.Uint64())
}

func hostLog(level int32, msg string) {
	if len(msg) == 0 {
		return
	}
	b := []byte(msg)
	logImport(level, unsafe.Pointer(&b[0]), int32(len(b)))
}
