package loop

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/assign"
)

// BenchmarkLoopSteadyHeartbeat measures one steady streams heartbeat
// through the loop (Handle: preparation, the group quota's charge,
// stepping on the partition, the answer) of a member whose tasks are
// reported, in a one-partition loop with a group quota.
func BenchmarkLoopSteadyHeartbeat(b *testing.B) {
	l := quotaLoop(b, assign.Builtins["sticky"].Native)
	epoch := quotaBeat(b, l, "g", 0, 0).MemberEpoch
	req := streamsJoin("g", "m", "in")
	body := req.Body.(*kmsg.StreamsGroupHeartbeatRequest)
	body.MemberEpoch, body.Topology = epoch, nil
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := l.Handle(ctx, req)
		if err != nil || resp.(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode != 0 {
			b.Fatalf("heartbeat: %v %+v", err, resp)
		}
	}
}
