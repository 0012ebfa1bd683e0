package loop

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
)

// TestPrepareSlots: a streams heartbeat with a large topology waits for a
// preparation slot (here until its context ends, every slot being held),
// one with a small topology never does, nor one over the default bound
// (only counted ahead), and a freed slot lets the large one through.
func TestPrepareSlots(t *testing.T) {
	join := func(subs int) *kmsg.StreamsGroupHeartbeatRequest {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Group, req.MemberID = "g", "m"
		req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{}
		for i := 0; i < subs; i++ {
			req.Topology.Subtopologies = append(req.Topology.Subtopologies,
				kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{SubtopologyID: fmt.Sprint(i), SourceTopics: []string{"in"}})
		}
		return req
	}
	large, small := join(largeTopology), join(8) // 2 entries a subtopology
	for i := 0; i < cap(prepareSlots); i++ {
		prepareSlots <- struct{}{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := prepareStreamsHeartbeat(ctx, large); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("large topology with every slot held: %v, want the context's deadline", err)
	}
	if p, _, err := prepareStreamsHeartbeat(ctx, small); err != nil || p == nil {
		t.Fatalf("small topology with every slot held: %v", err)
	}
	if p, _, err := prepareStreamsHeartbeat(ctx, join(core.DefaultMaxTopologySize)); err != nil || p == nil {
		t.Fatalf("topology over the default bound (only counted) with every slot held: %v", err)
	}
	<-prepareSlots
	if p, _, err := prepareStreamsHeartbeat(context.Background(), large); err != nil || p == nil {
		t.Fatalf("large topology with a slot free: %v", err)
	}
	for len(prepareSlots) > 0 {
		<-prepareSlots
	}
}
