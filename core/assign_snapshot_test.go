package core

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The same joins, heartbeats and results write the same records and
// leave the same state whether the Coordinator builds each run's input
// itself or hands it out to be built (DeferAssignorInputs), and the log
// replays to the live state.
func TestDeferredInputsWriteWhatBuiltInputsWrite(t *testing.T) {
	var rigs []*sliceRig
	for _, deferred := range []bool{false, true} {
		r := newSliceRig(t, 0, 0)
		if deferred {
			r.c.DeferAssignorInputs()
		}
		r.answer(r.build(12), false)
		for i := range 12 {
			r.heartbeat(offsetsHeartbeat(r, fmt.Sprintf("m%02d", i), int64(i)))
		}
		runs := r.heartbeat(joinRequest("s", "m12")).AssignorRuns
		if len(runs) != 1 || (runs[0].snapshot != nil) != deferred || (len(runs[0].Input.Members) > 0) == deferred {
			t.Fatalf("deferred %v: the join started %d runs, the first built %v", deferred, len(runs), len(runs[0].Input.Members) > 0)
		}
		r.answer(runs, false)
		replayed, err := replayLog(r.cfg, r.log)
		if err != nil {
			t.Fatal(err)
		}
		if live, rep := r.c.Dump(), replayed.Dump(); live != rep {
			t.Fatalf("deferred %v: replay differs from live state:\nlive:\n%s\nreplayed:\n%s", deferred, live, rep)
		}
		rigs = append(rigs, r)
	}
	if a, b := rigs[0].trace.String(), rigs[1].trace.String(); a != b {
		t.Fatalf("records and responses differ:\nbuilt:\n%s\ndeferred:\n%s", a, b)
	}
	if a, b := rigs[0].c.Dump(), rigs[1].c.Dump(); a != b {
		t.Fatalf("state differs:\nbuilt:\n%s\ndeferred:\n%s", a, b)
	}
}

// A deferred run's input is the group as it was when the run was
// requested, built while the Coordinator goes on changing the group
// (members report offsets, the host end offsets, a member leaves and
// another joins): nothing it reads is changed in place (run with -race,
// a change in place is also a data race).
func TestDeferredInputIsTheRequestTimeInput(t *testing.T) {
	r := newSliceRig(t, 0, 0)
	r.c.DeferAssignorInputs()
	r.answer(r.build(12), false)
	for i := range 12 {
		r.heartbeat(offsetsHeartbeat(r, fmt.Sprintf("m%02d", i), int64(i)))
	}
	r.step(EndOffsets{Group: "s", Ends: []TaskEndOffset{{Task: TaskID{"0", 1}, Offset: 500}}})
	runs := r.heartbeat(joinRequest("s", "m12")).AssignorRuns
	if len(runs) != 1 {
		t.Fatalf("the join started %d runs", len(runs))
	}
	g := r.c.groups["s"].(*streamsGroup)
	want := r.c.assignInput(g)

	// One copy of the run is built beside the changes, the other after.
	beside, after := runs[0], runs[0]
	built := make(chan struct{})
	go func() {
		defer close(built)
		beside.BuildInput()
	}()
	for i := range 12 {
		r.heartbeat(offsetsHeartbeat(r, fmt.Sprintf("m%02d", i), int64(100+i)))
	}
	r.step(EndOffsets{Group: "s", Ends: []TaskEndOffset{{Task: TaskID{"0", 1}, Offset: -1}, {Task: TaskID{"0", 2}, Offset: 900}}})
	leave := joinRequest("s", "m03")
	leave.Topology, leave.MemberEpoch = nil, -1
	r.heartbeat(leave)
	r.heartbeat(joinRequest("s", "m13"))
	<-built

	if reflect.DeepEqual(r.c.assignInput(g), want) {
		t.Fatal("the changes after the request left the input as it was; the test needs them to change it")
	}
	after.BuildInput()
	for _, run := range []AssignorRun{beside, after} {
		if run.snapshot != nil || !reflect.DeepEqual(run.Input, want) {
			t.Fatalf("the deferred input is not the one at the request:\ngot  %+v\nwant %+v", run.Input, want)
		}
	}
}

// offsetsHeartbeat is member's full heartbeat reporting, for each task
// it owns, offset base+partition and end offset base+partition+10.
func offsetsHeartbeat(r *sliceRig, member string, base int64) *kmsg.StreamsGroupHeartbeatRequest {
	req := r.fullHeartbeat(member)
	req.TaskOffsets, req.TaskEndOffsets = []kmsg.TaskOffset{}, []kmsg.TaskOffset{}
	for _, ts := range req.ActiveTasks {
		for _, p := range ts.Partitions {
			req.TaskOffsets = append(req.TaskOffsets, kmsg.TaskOffset{SubtopologyID: ts.SubtopologyID, Partition: p, Offset: base + int64(p)})
			req.TaskEndOffsets = append(req.TaskEndOffsets, kmsg.TaskOffset{SubtopologyID: ts.SubtopologyID, Partition: p, Offset: base + int64(p) + 10})
		}
	}
	return req
}
