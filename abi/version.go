package abi

// Version is the major ABI version this package implements (SPEC.md).
const Version = 1

// Names of the exports and imports of ABI v1 (SPEC.md sections 2 and 3).
const (
	// MarkerExport is the no-op export whose presence declares ABI v1.
	MarkerExport = "coordhost_abi_v1"
	// MarkerPrefix starts every version marker; the host reads the version
	// after it to refuse plugins that speak another major version.
	MarkerPrefix = "coordhost_abi_v"
	// ImportModule is the module name of the host functions of ABI v1.
	ImportModule = "coordhost_v1"
	// ExportAssign is the task assignor operation.
	ExportAssign = "coordhost_assign"
	// ExportProbe is the probing-policy operation.
	ExportProbe = "coordhost_probe"
	// ExportAssignPartitions is the partition-assignor operation (consumer
	// groups, KIP-848).
	ExportAssignPartitions = "coordhost_assign_partitions"
	// ExportKinds optionally says which operations are real (Kind* bits).
	ExportKinds = "coordhost_kinds"
	// ImportInputRead copies the call's input into guest memory.
	ImportInputRead = "input_read"
	// ImportOutputWrite hands the call's output to the host.
	ImportOutputWrite = "output_write"
	// ImportLog emits a diagnostic log line.
	ImportLog = "log"
)

// Operation kinds, as bits of the coordhost_kinds export.
const (
	KindAssign           int32 = 1
	KindProbe            int32 = 2
	KindAssignPartitions int32 = 4
)

// Status is the value an operation export returns (SPEC.md section 3.3).
type Status int32

// Status codes of ABI v1.
const (
	StatusOK          Status = 0
	StatusDecodeError Status = 1
	StatusAssignError Status = 2
	StatusPanic       Status = 3
	StatusUnsupported Status = 4
)

// String names the status as SPEC.md does.
func (s Status) String() string {
	switch s {
	case StatusOK:
		return "OK"
	case StatusDecodeError:
		return "DECODE_ERROR"
	case StatusAssignError:
		return "ASSIGN_ERROR"
	case StatusPanic:
		return "PANIC"
	case StatusUnsupported:
		return "UNSUPPORTED"
	}
	return "STATUS_" + itoa(int64(s))
}

// Limits of ABI v1 (SPEC.md section 1.2) enforced by the decoders.
const (
	MaxMembers       = 65536
	MaxProcesses     = 65536
	MaxSubtopologies = 65536
	MaxTasks         = 4194304
	MaxString        = 32767
	MaxRequestBytes  = 256 << 20
)

// Message kinds: the first byte of every message.
const (
	MsgAssignRequest  byte = 1
	MsgAssignResponse byte = 2
	MsgProbeRequest   byte = 3
	MsgProbeResponse  byte = 4
	// MsgPartitionAssignRequest and MsgPartitionAssignResponse are the
	// partition-assignor messages (SPEC.md 5.5 and 5.6).
	MsgPartitionAssignRequest  byte = 5
	MsgPartitionAssignResponse byte = 6
)

func itoa(v int64) string {
	if v == 0 {
		return "0"
	}
	neg := v < 0
	if neg {
		v = -v
	}
	var b [20]byte
	i := len(b)
	for v > 0 {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
