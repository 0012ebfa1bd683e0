package main

import (
	"runtime"
	"testing"
)

// The serving process reserves the collector's headroom unless GOGC or
// GOMEMLIMIT is in its environment, and the collector counts it as live
// heap.
func TestGCHeadroomUnlessTunedByEnvironment(t *testing.T) {
	defer func() { gcHeadroom = nil }()
	for _, env := range [][]string{{"GOGC=100"}, {"HOME=/", "GOMEMLIMIT=1GiB"}, {"GOGC=off"}} {
		gcHeadroom = nil
		reserveGCHeadroom(env)
		if gcHeadroom != nil {
			t.Errorf("environment %q: headroom reserved, want the collector left as configured", env)
		}
	}
	gcHeadroom = nil
	reserveGCHeadroom([]string{"HOME=/", "GOGCX=1"})
	if len(gcHeadroom) != gcHeadroomBytes {
		t.Fatalf("no GOGC or GOMEMLIMIT: headroom of %d bytes, want %d", len(gcHeadroom), gcHeadroomBytes)
	}
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	if ms.HeapAlloc < gcHeadroomBytes {
		t.Errorf("live heap after a collection %d bytes, want at least the headroom's %d", ms.HeapAlloc, gcHeadroomBytes)
	}
	first := &gcHeadroom[0]
	reserveGCHeadroom(nil)
	if &gcHeadroom[0] != first {
		t.Error("a second call allocated another headroom")
	}
}
