package main

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// heldGroup is a coordinator of one streams group of two members over two
// tasks that holds the second target back as Kafka 4.4's assignment
// interval does: the first member to join takes both tasks; the second
// joins at the same assignment epoch with none, and every answer carries
// ASSIGNMENT_DELAYED until hold more heartbeats have passed (no timer: a
// heartbeat computes the next target). Then each member gets one task at
// the new epoch.
type heldGroup struct {
	mu       sync.Mutex
	hold     int
	target   int32 // assignment epoch
	epochs   map[string]int32
	tasks    map[string][]int32
	computed bool
}

func (h *heldGroup) Request(_ context.Context, r kmsg.Request) (kmsg.Response, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	req, ok := r.(*kmsg.StreamsGroupHeartbeatRequest)
	if !ok {
		return nil, fmt.Errorf("unexpected %T", r)
	}
	resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	resp.MemberID = req.MemberID
	give := func(parts ...int32) {
		h.tasks[req.MemberID] = parts
		resp.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: parts}}
		resp.StandbyTasks, resp.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	}
	switch {
	case req.MemberEpoch == 0 && len(h.epochs) == 0:
		give(0, 1)
	case req.MemberEpoch == 0:
		give()
	case h.hold > 0:
		h.hold--
	case !h.computed:
		h.computed, h.target = true, 3
	}
	if req.MemberEpoch == 0 || h.epochs[req.MemberID] != h.target {
		h.epochs[req.MemberID] = h.target
		if h.computed {
			give(map[string]int32{"a": 0, "b": 1}[req.MemberID])
		}
	}
	if !h.computed && len(h.epochs) > 1 {
		resp.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{{StatusCode: statusAssignmentDelayed,
			StatusDetail: "Assignment delayed due to the configured assignment interval."}}
	}
	resp.MemberEpoch = h.epochs[req.MemberID]
	return resp, nil
}

// TestSettleWaitsForHeldTarget: settle does not call a group steady while
// its answers say the target is held back, although every task is owned
// and no answer changes anything; it returns once the held target is
// installed, each member owning its task.
func TestSettleWaitsForHeldTarget(t *testing.T) {
	srv := &heldGroup{hold: 8, target: 2, epochs: map[string]int32{}, tasks: map[string][]int32{}}
	g := &gen{o: options{conns: 1, members: 2}}
	for _, id := range []string{"a", "b"} {
		g.members = append(g.members, &member{conn: srv, group: "g", id: id, process: "p-" + id, topic: "t"})
	}
	// The first member joins alone, so it takes both tasks.
	g.members[0].mu.Lock()
	if _, err := g.members[0].heartbeat(context.Background()); err != nil {
		t.Fatal(err)
	}
	g.members[0].mu.Unlock()
	if err := g.settle(context.Background(), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if !srv.computed {
		t.Fatalf("steady with the target still held back (%d heartbeats left)", srv.hold)
	}
	for _, m := range g.members {
		if n := m.owned(); n != 1 {
			t.Errorf("member %s owns %d tasks after settling, want 1 (server: %v)", m.id, n, srv.tasks[m.id])
		}
	}
}
