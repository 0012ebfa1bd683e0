package loop

import (
	"bytes"
	"fmt"
	goruntime "runtime"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	corerecords "github.com/coordhost/coordhost/core/records"
	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/runtime"
)

// TestTickFiresInSlices: a mass expiry — 300 members of one streams
// group whose sessions end at once — is fired by several Ticks of at
// most tickTimers timers each, and a shard with due timers left reports
// a deadline already passed, so the runtime queues the next Tick at once
// (the partition's other groups step in between). Every member expires
// in the end, as with one Tick.
func TestTickFiresInSlices(t *testing.T) {
	const members = 300
	c, later := expiringGroup(t, members)
	s := &shard{c: c}
	ticks := 0
	for {
		at, ok := s.NextDeadline()
		if !ok || at > later {
			break
		}
		before := len(c.TimerKeys())
		recs := s.Step(later, runtime.Tick{})
		// Encoded timer by timer, the Tick's records are still its
		// batch's, in order.
		if len(recs) != len(s.batch.records) {
			t.Fatalf("tick %d returned %d records, its batch holds %d", ticks, len(recs), len(s.batch.records))
		}
		for i, r := range s.batch.records {
			if k, v := corerecords.EncodeRecord(r); !bytes.Equal(k, recs[i].Key) || !bytes.Equal(v, recs[i].Value) || recs[i].Owner != r.Key.Group() {
				t.Fatalf("tick %d: record %d is not the batch's", ticks, i)
			}
		}
		c.Commit()
		s.batch = batch{}
		s.encoded, s.encodedHost = 0, 0
		ticks++
		if fired := before - len(c.TimerKeys()); fired > tickTimers {
			t.Fatalf("tick %d fired %d timers, more than %d", ticks, fired, tickTimers)
		}
		if ticks > 10*members {
			t.Fatal("the expiry does not end")
		}
	}
	if ticks < members/tickTimers {
		t.Errorf("%d members expired in %d ticks: not sliced", members, ticks)
	}
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{"mass"}
	resp := readCore[*kmsg.StreamsGroupDescribeResponse](nil, c, req)
	if n := len(resp.Groups[0].Members); n != 0 {
		t.Errorf("%d members left after the ticks, want 0", n)
	}
	t.Logf("%d members expired in %d ticks", members, ticks)
}

// expiringGroup is a core with one streams group of members members
// whose sessions have all ended at the returned time.
func expiringGroup(t testing.TB, members int) (*core.Coordinator, int64) {
	t.Helper()
	cfg := core.DefaultConfig()
	cfg.Streams.SessionTimeoutMs = 45000
	c, err := core.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := int64(1_000_000)
	for i := range members {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Version = 1
		proc := "p"
		req.Group, req.MemberID, req.RebalanceTimeoutMillis, req.ProcessID = "mass", fmt.Sprint("m", i), 30000, &proc
		req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
			{SubtopologyID: "0", SourceTopics: []string{"in"}}}}
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		if _, err := c.Step(now, core.Request{ID: core.RequestID(i + 1), Client: core.ClientInfo{ClientID: "c"}, Body: req}); err != nil {
			t.Fatal(err)
		}
		c.Commit()
	}
	return c, now + 10*60*1000 // every session over
}

// TestTickYieldsToWaitingGroup: while a group's event waits
// (runtime.Tick.Waiting reports true), a Tick ends after one timer, and
// fires no timer once it was told a group waits; the expiry still ends
// with every member gone. Before, a Tick asked only once it had run for
// 50 µs, a few fenced members, which the waiting group's event waited
// for.
func TestTickYieldsToWaitingGroup(t *testing.T) {
	const members = 300
	c, later := expiringGroup(t, members)
	s := &shard{c: c}
	asked := 0
	for ticks := 0; ; ticks++ {
		at, ok := s.NextDeadline()
		if !ok || at > later {
			break
		}
		if ticks > 10*members {
			t.Fatal("the expiry does not end")
		}
		before := len(c.TimerKeys())
		fired := -1 // when it was told a group waits
		s.Step(later, runtime.Tick{Waiting: func() bool {
			if fired >= 0 {
				t.Fatal("the Tick asked again after it was told a group waits")
			}
			asked++
			fired = before - len(c.TimerKeys())
			return true
		}})
		c.Commit()
		s.batch = batch{}
		s.encoded, s.encodedHost = 0, 0
		n := before - len(c.TimerKeys())
		if n < 1 {
			t.Fatalf("tick %d fired no timer", ticks)
		}
		if fired >= 0 && n != fired {
			t.Fatalf("tick %d fired %d timers after it was told a group waits", ticks, n-fired)
		}
		if n != 1 {
			t.Fatalf("tick %d fired %d timers while a group waited, want 1", ticks, n)
		}
	}
	if asked == 0 {
		t.Error("no Tick asked whether a group waits")
	}
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{"mass"}
	if n := len(readCore[*kmsg.StreamsGroupDescribeResponse](nil, c, req).Groups[0].Members); n != 0 {
		t.Errorf("%d members left after the ticks, want 0", n)
	}
}

