package loop

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/core/records"
	"github.com/coordhost/coordhost/host/admin"
	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/store"
	"github.com/coordhost/coordhost/host/wire"
)

// TestNoteCommittedDescribesEvents: core's events become the group's
// history and INFO log lines (conversions named as such, never as
// deletions); member joins and assignments (a consumer member's target
// and current assignment too) are logged at DEBUG only.
func TestNoteCommittedDescribesEvents(t *testing.T) {
	var logs bytes.Buffer
	l := &Loop{history: newHistory(), log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	l.noteCommitted(&batch{
		events: []core.Event{
			{Kind: core.EventGroupConverted, Group: "g", Reason: core.ReasonOnlineToStreams, Epoch: 4},
			{Kind: core.EventMemberJoined, Group: "g", Member: "m"},
			{Kind: core.EventEpochBumped, Group: "g", Reason: core.ReasonMemberJoined, Epoch: 5},
			{Kind: core.EventMemberFenced, Group: "g", Member: "old", Reason: core.ReasonSessionTimeout, MemberEpoch: -1},
			{Kind: core.EventGroupDeleted, Group: "gone"},
		},
		records: []records.Record{
			{Key: records.StreamsGroupCurrentMemberAssignmentKey{GroupID: "g", MemberID: "m"}, Value: records.StreamsGroupCurrentMemberAssignmentValue{
				MemberEpoch: 5, ActiveTasks: []records.TaskIDs{{SubtopologyID: "0", Partitions: []int32{1, 3}}, {SubtopologyID: "1", Partitions: []int32{2}}}}},
			{Key: records.ConsumerGroupMemberMetadataKey{GroupID: "c", MemberID: "cm"}, Value: records.ConsumerGroupMemberMetadataValue{ClientID: "n1"}},
			{Key: records.ConsumerGroupTargetAssignmentMemberKey{GroupID: "c", MemberID: "cm"}, Value: records.ConsumerGroupTargetAssignmentMemberValue{
				TopicPartitions: []records.TopicPartitions{{TopicID: [16]byte{0xab, 0xcd, 0, 1, 9}, Partitions: []int32{0, 4}}}}},
			{Key: records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: "c", MemberID: "cm"}, Value: records.ConsumerGroupCurrentMemberAssignmentValue{
				MemberEpoch: 8, PreviousMemberEpoch: 7, State: 2,
				AssignedPartitions:          []records.TopicPartitions{{TopicID: [16]byte{0xab, 0xcd, 0, 1, 9}, Partitions: []int32{0}}},
				PartitionsPendingRevocation: []records.TopicPartitions{{TopicID: [16]byte{0xab, 0xcd, 0, 1, 9}, Partitions: []int32{2, 3}}}}},
		},
	})
	l.noteCommitted(&batch{events: []core.Event{
		{Kind: core.EventGroupConverted, Group: "g", Reason: core.ReasonOnlineToClassic, Epoch: 6},
		{Kind: core.EventGenerationStored, Group: "g", Reason: core.ReasonLeaderAssignment, Epoch: 7},
	}})
	history := strings.Join(l.history.get("g"), "\n")
	for _, want := range []string{"classic group converted to a streams group (online-classic-to-streams)",
		"group epoch bumped to 5 (member-joined)", "member old fenced (session-timeout)",
		"streams group converted to a classic group", "classic generation 7 stored (leader-assignment)"} {
		if !strings.Contains(history, want) {
			t.Errorf("history of g lacks %q:\n%s", want, history)
		}
	}
	if strings.Contains(history, "deleted") || strings.Contains(history, "member-joined g/m") {
		t.Errorf("a conversion reported as a deletion, or a member join kept in the history:\n%s", history)
	}
	if got := l.history.get("gone"); len(got) != 1 || !strings.HasSuffix(got[0], "group deleted") {
		t.Errorf("events of a deleted group: %q", got)
	}
	out := logs.String()
	for _, want := range []string{`level=INFO msg="group event" group=g event="group epoch bumped to 5 (member-joined)"`,
		`level=DEBUG msg="member event" group=g member=m event=member-joined`, `active="0_1 0_3 1_2"`,
		`msg="consumer member metadata" group=c member=cm client=n1 classic=false`,
		`msg="consumer member target" group=c member=cm partitions=abcd0001:0,4`,
		`msg="consumer member assignment" group=c member=cm epoch=8 previous_epoch=7 state=2 assigned=abcd0001:0 revoking=abcd0001:2,3`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if l.stats.rebalances.Load() != 1 || l.stats.fenced.Load() != 1 {
		t.Errorf("counted %d rebalances and %d fenced members, want 1 and 1", l.stats.rebalances.Load(), l.stats.fenced.Load())
	}
}

// TestLoopReportsOnlyCommittedEvents: a join whose batch is stored shows
// core's events in the log and the history; after the store fails, a
// join's rolled-back batch reports nothing.
func TestLoopReportsOnlyCommittedEvents(t *testing.T) {
	dir := t.TempDir()
	cfg := core.DefaultConfig()
	cfg.Streams.InitialRebalanceDelayMs = 0
	c, err := core.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Step(time.Now().UnixMilli(), core.Topics{Topics: []core.TopicMetadata{{Name: "in", ID: [16]byte{1}, Partitions: 4}}})
	c.Commit()
	st, err := store.Open(filepath.Join(dir, "coordhost.db"))
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuf{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	asg := assign.New(context.Background(), t.TempDir(), "sticky", plugin.Config{}, log)
	l, err := New(Deps{Core: c, Store: st, Assignors: asg, Metrics: admin.NewMetrics(), Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = l.Shutdown(ctx)
		_ = st.Close()
	})
	join := func(group string) {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Version = 1
		proc := "p"
		req.Group, req.MemberID, req.RebalanceTimeoutMillis, req.ProcessID = group, "m1", 30000, &proc
		req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
			{SubtopologyID: "0", SourceTopics: []string{"in"}}}}
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := l.Handle(ctx, &wire.Request{Key: req.Key(), Version: req.Version, Body: req}); err != nil {
			t.Fatal(err)
		}
	}
	join("stored")
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(logs.String(), "target assignment installed at epoch 2 (assignor)") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if out := logs.String(); !strings.Contains(out, `group=stored event="group epoch bumped to 2 (member-joined)"`) ||
		!strings.Contains(out, "target assignment installed at epoch 2 (assignor)") {
		t.Fatalf("committed join not reported:\n%s", out)
	}
	if err := st.Close(); err != nil { // every append now fails
		t.Fatal(err)
	}
	join("lost")
	if out := logs.String(); !strings.Contains(out, "store append failed") || strings.Contains(out, "group=lost") {
		t.Fatalf("a rolled-back batch was reported:\n%s", out)
	}
	if h := l.history.get("lost"); len(h) != 0 {
		t.Fatalf("history of a rolled-back group: %q", h)
	}
}

