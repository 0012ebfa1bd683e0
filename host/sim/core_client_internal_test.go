package sim

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/metrics"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
)

// TestCoreClientHeartbeats checks what a simulated member puts in its
// heartbeats without reports, against Kafka Streams 4.4's
// StreamsGroupHeartbeatRequestManager: a join carries empty task lists
// and its offsets; later heartbeats carry the task lists only when they
// changed, and the offsets only on a change of lists, once the task-offset
// interval passed or while a warm-up is within the acceptable lag — each
// of the two offset lists only when it differs from the last sent; a
// heartbeat that got no answer makes the next one carry everything.
func TestCoreClientHeartbeats(t *testing.T) {
	cw := hbWorld(t)
	cl := cw.clients[0]
	m, l := cl.m, cw.local[cl.m.process]
	l[0], l[1] = 100, 200

	type want struct {
		lists, offsets, ends bool
		offs                 map[int32]int64 // partition: offset, when offsets
	}
	hb := func(at int64, w want) {
		t.Helper()
		cw.now = at
		req := cw.heartbeatRequest(cl)
		if got := req.ActiveTasks != nil; got != w.lists || (req.StandbyTasks != nil) != got || (req.WarmupTasks != nil) != got {
			t.Errorf("at %d ms: task lists sent %v (%v %v %v), want %v", at, got, req.ActiveTasks, req.StandbyTasks, req.WarmupTasks, w.lists)
		}
		if got := req.TaskOffsets != nil; got != w.offsets {
			t.Errorf("at %d ms: task offsets sent %v (%v), want %v", at, got, req.TaskOffsets, w.offsets)
		} else if got && w.offs != nil {
			g := map[int32]int64{}
			for _, o := range req.TaskOffsets {
				g[o.Partition] = o.Offset
			}
			if len(g) != len(w.offs) {
				t.Errorf("at %d ms: task offsets %v, want %v", at, g, w.offs)
			}
			for p, o := range w.offs {
				if g[p] != o {
					t.Errorf("at %d ms: task offsets %v, want %v", at, g, w.offs)
				}
			}
		}
		if got := req.TaskEndOffsets != nil; got != w.ends {
			t.Errorf("at %d ms: end offsets sent %v (%v), want %v", at, got, req.TaskEndOffsets, w.ends)
		}
	}

	join := cw.heartbeatRequest(cl)
	if join.MemberEpoch != 0 || join.Topology == nil || join.ActiveTasks == nil || len(join.ActiveTasks) > 0 || join.TaskOffsets == nil || join.TaskEndOffsets == nil {
		t.Fatalf("join: epoch %d, topology %v, active %v, offsets %v, ends %v", join.MemberEpoch, join.Topology, join.ActiveTasks, join.TaskOffsets, join.TaskEndOffsets)
	}
	cl.joined, cl.epoch, cl.offsetIntervalMs = true, 1, 60000
	hb(5000, want{lists: true}) // its first lists after the join
	hb(10000, want{})           // nothing changed
	l[0] = 150                  // its state moved on
	hb(15000, want{})           // within the interval: not yet
	hb(60000, want{offsets: true, offs: map[int32]int64{0: 150, 1: 200}})
	hb(125000, want{}) // the interval passed, nothing new
	m.target = abi.MemberAssignment{Active: []int32{2}, Standby: []int32{3}, Warmup: []int32{}}
	hb(130000, want{lists: true}) // new lists; its new copies have no state yet, so no ends, and its offsets are as sent
	hb(135000, want{})
	m.target.Warmup = []int32{1} // a warm-up 9800 records behind, on state its process holds
	hb(140000, want{lists: true, ends: true})
	l[1] = 9950 // within 100 of the end: hot
	hb(145000, want{offsets: true, offs: map[int32]int64{0: 150, 1: 9950}})
	l[1] = 9990
	hb(150000, want{offsets: true, offs: map[int32]int64{0: 150, 1: 9990}})
	hb(155000, want{}) // hot, but as sent

	cw.stopped = true // the next heartbeat gets no answer
	cw.send(cl, cw.heartbeatRequest(cl))
	cw.stopped = false
	hb(160000, want{lists: true, offsets: true, ends: true})
	hb(165000, want{})
}

