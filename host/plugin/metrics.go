package plugin

import (
	"sync/atomic"
	"time"
)

// LatencyBuckets are the upper bounds of the call latency histogram.
var LatencyBuckets = []time.Duration{
	100 * time.Microsecond, time.Millisecond, 10 * time.Millisecond,
	100 * time.Millisecond, time.Second, 10 * time.Second,
}

type metrics struct {
	calls, fallbacks, created, discarded, reloads atomic.Uint64
	recycled                                      atomic.Uint64
	errors                                        [16]atomic.Uint64 // by kindIndex
	latencyCount                                  atomic.Uint64
	latencySumNs                                  atomic.Uint64
	latency                                       [8]atomic.Uint64 // len(LatencyBuckets)+1
	memoryBytes                                   atomic.Uint64
}

// Metrics is a snapshot of one plugin's counters.
type Metrics struct {
	Calls uint64 // operation calls (assign, probe)
	// Errors counts failures by kind (load failures come from reloads).
	Errors map[Kind]uint64
	// Fallbacks counts AssignWithFallback calls answered by the fallback.
	Fallbacks uint64
	// InstancesCreated and InstancesDiscarded count instance lifetimes:
	// every failed call discards its instance.
	InstancesCreated, InstancesDiscarded uint64
	// InstancesRecycled counts healthy instances retired because their
	// linear memory passed Config.RecycleAboveBytes.
	InstancesRecycled uint64
	Reloads           uint64
	// LatencyCount and LatencySum cover every call; LatencyBuckets[i]
	// counts calls no slower than the package's LatencyBuckets[i], the last
	// entry those slower than all bounds.
	LatencyCount   uint64
	LatencySum     time.Duration
	LatencyBuckets []uint64
	// MemoryBytes is the linear memory size of the last instance that
	// completed a call.
	MemoryBytes uint64
}

func (m *metrics) observe(d time.Duration) {
	m.latencyCount.Add(1)
	m.latencySumNs.Add(uint64(d))
	i := 0
	for i < len(LatencyBuckets) && d > LatencyBuckets[i] {
		i++
	}
	m.latency[i].Add(1)
}

func (m *metrics) snapshot() Metrics {
	s := Metrics{
		Calls: m.calls.Load(), Fallbacks: m.fallbacks.Load(),
		InstancesCreated: m.created.Load(), InstancesDiscarded: m.discarded.Load(), Reloads: m.reloads.Load(),
		InstancesRecycled: m.recycled.Load(),
		LatencyCount:      m.latencyCount.Load(), LatencySum: time.Duration(m.latencySumNs.Load()),
		MemoryBytes: m.memoryBytes.Load(), Errors: map[Kind]uint64{},
	}
	for i, k := range kinds {
		if v := m.errors[i].Load(); v > 0 {
			s.Errors[k] = v
		}
	}
	s.LatencyBuckets = make([]uint64, len(LatencyBuckets)+1)
	for i := range s.LatencyBuckets {
		s.LatencyBuckets[i] = m.latency[i].Load()
	}
	return s
}
