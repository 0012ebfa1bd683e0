package core

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// hugeTopologySubs is the size of the benchmarks' topology: 40,000
// subtopologies of one source topic each, 80,000 entries, under the
// default streams.max.topology.size.
const hugeTopologySubs = 40000

// hugeTopologyJoin is member's join to group with the benchmarks' topology.
func hugeTopologyJoin(group, member string) *kmsg.StreamsGroupHeartbeatRequest {
	req := limitJoin(group, 0)
	req.MemberID = member
	subs := make([]kmsg.StreamsGroupHeartbeatRequestTopologySubtopology, hugeTopologySubs)
	for i := range subs {
		subs[i] = kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{SubtopologyID: fmt.Sprint(i), SourceTopics: []string{"in"}}
	}
	req.Topology.Subtopologies = subs
	return req
}

// BenchmarkHugeTopologyHeartbeat measures the step of a heartbeat carrying
// a topology of 80,000 entries, each iteration rolled back so the input is
// fixed: "join" is a new member of a group that stores the same topology
// (the comparison), "store" the first member of a new group (the topology
// stored and configured against the topic image). "whole" is
// StreamsGroupHeartbeat (the preparation inside the step, as before it
// could be done ahead), "step" is streamsGroupHeartbeatPrepared on a
// request prepared beforehand, and "prepare" is PrepareStreamsHeartbeat
// alone (the work a host does on the request's connection).
func BenchmarkHugeTopologyHeartbeat(b *testing.B) {
	c, err := New(DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	c.updateTopics(0, []TopicMetadata{{Name: "in", ID: [16]byte{1}, Partitions: 4}})
	c.Commit()
	if out := c.streamsGroupHeartbeat(1, 1, ClientInfo{}, hugeTopologyJoin("g", "m0")); len(out.Records) == 0 {
		b.Fatal("the first join stored nothing")
	}
	c.Commit()
	for _, cs := range []struct{ name, group string }{{"join", "g"}, {"store", "new"}} {
		req := hugeTopologyJoin(cs.group, "m1")
		b.Run(cs.name+"/whole", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				checkHugeJoin(b, c.streamsGroupHeartbeat(int64(10+i), RequestID(i), ClientInfo{}, req))
				c.Rollback()
			}
		})
		p := PrepareStreamsHeartbeat(req)
		b.Run(cs.name+"/step", func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				checkHugeJoin(b, c.streamsGroupHeartbeatPrepared(int64(10+i), RequestID(i), ClientInfo{}, p))
				c.Rollback()
			}
		})
	}
	req := hugeTopologyJoin("g", "m1")
	b.Run("prepare", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			PrepareStreamsHeartbeat(req)
		}
	})
}

func checkHugeJoin(b *testing.B, out Output) {
	if len(out.Records) == 0 {
		b.Fatalf("the join wrote no record: %+v", out.Responses)
	}
}

// BenchmarkPrepareSmallJoin is PrepareStreamsHeartbeat of a join whose
// topology has 64 subtopologies of one source topic (the flood tests'
// join): the garbage every join leaves before it is queued.
func BenchmarkPrepareSmallJoin(b *testing.B) {
	req := limitJoin("g", 0)
	req.MemberID = "m1"
	req.Topology.Subtopologies = nil
	for i := 0; i < 64; i++ {
		req.Topology.Subtopologies = append(req.Topology.Subtopologies, kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
			SubtopologyID: fmt.Sprint(i), SourceTopics: []string{fmt.Sprintf("t%02d", i)}})
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		PrepareStreamsHeartbeat(req)
	}
}