// TestCoreHAStandbyHandOversAreWarm replays testdata/sim/rolling-restart.yaml
// with HA on core and checks the hand-overs when app-1 leaves (61 s):
// each goes to a process that holds the task as a standby whose state on
// disk is at the changelog's end. Their members last sent offsets about
// 55 s before; the changelogs grew 10,800 to 11,000 records since (200
// records/s), above acceptable.recovery.lag (10000). Each offset is
// measured against the end offset the member reported with it
// (docs/WARMUPS.md §2.1), so HA and abi/metrics see caught-up standbys
// and the hand-overs are warm; against the latest end offset they were
// counted cold. No hand-over of the run is cold.
//
// HA deals the actives round-robin over the processes in Kafka's order
// of their ids (Java UUID order), and the ids are UUIDs made from the
// names (app-3 < app-2 < app-1 there): app-1 ran tasks 2 and 5, and the
// other two keep theirs — two hand-overs, both to caught-up standbys.
func TestCoreHAStandbyHandOversAreWarm(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "sim", "rolling-restart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := Decode("rolling-restart.yaml", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	acceptable := sc.Assignment.AcceptableRecoveryLag
	var cw *coreWorld
	moved := map[int64][]metrics.HandOver{} // by the run's time, after the baseline
	grown := map[int32]int64{}              // per task moved at 61 s: records since its new process's last report
	a := Assignor{Name: "ha", Assign: func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
		resp, err := ha.Assign(req)
		if err != nil || !cw.started {
			return resp, err
		}
		hs, err := metrics.HandOvers(req, resp, metrics.Options{})
		if err != nil {
			return nil, err
		}
		for _, h := range hs {
			moved[cw.now] = append(moved[cw.now], h)
			if cw.now == 61000 {
				grown[h.Task] = cw.end[h.Task] - maxReported(req, h.To, h.Task)
			}
		}
		return resp, nil
	}}
	if cw, err = newCoreWorld(sc, a); err != nil {
		t.Fatal(err)
	}
	r := cw.run()
	if r.Error != "" || r.Totals.Cold != 0 {
		t.Fatalf("error %q, %d cold hand-overs in the totals, want none; hand-overs by run time %v", r.Error, r.Totals.Cold, moved)
	}
	hs := moved[61000]
	var departed []int32 // tasks of app-1, which left
	for _, h := range hs {
		if h.From == "" {
			departed = append(departed, h.Task)
		}
	}
	if len(hs) != 2 || !slices.Equal(departed, []int32{2, 5}) {
		t.Fatalf("hand-overs at 61 s %v, want app-1's actives 2 and 5 alone", hs)
	}
	for _, h := range hs {
		if h.Cold || h.Lag > acceptable || grown[h.Task] <= acceptable {
			t.Errorf("task %d from %q to %s: cold %v, lag %d, changelog grew %d since the report; want warm, caught up by its own report though the changelog grew more than %d",
				h.Task, h.From, h.To, h.Cold, h.Lag, grown[h.Task], acceptable)
		}
	}
}

// maxReported is the largest offset a member of process reported for
// task in req (-1: none).
func maxReported(req *abi.AssignRequest, process string, task int32) int64 {
	best := int64(-1)
	for _, m := range req.Members {
		if req.Processes[m.Process] != process {
			continue
		}
		for _, o := range m.TaskOffsets {
			if o.Task == task {
				best = max(best, o.Offset)
			}
		}
	}
	return best
}

// hbWorld is a core world of one joined member, a, over four stateful
// tasks whose changelogs end at 10,000 (acceptable recovery lag 100).
func hbWorld(t *testing.T) *coreWorld {
	t.Helper()
	sc, err := Decode("hb.yaml", []byte(`name: hb
seed: 1
duration_s: 600
tick_ms: 1000
subtopologies:
  - {id: "0", partitions: 4, stateful: true}
assignment:
  num_standby_replicas: 1
  num_warmup_replicas: 1
  acceptable_recovery_lag: 100
state:
  changelog_records: 10000
  restore_records_per_s: 1000
events:
  - {at_s: 0, join: a}
`), nil)
	if err != nil {
		t.Fatal(err)
	}
	cw, err := newCoreWorld(sc, coreAssignors[0])
	if err != nil {
		t.Fatal(err)
	}
	cw.applyStep(sc.steps[0])
	for i := range cw.end {
		cw.end[i] = 10000
	}
	return cw
}