// lockedBuf is a log sink safe for the loop's goroutines.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *lockedBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *lockedBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDescribeEventLines: the history and log line of each kind of
// event, with and without a reason.
func TestDescribeEventLines(t *testing.T) {
	for _, c := range []struct {
		e    core.Event
		want string
	}{
		{core.Event{Kind: core.EventEpochBumped, Epoch: 5, Reason: core.ReasonMemberJoined}, "group epoch bumped to 5 (member-joined)"},
		{core.Event{Kind: core.EventEpochBumped, Epoch: -3}, "group epoch bumped to -3"},
		{core.Event{Kind: core.EventTargetAssigned, Epoch: 7}, "target assignment installed at epoch 7"},
		{core.Event{Kind: core.EventAssignorResultDiscarded, Epoch: 2, Reason: core.ReasonMemberJoined}, "assignor result for epoch 2 discarded (member-joined)"},
		{core.Event{Kind: core.EventGenerationStored, Epoch: 9}, "classic generation 9 stored"},
		{core.Event{Kind: core.EventRebalanceStarted, Epoch: 4, Reason: core.ReasonMemberJoined}, "classic rebalance started (generation 4)"},
		{core.Event{Kind: core.EventGroupDeleted, Reason: core.ReasonMemberJoined}, "group deleted"},
		{core.Event{Kind: core.EventGroupCreated}, "group created"},
		{core.Event{Kind: core.EventGroupConverted, Reason: core.ReasonOfflineToStreams}, "classic group converted to a streams group (" + string(core.ReasonOfflineToStreams) + ")"},
		{core.Event{Kind: core.EventGroupConverted, Reason: core.ReasonOnlineToClassic}, "streams group converted to a classic group (" + string(core.ReasonOnlineToClassic) + ")"},
		{core.Event{Kind: core.EventMemberLeft, Member: "m1"}, "member m1 left"},
		{core.Event{Kind: core.EventMemberFenced, Member: "m2", Reason: core.ReasonSessionTimeout}, "member m2 fenced (session-timeout)"},
	} {
		if got := describeEvent(c.e); got != c.want {
			t.Errorf("%v: %q, want %q", c.e, got, c.want)
		}
	}
	other := core.Event{Kind: core.EventTopologyStored, Group: "g", Epoch: 3}
	if got := describeEvent(other); got != other.String() {
		t.Errorf("%v: %q, want its String", other, got)
	}
}

