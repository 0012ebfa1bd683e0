package loop

import (
	"context"
	goruntime "runtime"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
)

// largeTopology is the number of topology entries (streams.max.topology.size
// counts them) over which preparing a streams heartbeat takes a slot.
const largeTopology = 1024

// prepareSlots bound the streams heartbeats with a large topology being
// prepared at once in the process: at most GOMAXPROCS-1 (at least 1), the
// rule the listeners apply to decoding large frames. Preparing a topology
// near streams.max.topology.size costs tens of milliseconds of CPU and
// megabytes of garbage; without a bound, clients sending them from many
// connections take every core while the small requests of other groups
// wait for one. A heartbeat without a large topology never waits here.
var prepareSlots = make(chan struct{}, max(1, goruntime.GOMAXPROCS(0)-1))

// prepareStreamsHeartbeat runs core.PrepareStreamsHeartbeat on the
// request's goroutine, before the request is queued for its partition
// (the partition's worker then only compares and applies), in a slot when
// the topology is large. It returns how long the preparation itself took
// (not the wait for a slot; 0 for a request of fixed size, fixedSize):
// the group's quota counts it (loop_quota.go).
func prepareStreamsHeartbeat(ctx context.Context, req *kmsg.StreamsGroupHeartbeatRequest) (*core.PreparedStreamsHeartbeat, time.Duration, error) {
	// A topology over the default bound is only counted ahead (core
	// prepares nothing of it): it needs no slot.
	if n := core.TopologyEntries(req.Topology); n > largeTopology && n <= core.DefaultMaxTopologySize {
		select {
		case prepareSlots <- struct{}{}:
			defer func() { <-prepareSlots }()
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
	if fixedSize(req) {
		// Nothing to prepare but a few fields: timing it would cost two
		// clock reads, more than the preparation (the request's decoding
		// is charged anyway).
		return core.PrepareStreamsHeartbeat(req), 0, nil
	}
	start := time.Now()
	prep := core.PrepareStreamsHeartbeat(req)
	return prep, time.Since(start), nil
}

// fixedSize reports whether req carries none of the lists or the
// topology whose size a preparation's work grows with: a steady Streams
// client's heartbeat once its tasks are reported (null lists).
func fixedSize(req *kmsg.StreamsGroupHeartbeatRequest) bool {
	return req.Topology == nil && req.ActiveTasks == nil && req.StandbyTasks == nil && req.WarmupTasks == nil &&
		req.ClientTags == nil && req.TaskOffsets == nil && req.TaskEndOffsets == nil
}
