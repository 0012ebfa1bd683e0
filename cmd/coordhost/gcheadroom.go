package main

import "strings"

// gcHeadroomBytes is how much heap the collector is told the serving
// process holds beyond its live heap (gcHeadroom).
const gcHeadroomBytes = 32 << 20

// gcHeadroom is a pointer-free allocation the process never writes:
// memory fresh from the operating system, so it is not resident, and
// never scanned, but the collector counts it as live heap. With Go's
// default target (GOGC=100: collect when the heap doubles) a coordinator
// with a few MiB of live heap collected every 1,400 streams heartbeats;
// counting 32 MiB more spaces the collections out so that a steady
// heartbeat costs about a tenth less CPU (docs/BENCHMARKS.md), for at
// most that much more garbage held between collections
// (docs/RATIONALE.md). A large live heap dwarfs it, and the
// collector then runs as it would without.
var gcHeadroom []byte

// reserveGCHeadroom allocates gcHeadroom once, unless the environment
// tunes the collector itself (GOGC or GOMEMLIMIT: an operator's setting
// is kept as it is, and the headroom would count against a memory
// limit). It is called once the start's replay is done: the replay runs
// with a raised target of its own (host/loop/replaygc.go), which the
// headroom would multiply.
func reserveGCHeadroom(environ []string) {
	if gcHeadroom != nil {
		return
	}
	for _, kv := range environ {
		if strings.HasPrefix(kv, "GOGC=") || strings.HasPrefix(kv, "GOMEMLIMIT=") {
			return
		}
	}
	gcHeadroom = make([]byte, gcHeadroomBytes)
}