// TestCoreClientReportsLikeKafkaStreams checks which tasks a simulated
// member's offsets and end offsets name, and when a warm-up makes it
// report on every heartbeat, against Kafka Streams 4.4:
// TaskManager.maybeUpdateTaskOffsetSumSnapshot reports the offset sums of
// its process's state directory with its running actives left out;
// DefaultStateUpdater's end-offset snapshot has an entry only for the
// tasks the state updater holds (a restoring active, a standby or
// warm-up the member has created), Long.MAX_VALUE for one that restored
// nothing yet; StreamsGroupHeartbeatRequestManager calls a warm-up hot
// only when both its offset and its end are known and within the
// acceptable lag.
func TestCoreClientReportsLikeKafkaStreams(t *testing.T) {
	cw := hbWorld(t)
	cl := cw.clients[0]
	m, l := cl.m, cw.local[cl.m.process]
	cl.joined, cl.epoch, cl.offsetIntervalMs = true, 1, 60000
	m.target = abi.MemberAssignment{Active: []int32{0, 2}, Standby: []int32{3}, Warmup: []int32{1}}
	m.owned = []int32{0, 2}
	cw.owner = map[int32]string{0: m.id, 2: m.id}
	cw.running[0] = true // it runs 0
	cw.readyAt[2] = 20000
	m.startAt = []int64{0, 20000, 0, 0}
	l[0], l[1], l[2], l[3] = 10000, 9950, 300, -1 // 3: created, nothing restored yet

	report := func(at int64) (map[int32]int64, map[int32]int64) {
		cw.now = at
		offs, ends := make([]int64, 4), make([]int64, 4)
		cw.fillReport(at, m, offs, ends)
		o, e := map[int32]int64{}, map[int32]int64{}
		for i := range offs {
			if offs[i] >= 0 {
				o[int32(i)] = offs[i]
			}
			if ends[i] >= 0 {
				e[int32(i)] = ends[i]
			}
		}
		return o, e
	}
	check := func(at int64, wantOffs, wantEnds map[int32]int64) {
		t.Helper()
		o, e := report(at)
		if !maps.Equal(o, wantOffs) || !maps.Equal(e, wantEnds) {
			t.Errorf("at %d ms: offsets %v, ends %v; want %v, %v", at, o, e, wantOffs, wantEnds)
		}
	}
	// Before the hand-over time it has created neither 2 nor warm-up 1:
	// their state on disk is reported, no end; running 0 is left out.
	// Warm-up 1 is within the lag on disk, but not hot.
	check(10000, map[int32]int64{1: 9950, 2: 300}, map[int32]int64{})
	if cw.hotWarmup(10000, m) {
		t.Error("at 10000 ms: a warm-up the member has not created yet is hot")
	}
	cw.now = 10000
	if req := cw.heartbeatRequest(cl); req.ActiveTasks == nil || req.TaskOffsets == nil || req.TaskEndOffsets == nil || len(req.TaskEndOffsets) > 0 {
		t.Errorf("at 10000 ms: lists %v, offsets %v, ends %v; want the new lists with its offsets and no end", req.ActiveTasks, req.TaskOffsets, req.TaskEndOffsets)
	}
	// Then 2 restores and warm-up 1 is created, within the lag: hot, so
	// the next heartbeat sends what changed (the ends).
	check(20000, map[int32]int64{1: 9950, 2: 300}, map[int32]int64{1: 10000, 2: 10000})
	if !cw.hotWarmup(20000, m) {
		t.Error("at 20000 ms: a created warm-up within the acceptable lag is not hot")
	}
	cw.now = 20000
	if req := cw.heartbeatRequest(cl); req.TaskOffsets != nil || len(req.TaskEndOffsets) != 2 {
		t.Errorf("at 20000 ms: offsets %v, ends %v; want the two new ends only", req.TaskOffsets, req.TaskEndOffsets)
	}
	// Once 2 runs it is left out of both.
	cw.running[2] = true
	check(30000, map[int32]int64{1: 9950}, map[int32]int64{1: 10000})
}
