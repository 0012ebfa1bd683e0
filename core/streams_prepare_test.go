package core

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPreparedTopologyComparison: a join whose topology equals the stored
// one is accepted and a changed one refused, whether the stored topology
// was written by this coordinator, replaced by a record, replayed from
// its records into another, or written again after a rollback (each a new value whose digest is
// taken again); and a topology over DefaultMaxTopologySize, which
// PrepareStreamsHeartbeat only counts, is prepared by the step where the
// bound was raised.
func TestPreparedTopologyComparison(t *testing.T) {
	newCore := func(maxTopology int32) *Coordinator {
		cfg := DefaultConfig()
		cfg.Streams.MaxTopologySize = maxTopology
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		c.UpdateTopics(0, []TopicMetadata{{Name: "in", ID: [16]byte{1}, Partitions: 4}, {Name: "in2", ID: [16]byte{2}, Partitions: 4}})
		c.Commit()
		return c
	}
	join := func(member string, subs int, source string) *kmsg.StreamsGroupHeartbeatRequest {
		req := limitJoin("g", subs)
		req.MemberID = member
		for i := range req.Topology.Subtopologies {
			req.Topology.Subtopologies[i].SourceTopics = []string{source}
		}
		return req
	}
	code := func(c *Coordinator, req *kmsg.StreamsGroupHeartbeatRequest) int16 {
		t.Helper()
		out := c.StreamsGroupHeartbeatPrepared(100, 1, ClientInfo{}, PrepareStreamsHeartbeat(req))
		if len(out.Responses) == 0 {
			return 0 // parked for an assignor run: accepted
		}
		return out.Responses[0].Msg.(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode
	}
	want := func(c *Coordinator, req *kmsg.StreamsGroupHeartbeatRequest, w *kerr.Error) {
		t.Helper()
		got := code(c, req)
		c.Commit()
		if (w == nil && got != 0) || (w != nil && got != w.Code) {
			t.Fatalf("member %s: code %d, want %v", req.MemberID, got, w)
		}
	}

	c := newCore(DefaultMaxTopologySize)
	out := c.StreamsGroupHeartbeat(100, 1, ClientInfo{}, join("m1", 3, "in"))
	c.Commit()
	want(c, join("m2", 3, "in"), nil)
	want(c, join("m3", 3, "in2"), kerr.InvalidRequest)
	// A record replacing the stored topology of the group (as a replay
	// does) is compared as the new value.
	if err := c.Replay(Record{Key: StreamsGroupTopologyKey{"g"}, Value: topologyFromRequest(join("", 3, "in2").Topology)}); err != nil {
		t.Fatal(err)
	}
	c.Commit()
	want(c, join("m4", 3, "in2"), nil)
	want(c, join("m5", 3, "in"), kerr.InvalidRequest)

	replayed := newCore(DefaultMaxTopologySize)
	for _, rec := range out.Records {
		if err := replayed.Replay(rec); err != nil {
			t.Fatal(err)
		}
	}
	replayed.Commit()
	want(replayed, join("m2", 3, "in"), nil)
	want(replayed, join("m3", 3, "in2"), kerr.InvalidRequest)

	rb := newCore(DefaultMaxTopologySize)
	if code(rb, join("m1", 3, "in")) != 0 {
		t.Fatal("first join refused")
	}
	rb.Rollback()
	want(rb, join("m1", 3, "in2"), nil)
	want(rb, join("m2", 3, "in2"), nil)
	want(rb, join("m3", 3, "in"), kerr.InvalidRequest)

	big := newCore(2*DefaultMaxTopologySize + 2)
	over := join("m1", DefaultMaxTopologySize/2+1, "in") // 2 entries a subtopology
	if p := PrepareStreamsHeartbeat(over); p.prepared {
		t.Fatal("a topology over the default bound was prepared ahead")
	}
	want(big, over, nil)
	want(big, join("m2", DefaultMaxTopologySize/2+1, "in"), nil)
	want(big, join("m3", DefaultMaxTopologySize/2+1, "in2"), kerr.InvalidRequest)
}
