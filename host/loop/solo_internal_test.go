package loop

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/assign"
)

// TestSoloAnswersAsFullRounds: two loops on one clock, one taking the
// shortcuts of a partition with nothing in flight (the runtime's solo
// step, the shard's Finish, the answer without a channel) and one with
// runtime.Config.FullRounds, get the same requests — steady streams
// heartbeats with null and with reported task lists, a report of fewer
// tasks than assigned, a fenced epoch, an unknown member, a leave that
// writes records, a classic heartbeat of an unknown group — and must
// give the same answers and end each step in the same state (the
// session deadline the heartbeat re-armed, the groups' dump). The
// shortcut loop must also take the shortcut: a steady heartbeat costs it
// fewer allocations.
func TestSoloAnswersAsFullRounds(t *testing.T) {
	var nowMs atomic.Int64
	nowMs.Store(time.Now().UnixMilli())
	clock := func() time.Time { return time.UnixMilli(nowMs.Load()) }
	newSide := func(full bool) *Loop {
		d := nativeDeps(t, assign.Builtins["sticky"].Native)
		d.fullRounds = full
		l, err := newLoop(context.Background(), d, clock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Shutdown(context.Background()) })
		return l
	}
	fast, full := newSide(false), newSide(true)
	handle := func(l *Loop, body kmsg.Request) kmsg.Response {
		t.Helper()
		resp := handleReq(t, l, body) // offsets_gate_internal_test.go
		if resp == nil {
			t.FailNow()
		}
		return resp
	}

	// Each side's member joins and reports what it is given until the
	// answer changes nothing (the assignor runs on its own goroutine).
	var steady *kmsg.StreamsGroupHeartbeatResponse
	for _, l := range []*Loop{fast, full} {
		body := streamsJoin("g", "m", "in").Body.(*kmsg.StreamsGroupHeartbeatRequest)
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
			resp := handle(l, body).(*kmsg.StreamsGroupHeartbeatResponse)
			if resp.ErrorCode != 0 {
				t.Fatalf("join: %+v", resp)
			}
			if resp.MemberEpoch == body.MemberEpoch && len(resp.ActiveTasks) > 0 && reflect.DeepEqual(resp.ActiveTasks, body.ActiveTasks) {
				steady = resp
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("no steady answer: %+v", resp)
			}
			body.MemberEpoch, body.Topology = resp.MemberEpoch, nil
			body.ActiveTasks, body.StandbyTasks, body.WarmupTasks = resp.ActiveTasks, resp.StandbyTasks, resp.WarmupTasks
		}
	}
	if fast.d.Core.Dump() != full.d.Core.Dump() {
		t.Fatalf("the two sides settled differently:\n%s\n%s", fast.d.Core.Dump(), full.d.Core.Dump())
	}

	beat := func(member string, epoch int32, set func(*kmsg.StreamsGroupHeartbeatRequest)) func() kmsg.Request {
		return func() kmsg.Request {
			b := kmsg.NewPtrStreamsGroupHeartbeatRequest()
			b.Version, b.Group, b.MemberID, b.MemberEpoch = 1, "g", member, epoch
			if set != nil {
				set(b)
			}
			return b
		}
	}
	epoch := steady.MemberEpoch
	reported := func(b *kmsg.StreamsGroupHeartbeatRequest) {
		b.ActiveTasks, b.StandbyTasks, b.WarmupTasks = steady.ActiveTasks, steady.StandbyTasks, steady.WarmupTasks
	}
	fewer := func(b *kmsg.StreamsGroupHeartbeatRequest) {
		b.ActiveTasks, b.StandbyTasks, b.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	}
	steps := []struct {
		name string
		req  func() kmsg.Request
	}{
		{"steady, null task lists", beat("m", epoch, nil)},
		{"steady, null task lists again", beat("m", epoch, nil)},
		{"steady, reported task lists", beat("m", epoch, reported)},
		{"fewer tasks reported than assigned", beat("m", epoch, fewer)},
		{"steady after it", beat("m", epoch, reported)},
		{"a fenced epoch", beat("m", epoch+1, nil)},
		{"an unknown member", beat("nobody", 1, nil)},
		{"steady after the errors", beat("m", epoch, nil)},
		{"a classic heartbeat of an unknown group", func() kmsg.Request {
			b := kmsg.NewPtrHeartbeatRequest()
			b.Version, b.Group, b.MemberID, b.Generation = 4, "classic", "x", 1
			return b
		}},
		{"a leave", beat("m", -1, nil)},
		{"the member after its leave", beat("m", epoch, nil)},
	}
	for _, st := range steps {
		nowMs.Add(1000)
		a, b := handle(fast, st.req()), handle(full, st.req())
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%s: answered %+v with the shortcuts, %+v with full rounds", st.name, a, b)
		}
		da, oka := fast.d.Core.NextDeadline()
		db, okb := full.d.Core.NextDeadline()
		if da != db || oka != okb || fast.d.Core.Dump() != full.d.Core.Dump() {
			t.Fatalf("%s: state differs: deadline %d %v / %d %v\n%s\n%s", st.name, da, oka, db, okb, fast.d.Core.Dump(), full.d.Core.Dump())
		}
		if st.name == "steady, null task lists" && (!oka || da < nowMs.Load()+1000) {
			t.Fatalf("%s: the session deadline was not re-armed: %d at %d", st.name, da, nowMs.Load())
		}
		if st.name == "steady after the errors" {
			// The shortcut is taken: fewer allocations per steady heartbeat.
			allocs := func(l *Loop) float64 {
				return testing.AllocsPerRun(50, func() { handle(l, beat("m", epoch, nil)()) })
			}
			if af, al := allocs(fast), allocs(full); af >= al {
				t.Fatalf("a steady heartbeat allocated %.0f times with the shortcuts, %.0f with full rounds: the shortcut was not taken", af, al)
			}
		}
	}
}
