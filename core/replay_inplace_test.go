package core

import (
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/core/records"
)

// While replaying, a record on an existing member changes the stored member
// in place and registers no undo (streams_group.go memberToChange,
// putMemberMetadata; consumer_group.go consumerMemberToChange). These tests
// apply member records that move instance ids, process ids and tasks both
// ways, replayed and through the live path (copies and undo), and require
// the same state, static maps and ownership indexes; and that a rollback of
// the live path's copies restores what the prefix alone built.

func strp(s string) *string { return &s }

func streamsMemberLog() []records.Record {
	meta := func(member, instance, process string) records.Record {
		v := records.StreamsGroupMemberMetadataValue{ClientID: "c", ClientHost: "h", RebalanceTimeoutMs: 1000, ProcessID: process}
		if instance != "" {
			v.InstanceID = strp(instance)
		}
		return records.Record{Key: records.StreamsGroupMemberMetadataKey{GroupID: "s", MemberID: member}, Value: v}
	}
	assign := func(member string, epoch int32, active, standby []int32) records.Record {
		return records.Record{Key: records.StreamsGroupCurrentMemberAssignmentKey{GroupID: "s", MemberID: member},
			Value: records.StreamsGroupCurrentMemberAssignmentValue{MemberEpoch: epoch, PreviousMemberEpoch: epoch - 1, State: 1,
				ActiveTasks:  []records.TaskIDs{{SubtopologyID: "0", Partitions: active}},
				StandbyTasks: []records.TaskIDs{{SubtopologyID: "0", Partitions: standby}}}}
	}
	return []records.Record{
		{Key: records.StreamsGroupMetadataKey{GroupID: "s"}, Value: records.StreamsGroupMetadataValue{Epoch: 2}},
		meta("m1", "i1", "p1"), assign("m1", 2, []int32{0, 1}, []int32{2}),
		meta("m2", "", "p2"), assign("m2", 2, []int32{2}, []int32{0}),
		// The prefix ends here (see TestReplayInPlaceRollback).
		meta("m1", "i2", "p1"),                  // new instance id, same process
		meta("m2", "i1", "p2"),                  // takes m1's old instance id
		meta("m1", "i2", "p3"),                  // new process: the indexes move
		assign("m1", 3, []int32{1}, []int32{2}), // tasks change
		{Key: records.StreamsGroupCurrentMemberAssignmentKey{GroupID: "s", MemberID: "m2"}},
		meta("m2", "", "p2"),
	}
}

func consumerMemberLog() []records.Record {
	meta := func(member, instance string, topics ...string) records.Record {
		v := records.ConsumerGroupMemberMetadataValue{ClientID: "c", ClientHost: "h", SubscribedTopicNames: topics, RebalanceTimeoutMs: 1000}
		if instance != "" {
			v.InstanceID = strp(instance)
		}
		return records.Record{Key: records.ConsumerGroupMemberMetadataKey{GroupID: "c", MemberID: member}, Value: v}
	}
	assign := func(member string, epoch int32, parts ...int32) records.Record {
		return records.Record{Key: records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: "c", MemberID: member},
			Value: records.ConsumerGroupCurrentMemberAssignmentValue{MemberEpoch: epoch, PreviousMemberEpoch: epoch - 1, State: 1,
				AssignedPartitions: []records.TopicPartitions{{TopicID: [16]byte{1}, Partitions: parts}}}}
	}
	return []records.Record{
		{Key: records.ConsumerGroupMetadataKey{GroupID: "c"}, Value: records.ConsumerGroupMetadataValue{Epoch: 2}},
		meta("m1", "i1", "t"), assign("m1", 2, 0, 1),
		meta("m2", "", "t"), assign("m2", 2, 2),
		meta("m1", "i2", "t", "u"),
		meta("m2", "i1", "t"),
		assign("m1", 3, 1),
		{Key: records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: "c", MemberID: "m2"}},
		meta("m2", "", "t"),
	}
}

// inPlaceState is Dump plus the maps Dump leaves out ("maps"), and for
// each group the same maps rebuilt from its members alone ("rebuilt").
func inPlaceState(c *Coordinator) string {
	s := c.Dump()
	for _, id := range c.groupIDs() {
		switch g := c.groups[id].(type) {
		case *streamsGroup:
			fresh := newStreamsGroup(id)
			for _, m := range g.members {
				fresh.swapMember(nil, m)
			}
			for _, x := range []*streamsGroup{g, fresh} {
				s += fmt.Sprintf("static %v active %v standby %v\n", x.staticMembers, x.activeOwner, x.standbyOwners)
			}
		case *consumerGroup:
			fresh := newConsumerGroup(id)
			for _, m := range g.members {
				fresh.swapMember(nil, m)
			}
			for _, x := range []*consumerGroup{g, fresh} {
				s += fmt.Sprintf("static %v owner %v\n", x.staticMembers, x.owner)
			}
		}
	}
	return s
}

// checkRebuilt fails unless each group's maps equal the ones rebuilt from
// its members (the last two lines of its part of inPlaceState).
func checkRebuilt(t *testing.T, state string) {
	t.Helper()
	lines := strings.Split(state, "\n")
	for i := 1; i < len(lines); i++ {
		if strings.HasPrefix(lines[i], "static ") && strings.HasPrefix(lines[i-1], "static ") && lines[i] != lines[i-1] {
			t.Fatalf("maps differ from the ones the members define:\n%s", state)
		}
	}
}

