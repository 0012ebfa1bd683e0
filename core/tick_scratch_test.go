package core

import (
	"bytes"
	"fmt"
	"reflect"
	"testing"
	"unsafe"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// expiringStreamsGroup is a Coordinator with one streams group of n
// members that joined one a step, and a time at which every session has
// run out.
func expiringStreamsGroup(t *testing.T, n int) (*Coordinator, int64) {
	t.Helper()
	c, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	now := int64(1_000_000)
	for i := range n {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.RebalanceTimeoutMillis = 1, "mass", fmt.Sprint("m", i), 30000
		req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
			{SubtopologyID: "0", SourceTopics: []string{"in"}}}}
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		if _, err := c.Step(now, Request{ID: RequestID(i + 1), Body: req}); err != nil {
			t.Fatal(err)
		}
		c.Commit()
	}
	return c, now + 10*60*1000
}

// TestScratchTickSameOutput: a mass expiry fired with scratch Ticks
// gives, timer by timer, the records (byte for byte), events and timer
// changes plain Ticks give, and leaves the same state; a fenced member's
// output reuses the arrays lent to the Tick before it instead of
// allocating its own. A scratch fence rolled back leaves the state as it
// was (the member and target undos are typed entries).
func TestScratchTickSameOutput(t *testing.T) {
	const members = 200
	plain, later := expiringStreamsGroup(t, members)
	scratch, _ := expiringStreamsGroup(t, members)
	if plain.Dump() != scratch.Dump() {
		t.Fatal("the two coordinators differ before the expiry")
	}
	var lent *records.Record
	reused, steps := 0, 0
	for ; ; steps++ {
		if at, ok := plain.NextDeadline(); !ok || at > later {
			break
		}
		if steps == members/2 {
			before := scratch.Dump()
			if _, err := scratch.Step(later, Tick{Limit: 1, Scratch: true}); err != nil {
				t.Fatal(err)
			}
			scratch.Rollback()
			if after := scratch.Dump(); after != before {
				t.Fatalf("a scratch fence rolled back left another state:\n%s\nwant\n%s", after, before)
			}
		}
		want, err := plain.Step(later, Tick{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		got, err := scratch.Step(later, Tick{Limit: 1, Scratch: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Records) != len(want.Records) {
			t.Fatalf("timer %d: %d records, plain Tick %d", steps, len(got.Records), len(want.Records))
		}
		for i := range want.Records {
			wk, wv := records.EncodeRecord(want.Records[i])
			gk, gv := records.EncodeRecord(got.Records[i])
			if !bytes.Equal(wk, gk) || !bytes.Equal(wv, gv) {
				t.Fatalf("timer %d: record %d differs from the plain Tick's", steps, i)
			}
		}
		if !reflect.DeepEqual(got.Events, want.Events) || !reflect.DeepEqual(got.Timers, want.Timers) {
			t.Fatalf("timer %d: events or timers differ:\n%+v %+v\nwant\n%+v %+v", steps, got.Events, got.Timers, want.Events, want.Timers)
		}
		if len(got.Records) > 0 {
			if unsafe.SliceData(got.Records) == lent {
				reused++
			}
			lent = unsafe.SliceData(got.Records)
		}
		plain.Commit()
		scratch.Commit()
	}
	if plain.Dump() != scratch.Dump() {
		t.Fatal("the states differ after the expiry")
	}
	if steps < members {
		t.Fatalf("%d timers fired, want at least %d", steps, members)
	}
	t.Logf("%d timers fired, %d reused the lent records array", steps, reused)
	if reused < members-2 {
		t.Errorf("%d of %d timers reused the lent records array, want at least %d", reused, steps, members-2)
	}
}