// TestTickLeavesDueTimerToNextTick: with a 0 ms initial rebalance delay,
// the first timer of a classic group's join phase re-arms itself at once
// for the members that joined meanwhile (tryCompleteInitialRebalance);
// Kafka enqueues that timer's event behind the queued requests, so a
// JoinGroup stepped between the two Ticks is still in the first
// generation. The Tick stops at the re-armed timer instead of firing it.
func TestTickLeavesDueTimerToNextTick(t *testing.T) {
	cfg := core.DefaultConfig()
	cfg.Classic.InitialRebalanceDelayMs = 0
	c, err := core.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := int64(1_000_000)
	ids := map[string]string{}
	var next core.RequestID
	join := func(name string) {
		t.Helper()
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version, req.Group, req.MemberID = 9, "g", ids[name]
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis, req.ProtocolType = 10000, 30000, "consumer"
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}}}
		next++
		out, err := c.Step(now, core.Request{ID: next, Client: core.ClientInfo{ClientID: name}, Body: req})
		if err != nil {
			t.Fatal(err)
		}
		c.Commit()
		for _, r := range out.Responses {
			if j, ok := r.Msg.(*kmsg.JoinGroupResponse); ok && ids[name] == "" && r.Request == next {
				ids[name] = j.MemberID
			}
		}
	}
	state := func() (string, int) {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{"g"}
		g := readCore[*kmsg.DescribeGroupsResponse](nil, c, req).Groups[0]
		return g.State, len(g.Members)
	}
	s := &shard{c: c}
	tick := func() {
		s.Step(now, runtime.Tick{})
		c.Commit()
		s.batch = batch{}
		s.encoded, s.encodedHost = 0, 0
	}
	for _, m := range []string{"a", "b", "c", "a", "b"} { // first JoinGroups get MEMBER_ID_REQUIRED
		join(m)
	}
	tick() // b joined after a: the delay is re-armed, not completed
	if st, n := state(); st != "PreparingRebalance" {
		t.Fatalf("after the first tick: %s with %d members, want PreparingRebalance", st, n)
	}
	join("c") // queued before the re-armed timer's Tick
	tick()
	tick()
	if st, n := state(); st != "CompletingRebalance" || n != 3 {
		t.Fatalf("after the join phase: %s with %d members, want CompletingRebalance with 3", st, n)
	}
}

// TestRecordArena: records encoded by the shard's arena are
// records.EncodeRecord's bytes, tombstones have a nil value, a record
// larger than a chunk is whole, and appending to one record's key or
// value (its capacity is its length) leaves every other record as it
// was.
func TestRecordArena(t *testing.T) {
	big := strings.Repeat("x", 2*recordChunk)
	var recs []corerecords.Record
	for i := range 400 { // several chunks
		m := fmt.Sprint("member-", i)
		recs = append(recs,
			corerecords.Record{Key: corerecords.StreamsGroupMemberMetadataKey{GroupID: "g", MemberID: m},
				Value: corerecords.StreamsGroupMemberMetadataValue{ClientID: "c", ClientHost: "/h", ProcessID: "p", ClientTags: []corerecords.KeyValue{}}},
			corerecords.Record{Key: corerecords.StreamsGroupCurrentMemberAssignmentKey{GroupID: "g", MemberID: m}})
		if i == 200 {
			recs = append(recs, corerecords.Record{Key: corerecords.StreamsGroupMemberMetadataKey{GroupID: "g", MemberID: big},
				Value: corerecords.StreamsGroupMemberMetadataValue{ClientID: big, ClientTags: []corerecords.KeyValue{}}})
		}
	}
	var a recordArena
	type kv struct{ k, v []byte }
	var got []kv
	for _, r := range recs {
		k, v := a.encode(r)
		got = append(got, kv{k, v})
	}
	for i := range got { // scribble past each record's end
		_ = append(got[i].k, 0xff, 0xff, 0xff)
		if got[i].v != nil {
			_ = append(got[i].v, 0xff, 0xff, 0xff)
		}
	}
	for i, r := range recs {
		k, v := corerecords.EncodeRecord(r)
		if !bytes.Equal(got[i].k, k) || !bytes.Equal(got[i].v, v) || (got[i].v == nil) != (v == nil) {
			t.Fatalf("record %d (%T): key %x value %x, want %x %x", i, r.Key, got[i].k, got[i].v, k, v)
		}
	}
}

