package host

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/core"
)

// TestNoteRecordsNamesConversions: a batch holding one group type's
// tombstone and the other type's metadata is a conversion, logged and kept
// as such (not as a deletion); member assignments are logged at DEBUG.
func TestNoteRecordsNamesConversions(t *testing.T) {
	var logs bytes.Buffer
	l := &Loop{history: newHistory(), log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	l.noteRecords([]core.Record{
		{Key: core.GroupMetadataKey{GroupID: "g"}},
		{Key: core.StreamsGroupMetadataKey{GroupID: "g"}, Value: core.StreamsGroupMetadataValue{Epoch: 5}},
		{Key: core.StreamsGroupCurrentMemberAssignmentKey{GroupID: "g", MemberID: "m"}, Value: core.StreamsGroupCurrentMemberAssignmentValue{
			MemberEpoch: 5, ActiveTasks: []core.TaskIDs{{SubtopologyID: "0", Partitions: []int32{1, 3}}, {SubtopologyID: "1", Partitions: []int32{2}}}}},
		{Key: core.GroupMetadataKey{GroupID: "gone"}},
	})
	l.noteRecords([]core.Record{
		{Key: core.StreamsGroupMetadataKey{GroupID: "g"}},
		{Key: core.GroupMetadataKey{GroupID: "g"}, Value: core.GroupMetadataValue{Generation: 7}},
	})
	events := strings.Join(l.history.get("g"), "\n")
	for _, want := range []string{"classic group converted to a streams group", "group epoch bumped to 5",
		"streams group converted to a classic group", "classic generation 7 stored"} {
		if !strings.Contains(events, want) {
			t.Errorf("events of g lack %q:\n%s", want, events)
		}
	}
	if strings.Contains(events, "deleted") {
		t.Errorf("a conversion was reported as a deletion:\n%s", events)
	}
	if got := l.history.get("gone"); len(got) != 1 || !strings.HasSuffix(got[0], "group deleted") {
		t.Errorf("events of a deleted group: %q", got)
	}
	if !strings.Contains(logs.String(), `active="0_1 0_3 1_2"`) {
		t.Errorf("member assignment not logged at DEBUG:\n%s", logs.String())
	}
}
