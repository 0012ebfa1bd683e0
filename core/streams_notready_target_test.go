package core

import (
	"fmt"
	"reflect"
	goruntime "runtime"
	"testing"
)

// notReadyGroup is a coordinator with streams group "g" of n members
// whose topology reads a topic the image lacks: the group is not ready,
// and every join writes the empty target (writeTarget with none).
func notReadyGroup(t *testing.T, n int) *Coordinator {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Streams.InitialRebalanceDelayMs, cfg.Streams.AssignmentIntervalMs = 0, 0
	cfg.Streams.MaxSize = 100000
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		req := limitJoin("g", 64)
		req.MemberID = fmt.Sprintf("m%05d", i)
		if out := c.streamsGroupHeartbeat(int64(1+i), RequestID(i), ClientInfo{}, req); len(out.Records) == 0 {
			t.Fatalf("join %d wrote nothing: %+v", i, out.Responses)
		}
		c.Commit()
	}
	return c
}

// TestNotReadyTargetWritesOnlyChanges: the target a join to a group
// whose topology is not ready writes (writeTarget with no targets) is
// the member-by-member one's with no tasks for anyone — the same records
// in the same order, for
// members with an empty target, with tasks, and without one — and the
// join does not copy every member id to sort them: a join to a group of
// 4,000 members allocated 16 bytes a member more than one to a group of
// 100 (the ids of all of them, sorted, each compared with a new empty
// target), which grew the flooded group's every join on its partition.
func TestNotReadyTargetWritesOnlyChanges(t *testing.T) {
	c := notReadyGroup(t, 40)
	g := c.groups["g"].(*streamsGroup)
	c.begin(1000)
	tasks := tasksTuple{active: taskSet{{Subtopology: "0", Partition: 1}: {}}, standby: taskSet{}, warmup: taskSet{{Subtopology: "1", Partition: 0}: {}}}
	for _, id := range []string{"m00031", "m00007"} {
		c.setTarget(g, id, &tasks)
	}
	for _, id := range []string{"m00012", "m00003"} {
		c.setTarget(g, id, nil)
	}
	c.end()
	c.Commit()
	c.begin(1001)
	writeTargetPerMember(c, g, 77, map[string]tasksTuple{})
	want := c.end()
	c.Rollback()
	c.begin(1001)
	c.writeTarget(g, 77, nil)
	got := c.end()
	c.Rollback()
	if len(want.Records) != 5 { // four members and the metadata
		t.Fatalf("the member-by-member target wrote %d records, want 5", len(want.Records))
	}
	if !reflect.DeepEqual(got.Records, want.Records) {
		t.Fatalf("writeTarget wrote\n%+v\nwant the member-by-member target's\n%+v", got.Records, want.Records)
	}

	perJoin := func(n int) uint64 {
		c := notReadyGroup(t, n)
		req := limitJoin("g", 64)
		req.MemberID = "new"
		p := PrepareStreamsHeartbeat(req)
		const joins = 20
		var before, after goruntime.MemStats
		goruntime.ReadMemStats(&before)
		for i := 0; i < joins; i++ {
			if out := c.streamsGroupHeartbeatPrepared(int64(100000+i), RequestID(1e6+i), ClientInfo{}, p); len(out.Records) != 5 {
				t.Fatalf("the join wrote %d records, want 5 (the member, its target, the epochs)", len(out.Records))
			}
			c.Rollback()
		}
		goruntime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / joins
	}
	small, large := perJoin(100), perJoin(4000)
	t.Logf("bytes allocated a join: %d in a group of 100 members, %d in one of 4,000", small, large)
	if large > small+16<<10 {
		t.Fatalf("a join allocated %d bytes in a group of 4,000 members, %d in one of 100: it copies every member", large, small)
	}
}

// writeTargetPerMember is the target written member by member, every
// member id sorted and each target compared as it is written: what
// writeTarget writes, the reference its records are checked against.
func writeTargetPerMember(c *Coordinator, g *streamsGroup, epoch int32, targets map[string]tasksTuple) {
	for _, id := range g.sortedMemberIDs() {
		t, ok := targets[id]
		if !ok {
			t = emptyTuple()
		}
		c.writeMemberTarget(g, id, t)
	}
	c.writeTargetEpoch(g, epoch)
}