// TestCommittedRoundLendsItsRecords: the records array of a committed
// round, emptied, is the next round's batch's (a mass expiry's slice grew
// one from nothing, by doubling, each round); the next round's records
// are its own, encoded as before, and the committed round's array holds
// no record of it once handed on.
func TestCommittedRoundLendsItsRecords(t *testing.T) {
	const members = 200
	l := quotaLoop(t, assign.Builtins["sticky"].Native)
	c, later := expiringGroup(t, members)
	s := &shard{l: l, c: c, pending: map[core.RequestID]*call{}, configured: map[string]bool{}}
	var prev []corerecords.Record // the committed round's array
	for round := 0; ; round++ {
		if at, ok := s.NextDeadline(); !ok || at > later {
			break
		}
		recs := s.Step(later, runtime.Tick{})
		if len(s.batch.records) == 0 {
			t.Fatalf("round %d wrote no record", round)
		}
		if round > 0 && &s.batch.records[:1][0] != &prev[:1][0] {
			t.Fatalf("round %d: its batch's records are not the array the committed round lent", round)
		}
		for i, r := range s.batch.records {
			if k, v := corerecords.EncodeRecord(r); !bytes.Equal(k, recs[i].Key) || !bytes.Equal(v, recs[i].Value) {
				t.Fatalf("round %d: record %d is not the batch's", round, i)
			}
		}
		prev = s.batch.records
		s.Seal()
		s.Commit()
		for i, r := range prev[:cap(prev)] {
			if r.Key != nil {
				t.Fatalf("round %d: the committed array still holds record %d", round, i)
			}
		}
	}
}

// TestMassExpiryGarbagePerMember: the garbage a mass expiry makes per
// fenced member, through the shard's Ticks as the runtime hands them
// (each Tick's round sealed and committed), averaged over the members
// fenced after the first Tick (whose round grows the arrays kept for the
// rounds after it). Each fenced member's step allocated about 2.0 KB
// before (14 allocations; 1.1 KB and 6 since): output arrays of its own
// for every timer, a closure for every undo of a member or target, the
// group's metadata key boxed again, sort.Slice's closures for the target
// record it writes and the batch's events array grown by doubling; the garbage
// collector ran four or five times during a 0.15 s expiry of 10,000
// members, stretching the steps a waiting heartbeat waits behind.
func TestMassExpiryGarbagePerMember(t *testing.T) {
	const members = 2000
	l := quotaLoop(t, assign.Builtins["sticky"].Native)
	c, later := expiringGroup(t, members)
	s := &shard{l: l, c: c, pending: map[core.RequestID]*call{}, configured: map[string]bool{}}
	tick := func() bool {
		if at, ok := s.NextDeadline(); !ok || at > later {
			return false
		}
		s.Step(later, runtime.Tick{})
		s.Seal()
		s.Commit()
		return true
	}
	tick()
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{"mass"}
	left := len(readCore[*kmsg.StreamsGroupDescribeResponse](nil, c, req).Groups[0].Members)
	if left < members/2 {
		t.Fatalf("the first Tick fenced %d members of %d", members-left, members)
	}
	var before, after goruntime.MemStats
	goruntime.ReadMemStats(&before)
	for tick() {
	}
	goruntime.ReadMemStats(&after)
	if n := len(readCore[*kmsg.StreamsGroupDescribeResponse](nil, c, req).Groups[0].Members); n != 0 {
		t.Fatalf("%d members left after the ticks, want 0", n)
	}
	perMember := float64(after.TotalAlloc-before.TotalAlloc) / float64(left)
	allocs := float64(after.Mallocs-before.Mallocs) / float64(left)
	t.Logf("%d members fenced: %.0f bytes, %.1f allocations per member", left, perMember, allocs)
	const bound = 1300
	if perMember > bound {
		t.Errorf("a fenced member's garbage is %.0f bytes (%.1f allocations), more than %d", perMember, allocs, bound)
	}
}
