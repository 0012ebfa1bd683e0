package core

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/coordhost/coordhost/core/records"
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
		c.updateTopics(0, []TopicMetadata{{Name: "in", ID: [16]byte{1}, Partitions: 4}, {Name: "in2", ID: [16]byte{2}, Partitions: 4}})
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
		out := c.streamsGroupHeartbeatPrepared(100, 1, ClientInfo{}, PrepareStreamsHeartbeat(req))
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
	out := c.streamsGroupHeartbeat(100, 1, ClientInfo{}, join("m1", 3, "in"))
	c.Commit()
	want(c, join("m2", 3, "in"), nil)
	want(c, join("m3", 3, "in2"), kerr.InvalidRequest)
	// A record replacing the stored topology of the group (as a replay
	// does) is compared as the new value.
	if err := c.Replay(records.Record{Key: records.StreamsGroupTopologyKey{GroupID: "g"}, Value: topologyFromRequest(join("", 3, "in2").Topology)}); err != nil {
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

// TestRequestTopologyDigest: the digest PrepareStreamsHeartbeat takes from
// the request equals the digest of its record form, on random topologies
// with absent, empty and filled lists, and differs when any field does.
func TestRequestTopologyDigest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	strs := func() []string {
		switch n := rng.IntN(4); n {
		case 0:
			return nil
		default:
			out := make([]string, n-1)
			for i := range out {
				out[i] = fmt.Sprintf("t%d", rng.IntN(3))
			}
			return out
		}
	}
	idx := func() []int16 {
		if rng.IntN(3) == 0 {
			return nil
		}
		return []int16{int16(rng.IntN(3))}
	}
	topics := func() []kmsg.TopicInfo {
		var out []kmsg.TopicInfo
		for i := rng.IntN(3); i > 0; i-- {
			ti := kmsg.TopicInfo{Topic: fmt.Sprintf("r%d", rng.IntN(3)), NumPartitions: int32(rng.IntN(2)), ReplicationFactor: int16(rng.IntN(2))}
			for j := rng.IntN(3); j > 0; j-- {
				ti.Configs = append(ti.Configs, kmsg.TopicInfoConfig{Key: "k", Value: fmt.Sprint(rng.IntN(2))})
			}
			out = append(out, ti)
		}
		return out
	}
	random := func() *kmsg.StreamsGroupHeartbeatRequestTopology {
		top := &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: int32(rng.IntN(2))}
		for i := rng.IntN(4); i > 0; i-- {
			s := kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{SubtopologyID: fmt.Sprint(rng.IntN(3)),
				SourceTopics: strs(), SourceTopicRegex: strs(), RepartitionSinkTopics: strs(),
				StateChangelogTopics: topics(), RepartitionSourceTopics: topics()}
			for j := rng.IntN(3); j > 0; j-- {
				s.CopartitionGroups = append(s.CopartitionGroups, kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{
					SourceTopics: idx(), SourceTopicRegex: idx(), RepartitionSourceTopics: idx()})
			}
			top.Subtopologies = append(top.Subtopologies, s)
		}
		return top
	}
	var prev *kmsg.StreamsGroupHeartbeatRequestTopology
	for i := 0; i < 2000; i++ {
		top := random()
		v := topologyFromRequest(top)
		if digestRequestTopology(top) != digestTopology(&v) {
			t.Fatalf("case %d: request and record digests differ for %+v", i, top)
		}
		if prev != nil {
			pv := topologyFromRequest(prev)
			if eq := topologyEqual(v, pv); eq != (digestRequestTopology(top) == digestRequestTopology(prev)) {
				t.Fatalf("case %d: topologies equal %v, digests disagree:\n%+v\n%+v", i, eq, top, prev)
			}
		}
		prev = top
	}
}
