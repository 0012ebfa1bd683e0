package core

import (
	"os"
	"testing"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FuzzReplayThenServe replays an arbitrary sequence of records (picked by
// the fuzzer from the golden set plus a few live-built ones, with group and
// member ids unified) and then serves heartbeats, ticks and a describe: a
// log in any order must never make the coordinator panic — a bad record is
// an error from Replay, and whatever state results must be servable.
func FuzzReplayThenServe(f *testing.F) {
	data, err := os.ReadFile(goldenPath)
	if err != nil {
		f.Fatal(err)
	}
	var pool []records.Record
	for _, g := range parseGolden(f, data) {
		rec, err := records.DecodeRecord(g.key, g.value)
		if err != nil {
			f.Fatal(err)
		}
		pool = append(pool, retarget(rec))
	}
	f.Add([]byte{0, 4, 7, 10, 12, 15})
	f.Add([]byte{15, 12, 10, 4, 0})
	f.Add([]byte{5, 6, 1, 16, 9})
	f.Fuzz(func(t *testing.T, order []byte) {
		if len(order) > 64 {
			order = order[:64]
		}
		c, _ := New(DefaultConfig())
		c.updateTopics(0, []TopicMetadata{{Name: "orders", Partitions: 4}, {Name: "payments", Partitions: 4}, {Name: "in", Partitions: 2}})
		c.Commit()
		for _, b := range order {
			_ = c.Replay(pool[int(b)%len(pool)])
		}
		c.Loaded(1)
		c.Commit()
		for i, epoch := range []int32{0, 4, -2, 0, -1} {
			req := joinRequest("app", "m1")
			inst := "inst-1"
			req.InstanceID = &inst
			if epoch != 0 {
				req.MemberEpoch, req.Topology = epoch, nil
			}
			c.streamsGroupHeartbeat(int64(10+i), RequestID(i), ClientInfo{}, req)
			c.Commit()
		}
		c.tick(1 << 40)
		c.Commit()
		c.deleteGroups(1<<40, 9, &kmsg.DeleteGroupsRequest{Groups: []string{"app"}})
		c.Commit()
		c.streamsGroupDescribe(&kmsg.StreamsGroupDescribeRequest{Version: 1, Groups: []string{"app", "g"}})
		_ = c.Dump()
	})
}

// retarget moves a golden record to group "app" and member "m1" so the
// fuzzer's sequences collide on the same keys.
func retarget(r records.Record) records.Record {
	switch r.Key.(type) {
	case records.StreamsGroupMetadataKey:
		r.Key = records.StreamsGroupMetadataKey{GroupID: "app"}
	case records.StreamsGroupMemberMetadataKey:
		r.Key = records.StreamsGroupMemberMetadataKey{GroupID: "app", MemberID: "m1"}
	case records.StreamsGroupTargetAssignmentMetadataKey:
		r.Key = records.StreamsGroupTargetAssignmentMetadataKey{GroupID: "app"}
	case records.StreamsGroupTargetAssignmentMemberKey:
		r.Key = records.StreamsGroupTargetAssignmentMemberKey{GroupID: "app", MemberID: "m1"}
	case records.StreamsGroupCurrentMemberAssignmentKey:
		r.Key = records.StreamsGroupCurrentMemberAssignmentKey{GroupID: "app", MemberID: "m1"}
	case records.StreamsGroupTopologyKey:
		r.Key = records.StreamsGroupTopologyKey{GroupID: "app"}
	}
	return r
}