// TestHistoryKeepsTheLastLines: a group's history holds its last limit
// lines, oldest first, events and plain lines in the order noted.
func TestHistoryKeepsTheLastLines(t *testing.T) {
	h := newHistory()
	at := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	for i := range 3*h.limit + 7 {
		if i%3 == 0 {
			h.note("g", fmt.Sprint("line ", i))
		} else {
			h.noteEvent(at, core.Event{Kind: core.EventEpochBumped, Group: "g", Epoch: int32(i)})
		}
	}
	got := h.get("g")
	if len(got) != h.limit {
		t.Fatalf("%d lines, want %d", len(got), h.limit)
	}
	for j, line := range got {
		i := 2*h.limit + 7 + j
		want := fmt.Sprint("group epoch bumped to ", i)
		if i%3 == 0 {
			want = fmt.Sprint("line ", i)
		} else if !strings.HasPrefix(line, "2026-12-05T10:00:00Z ") {
			t.Errorf("line %d: %q, want the time it was noted first", j, line)
		}
		if !strings.HasSuffix(line, " "+want) {
			t.Errorf("line %d: %q, want %q", j, line, want)
		}
	}
	if got := h.get("other"); len(got) != 0 {
		t.Errorf("a group never noted has lines %q", got)
	}
}

// TestNoteCommittedAllocatesNothingUnlogged: with a log that takes no
// INFO line, a fence's events (after its group's first) cost no
// allocation: no line is formatted until the history is read.
func TestNoteCommittedAllocatesNothingUnlogged(t *testing.T) {
	l := &Loop{history: newHistory(), log: slog.New(slog.DiscardHandler)}
	b := &batch{events: []core.Event{
		{Kind: core.EventMemberFenced, Group: "g", Member: "m", Reason: core.ReasonSessionTimeout, MemberEpoch: -1},
		{Kind: core.EventEpochBumped, Group: "g", Reason: core.ReasonMemberJoined, Epoch: 5},
	}}
	l.noteCommitted(b)
	if n := testing.AllocsPerRun(100, func() { l.noteCommitted(b) }); n != 0 {
		t.Errorf("%v allocations noting a fence's events", n)
	}
	if got := l.history.get("g"); len(got) != 20 || !strings.HasSuffix(got[19], "group epoch bumped to 5 (member-joined)") {
		t.Errorf("history %q", got)
	}
}
