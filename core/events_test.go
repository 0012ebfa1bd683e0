package core

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// eventsExplain checks that an Output's events account for its records:
// every record's group has an event, and a member's record (metadata,
// current assignment, target) has an event naming that member or a
// group-level event that rewrites every member's records (deletion,
// conversion, a new target). The property, scenario and simulation tests
// run it on every Output they handle.
func eventsExplain(o Output) error {
	type gm struct{ group, member string }
	named := map[gm]bool{}
	for _, e := range o.Events {
		if e.Kind == "" || e.Group == "" {
			return fmt.Errorf("event without kind or group: %+v", e)
		}
		named[gm{e.Group, e.Member}] = true
		if e.Member == "" {
			switch e.Kind {
			case EventGroupDeleted, EventGroupConverted, EventTargetAssigned, EventTargetPart:
				named[gm{e.Group, "*"}] = true
			}
		}
	}
	hasGroup := func(g string) bool {
		for k := range named {
			if k.group == g {
				return true
			}
		}
		return false
	}
	for _, r := range o.Records {
		g := r.Key.Group()
		member := recordMember(r.Key)
		switch {
		case !hasGroup(g):
			return fmt.Errorf("record %s has no event for group %q; events: %s", fmtRecord(r), g, fmtEvents(o.Events))
		case member != "" && !named[gm{g, member}] && !named[gm{g, "*"}]:
			return fmt.Errorf("record %s has no event for member %q; events: %s", fmtRecord(r), member, fmtEvents(o.Events))
		}
	}
	return nil
}

// recordMember is the member a record key belongs to ("" for group records).
func recordMember(k records.RecordKey) string {
	switch kk := k.(type) {
	case records.StreamsGroupMemberMetadataKey:
		return kk.MemberID
	case records.StreamsGroupTargetAssignmentMemberKey:
		return kk.MemberID
	case records.StreamsGroupCurrentMemberAssignmentKey:
		return kk.MemberID
	case records.ConsumerGroupMemberMetadataKey:
		return kk.MemberID
	case records.ConsumerGroupTargetAssignmentMemberKey:
		return kk.MemberID
	case records.ConsumerGroupCurrentMemberAssignmentKey:
		return kk.MemberID
	}
	return ""
}

func fmtEvents(es []Event) string {
	var parts []string
	for _, e := range es {
		parts = append(parts, e.String())
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// TestEventsExplainRejects: the checker finds a record nothing explains, a
// member record explained only for another member, and accepts group-level
// coverage.
func TestEventsExplainRejects(t *testing.T) {
	meta := records.Record{Key: records.StreamsGroupMetadataKey{GroupID: "g"}, Value: records.StreamsGroupMetadataValue{Epoch: 2}}
	cur := records.Record{Key: records.StreamsGroupCurrentMemberAssignmentKey{GroupID: "g", MemberID: "m1"}, Value: records.StreamsGroupCurrentMemberAssignmentValue{MemberEpoch: 2}}
	cases := []struct {
		name string
		o    Output
		ok   bool
	}{
		{"no events", Output{Records: []records.Record{meta}}, false},
		{"other group", Output{Records: []records.Record{meta}, Events: []Event{{Kind: EventEpochBumped, Group: "h"}}}, false},
		{"group event", Output{Records: []records.Record{meta}, Events: []Event{{Kind: EventEpochBumped, Group: "g"}}}, true},
		{"other member", Output{Records: []records.Record{cur}, Events: []Event{{Kind: EventMemberReconciled, Group: "g", Member: "m2"}}}, false},
		{"bump does not cover members", Output{Records: []records.Record{cur}, Events: []Event{{Kind: EventEpochBumped, Group: "g"}}}, false},
		{"member event", Output{Records: []records.Record{cur}, Events: []Event{{Kind: EventMemberReconciled, Group: "g", Member: "m1"}}}, true},
		{"target covers members", Output{Records: []records.Record{cur}, Events: []Event{{Kind: EventTargetAssigned, Group: "g"}}}, true},
		{"events alone", Output{Events: []Event{{Kind: EventProbe, Group: "g"}}}, true},
	}
	for _, tc := range cases {
		if err := eventsExplain(tc.o); (err == nil) != tc.ok {
			t.Errorf("%s: eventsExplain = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// TestEventsRevertWithFailedRequest: a heartbeat that fails after writing
// records (a second member joining with a changed topology, refused after
// its metadata was written) takes back its events with them.
func TestEventsRevertWithFailedRequest(t *testing.T) {
	c, _ := New(DefaultConfig())
	c.updateTopics(0, []TopicMetadata{{Name: "in", Partitions: 2}})
	o := c.streamsGroupHeartbeat(0, 1, ClientInfo{}, joinRequest("g", "m1"))
	if err := eventsExplain(o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fmtEvents(o.Events), "member-joined g/m1") {
		t.Fatalf("join events: %s", fmtEvents(o.Events))
	}
	c.Commit()
	req := joinRequest("g", "m2")
	req.Topology.Subtopologies[0].SourceTopics = []string{"other"}
	o = c.streamsGroupHeartbeat(0, 2, ClientInfo{}, req)
	if r := o.Responses[0].Msg.(*kmsg.StreamsGroupHeartbeatResponse); r.ErrorCode == 0 {
		t.Fatal("a changed topology was accepted")
	}
	if len(o.Records) != 0 || len(o.Events) != 0 {
		t.Fatalf("failed heartbeat kept %d records and events %s", len(o.Records), fmtEvents(o.Events))
	}
}

// TestEventKindsInTraces: every event kind shows up in some scenario
// trace, so none is dead or untested.
func TestEventKindsInTraces(t *testing.T) {
	seen := map[string]bool{}
	err := filepath.WalkDir("testdata", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if i := strings.Index(line, "event "); i >= 0 && (i == 0 || line[0] == '@') {
				if f := strings.Fields(line[i+len("event "):]); len(f) > 0 {
					seen[f[0]] = true
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []EventKind{EventGroupCreated, EventGroupDeleted, EventGroupConverted, EventMemberJoined,
		EventMemberUpdated, EventMemberLeft, EventMemberFenced, EventMemberReconciled, EventTopologyStored,
		EventEpochBumped, EventTargetAssigned, EventAssignorResultDiscarded, EventProbe, EventWarmupPromoted,
		EventRebalanceStarted, EventGenerationStored} {
		if !seen[string(k)] {
			t.Errorf("no scenario trace shows a %s event", k)
		}
	}
}