func applyInPlaceLog(t *testing.T, log []records.Record, replay bool) *Coordinator {
	t.Helper()
	c, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range log {
		if replay {
			err = c.Replay(r)
		} else {
			err = c.apply(r)
		}
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	return c
}

func TestReplayInPlaceEqualsLive(t *testing.T) {
	for name, log := range map[string][]records.Record{"streams": streamsMemberLog(), "consumer": consumerMemberLog()} {
		t.Run(name, func(t *testing.T) {
			for n := 1; n <= len(log); n++ {
				replayed, live := applyInPlaceLog(t, log[:n], true), applyInPlaceLog(t, log[:n], false)
				r, l := inPlaceState(replayed), inPlaceState(live)
				if r != l {
					t.Fatalf("after %d records: replayed\n%s\nlive\n%s", n, r, l)
				}
				checkRebuilt(t, r)
				if len(replayed.undo) != 0 {
					t.Fatalf("after %d records: replay registered %d undo entries", n, len(replayed.undo))
				}
			}
		})
	}
}

func TestReplayInPlaceRollback(t *testing.T) {
	for name, log := range map[string][]records.Record{"streams": streamsMemberLog(), "consumer": consumerMemberLog()} {
		t.Run(name, func(t *testing.T) {
			const prefix = 5
			want := inPlaceState(applyInPlaceLog(t, log[:prefix], true))
			c := applyInPlaceLog(t, log[:prefix], true)
			before := maps.Clone(c.groups)
			for i, r := range log[prefix:] {
				if err := c.apply(r); err != nil {
					t.Fatalf("record %d: %v", prefix+i, err)
				}
			}
			if inPlaceState(c) == want {
				t.Fatal("the suffix changed nothing")
			}
			c.Rollback()
			got := inPlaceState(c)
			if got != want {
				t.Fatalf("after rollback\n%s\nwant\n%s", got, want)
			}
			checkRebuilt(t, got)
			if !maps.Equal(before, c.groups) {
				t.Fatal("rollback left other group values")
			}
		})
	}
}

// BenchmarkReplayMemberRecords replays member records in the shape a
// rebalance writes them (streams and consumer groups of 50 members, each
// member's metadata, target and current assignment written again at every
// one of 4 epochs) into a fresh Coordinator, and reports the CPU and
// allocations of apply a record.
//
//	go test -run '^$' -bench ReplayMemberRecords -benchmem ./core
func BenchmarkReplayMemberRecords(b *testing.B) {
	var log []records.Record
	for g := range 20 {
		sg, cg := fmt.Sprintf("s%d", g), fmt.Sprintf("c%d", g)
		for epoch := int32(1); epoch <= 4; epoch++ {
			log = append(log,
				records.Record{Key: records.StreamsGroupMetadataKey{GroupID: sg}, Value: records.StreamsGroupMetadataValue{Epoch: epoch}},
				records.Record{Key: records.ConsumerGroupMetadataKey{GroupID: cg}, Value: records.ConsumerGroupMetadataValue{Epoch: epoch}})
			for m := range int32(50) {
				member := fmt.Sprintf("m%d", m)
				tasks := []records.TaskIDs{{SubtopologyID: "0", Partitions: []int32{(m + epoch) % 50}}}
				parts := []records.TopicPartitions{{TopicID: [16]byte{1}, Partitions: []int32{(m + epoch) % 50}}}
				log = append(log,
					records.Record{Key: records.StreamsGroupMemberMetadataKey{GroupID: sg, MemberID: member},
						Value: records.StreamsGroupMemberMetadataValue{ClientID: "c", ClientHost: "h", RebalanceTimeoutMs: 1000, TopologyEpoch: 1, ProcessID: member}},
					records.Record{Key: records.StreamsGroupTargetAssignmentMemberKey{GroupID: sg, MemberID: member},
						Value: records.StreamsGroupTargetAssignmentMemberValue{ActiveTasks: tasks}},
					records.Record{Key: records.StreamsGroupCurrentMemberAssignmentKey{GroupID: sg, MemberID: member},
						Value: records.StreamsGroupCurrentMemberAssignmentValue{MemberEpoch: epoch, PreviousMemberEpoch: epoch - 1, State: 1, ActiveTasks: tasks}},
					records.Record{Key: records.ConsumerGroupMemberMetadataKey{GroupID: cg, MemberID: member},
						Value: records.ConsumerGroupMemberMetadataValue{ClientID: "c", ClientHost: "h", SubscribedTopicNames: []string{"t"}, RebalanceTimeoutMs: 1000}},
					records.Record{Key: records.ConsumerGroupTargetAssignmentMemberKey{GroupID: cg, MemberID: member},
						Value: records.ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: parts}},
					records.Record{Key: records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: cg, MemberID: member},
						Value: records.ConsumerGroupCurrentMemberAssignmentValue{MemberEpoch: epoch, PreviousMemberEpoch: epoch - 1, State: 1, AssignedPartitions: parts}})
			}
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		c, err := New(DefaultConfig())
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range log {
			if err := c.Replay(r); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(log)), "ns/record")
}
