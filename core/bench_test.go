package core

import (
	"fmt"
	"testing"
	"time"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// BenchmarkHeartbeatSteady measures one steady-state heartbeat (member at
// the target epoch, reporting the tasks it owns, nothing to change) plus the
// batch commit, in a Stable group of N members with 4 tasks each. The group
// is built by replaying records, so setup is the replay path. Reported in
// docs/BENCHMARKS.md as the ratio of the 1000-member to the 10-member case.
func BenchmarkHeartbeatSteady(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("members=%d", n), func(b *testing.B) { benchSteady(b, n, true) })
		// As a Kafka Streams client (and hbload) heartbeats once its
		// tasks are reported: the owned-task lists null.
		b.Run(fmt.Sprintf("members=%d/unreported", n), func(b *testing.B) { benchSteady(b, n, false) })
	}
}

func benchSteady(b *testing.B, n int, report bool) {
	c, reqs := steadyGroup(b, n)
	if !report {
		for _, r := range reqs {
			r.ActiveTasks, r.StandbyTasks, r.WarmupTasks = nil, nil, nil
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := reqs[i%n]
		out := c.streamsGroupHeartbeat(int64(1000+i), RequestID(i), ClientInfo{ClientID: "c", ClientHost: "h"}, req)
		if len(out.Responses) != 1 || len(out.Records) != 0 {
			b.Fatalf("not a steady heartbeat: %d records, %d responses", len(out.Records), len(out.Responses))
		}
		c.Commit()
	}
}

// BenchmarkHeartbeatSteadyRatio interleaves steady heartbeats to a
// 10-member and a 1000-member group in one loop and times each, so both
// sizes see the same machine load; it reports ns per heartbeat for each and
// their ratio (the number docs/BENCHMARKS.md quotes).
func BenchmarkHeartbeatSteadyRatio(b *testing.B) {
	small, smallReqs := steadyGroup(b, 10)
	large, largeReqs := steadyGroup(b, 1000)
	var tSmall, tLarge time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, side := range []struct {
			c    *Coordinator
			reqs []*kmsg.StreamsGroupHeartbeatRequest
			acc  *time.Duration
		}{{small, smallReqs, &tSmall}, {large, largeReqs, &tLarge}} {
			start := time.Now()
			side.c.streamsGroupHeartbeat(int64(1000+i), RequestID(i), ClientInfo{ClientID: "c", ClientHost: "h"}, side.reqs[i%len(side.reqs)])
			side.c.Commit()
			*side.acc += time.Since(start)
		}
	}
	b.ReportMetric(float64(tSmall.Nanoseconds())/float64(b.N), "ns/hb-10")
	b.ReportMetric(float64(tLarge.Nanoseconds())/float64(b.N), "ns/hb-1000")
	b.ReportMetric(float64(tLarge)/float64(tSmall), "ratio-1000:10")
}

// steadyGroup builds a Stable group of n members by replaying records, and
// the heartbeat each member sends in steady state.
func steadyGroup(b *testing.B, n int) (*Coordinator, []*kmsg.StreamsGroupHeartbeatRequest) {
	cfg := DefaultConfig()
	c, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	parts := int32(4 * n)
	c.updateTopics(0, []TopicMetadata{{Name: "in", Partitions: parts}})
	topo := topologyFromRequest(&kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
		{SubtopologyID: "0", SourceTopics: []string{"in"}}}})
	var recs []records.Record
	add := func(r records.Record) { recs = append(recs, r) }
	add(records.Record{Key: records.StreamsGroupTopologyKey{GroupID: "g"}, Value: topo})
	c2 := *c // metadata hash as a heartbeat would compute it
	add(records.Record{Key: records.StreamsGroupMetadataKey{GroupID: "g"}, Value: records.StreamsGroupMetadataValue{Epoch: 2, MetadataHash: c2.groupMetadataHash([]string{"in"}),
		ValidatedTopologyEpoch: 0, LastAssignmentConfigs: c.assignmentConfigs("g"), StoredDescriptionTopologyEpoch: -1, FailedDescriptionTopologyEpoch: -1}})
	var reqs []*kmsg.StreamsGroupHeartbeatRequest
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("member-%04d", i)
		m := newStreamsMember(id)
		m.clientID, m.clientHost, m.rebalanceTimeoutMs, m.topologyEpoch, m.processID = "c", "h", 30000, 0, fmt.Sprintf("p%d", i)
		m.epoch, m.prevEpoch = 2, 1
		tasks := taskSet{}
		for p := 0; p < 4; p++ {
			t := TaskID{"0", int32(4*i + p)}
			tasks[t] = struct{}{}
			m.assigned.active[t] = 2
		}
		add(records.Record{Key: records.StreamsGroupMemberMetadataKey{GroupID: "g", MemberID: id}, Value: memberMetadataValue(m)})
		add(targetRecord("g", id, tasksTuple{active: tasks, standby: taskSet{}, warmup: taskSet{}}))
		add(currentAssignmentRecord("g", m))
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.MemberEpoch = "g", id, 2
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = kmsgTasks(tasks), []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		reqs = append(reqs, req)
	}
	add(records.Record{Key: records.StreamsGroupTargetAssignmentMetadataKey{GroupID: "g"}, Value: records.StreamsGroupTargetAssignmentMetadataValue{AssignmentEpoch: 2, AssignmentTimestamp: 1}})
	for _, r := range recs {
		if err := c.Replay(r); err != nil {
			b.Fatal(err)
		}
	}
	c.Loaded(0)
	c.Commit()
	if g := c.groups["g"].(*streamsGroup); g.state != StreamsStable {
		b.Fatalf("group is %s, not Stable", g.state)
	}
	return c, reqs
}
