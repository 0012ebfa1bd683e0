package metrics

import (
	"reflect"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
)

// group is a hand-built request: subtopology "0" has 4 stateful tasks
// (0..3), "1" has 2 stateless ones (4, 5).
func group(acceptable int64, members ...abi.Member) *abi.AssignRequest {
	return &abi.AssignRequest{
		GroupID:       "g",
		Configs:       abi.Configs{AcceptableRecoveryLag: acceptable, NumStandbyReplicas: 1},
		Processes:     []string{"A", "B", "C"},
		Subtopologies: []abi.Subtopology{{ID: "0", Partitions: 4, Stateful: true}, {ID: "1", Partitions: 2}},
		Members:       members,
	}
}

func offs(kv ...int64) []abi.TaskOffset {
	var out []abi.TaskOffset
	for i := 0; i < len(kv); i += 2 {
		out = append(out, abi.TaskOffset{Task: int32(kv[i]), Offset: kv[i+1]})
	}
	return out
}

func target(active ...[]int32) *abi.AssignResponse {
	r := &abi.AssignResponse{NextProbeMs: -1}
	for _, a := range active {
		r.Members = append(r.Members, abi.MemberAssignment{Active: a})
	}
	return r
}

func measure(t *testing.T, req *abi.AssignRequest, resp *abi.AssignResponse) Report {
	t.Helper()
	r, err := Measure(req, resp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestColdAndWarmHandOver: task 1 moves to a process that reported an
// offset exactly the acceptable lag behind the end (warm, must not count
// as cold); task 3 moves to one 500 records behind (cold); stateless task
// moves are moves but not hand-overs.
func TestColdAndWarmHandOver(t *testing.T) {
	req := group(100,
		abi.Member{ID: "a", Process: 0, Active: []int32{0, 1, 4}, TaskEndOffsets: offs(0, 1000, 1, 1000)},
		abi.Member{ID: "b", Process: 1, Active: []int32{2, 3, 5}, TaskEndOffsets: offs(2, 1000, 3, 1000)},
		abi.Member{ID: "c", Process: 2, TaskOffsets: offs(1, 900, 3, 500)},
	)
	resp := target([]int32{0}, []int32{2, 4}, []int32{1, 3, 5})
	got := measure(t, req, resp).Movement
	want := Movement{Kept: 2, Moved: 4, MovedProcess: 4, HandOvers: 2, Warm: 1, Cold: 1}
	if got != want {
		t.Fatalf("movement %+v, want %+v", got, want)
	}
	hs, err := HandOvers(req, resp, Options{})
	if err != nil {
		t.Fatal(err)
	}
	wantH := []HandOver{{Task: 1, From: "A", To: "C", Lag: 100}, {Task: 3, From: "B", To: "C", Lag: 500, Cold: true}}
	if !reflect.DeepEqual(hs, wantH) {
		t.Fatalf("hand-overs %+v, want %+v", hs, wantH)
	}

	// One record more behind, and the warm hand-over turns cold.
	req.Members[2].TaskOffsets = offs(1, 899, 3, 500)
	if got := measure(t, req, resp).Movement; got.Cold != 2 || got.Warm != 0 {
		t.Fatalf("lag 101 > 100: movement %+v, want 2 cold", got)
	}
}

// TestHandOverWithoutState: tasks whose owner left are new, and cold on a
// process without state unless there is nothing to restore (end offset
// within the acceptable lag); an unknown end offset makes a reported
// offset's lag unknown, so cold.
func TestHandOverWithoutState(t *testing.T) {
	req := group(100, // b first: hand-overs are listed in task order all the same
		abi.Member{ID: "b", Process: 1, TaskOffsets: offs(2, 10)},
		abi.Member{ID: "a", Process: 0, TaskEndOffsets: offs(0, 5000, 1, 50)},
	)
	resp := target([]int32{2, 3, 5}, []int32{0, 1, 4})
	got := measure(t, req, resp).Movement
	want := Movement{New: 6, HandOvers: 4, Warm: 1, Cold: 3, ColdUnknownLag: 2}
	if got != want {
		t.Fatalf("movement %+v, want %+v", got, want)
	}
	hs, _ := HandOvers(req, resp, Options{})
	wantH := []HandOver{
		{Task: 0, To: "A", Lag: 5000, Cold: true}, // no state, 5000 to restore
		{Task: 1, To: "A", Lag: 50},               // no state, but only 50 records
		{Task: 2, To: "B", Lag: -1, Cold: true},   // state, end unknown
		{Task: 3, To: "B", Lag: -1, Cold: true},   // nothing known
	}
	if !reflect.DeepEqual(hs, wantH) {
		t.Fatalf("hand-overs %+v, want %+v", hs, wantH)
	}
}

// TestMoveWithinProcess: a task moving between two members of one process
// keeps its state directory: a move, not a hand-over.
func TestMoveWithinProcess(t *testing.T) {
	req := group(0,
		abi.Member{ID: "a1", Process: 0, Active: []int32{0, 1, 2, 3, 4, 5}},
		abi.Member{ID: "a2", Process: 0},
	)
	got := measure(t, req, target([]int32{0, 1, 4}, []int32{2, 3, 5})).Movement
	want := Movement{Kept: 3, Moved: 3}
	if got != want {
		t.Fatalf("movement %+v, want %+v", got, want)
	}
}

// TestPreviousOverride: movement is measured against Options.Previous
// when given, not the members' current assignment.
func TestPreviousOverride(t *testing.T) {
	req := group(0,
		abi.Member{ID: "a", Process: 0, Active: []int32{0, 1, 2, 3, 4, 5}},
		abi.Member{ID: "b", Process: 1},
	)
	resp := target([]int32{0, 1, 4}, []int32{2, 3, 5})
	prev := []abi.MemberAssignment{{Active: []int32{0, 1, 4}}, {Active: []int32{2, 3, 5}, Standby: []int32{0}}}
	resp.Members[1].Standby = []int32{0}
	r, err := Measure(req, resp, Options{Previous: prev})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Movement{Kept: 6}); r.Movement != want {
		t.Fatalf("movement %+v, want %+v", r.Movement, want)
	}
	if r.Movement = measure(t, req, resp).Movement; r.Movement.Moved != 3 || r.Movement.StandbysMoved != 1 {
		t.Fatalf("against the current assignment: %+v, want 3 moved, 1 standby moved", r.Movement)
	}
}

func TestBalanceStandbysWarmups(t *testing.T) {
	req := group(100,
		abi.Member{ID: "a1", Process: 0, TaskEndOffsets: offs(0, 1000, 1, 1000)},
		abi.Member{ID: "a2", Process: 0},
		abi.Member{ID: "b", Process: 1, TaskOffsets: offs(0, 950, 1, 10)},
	)
	req.Processes = append(req.Processes, "D") // no members: not counted
	req.Configs.NumStandbyReplicas = 2
	resp := &abi.AssignResponse{Members: []abi.MemberAssignment{
		{Active: []int32{0, 1, 2}},
		{Active: []int32{3}},
		{Active: []int32{4, 5}, Standby: []int32{2, 3}, Warmup: []int32{0, 1}},
	}}
	r := measure(t, req, resp)
	if r.Members != 3 || r.Processes != 2 || r.Tasks != 6 || r.Stateful != 4 {
		t.Fatalf("counts %+v", r)
	}
	wantB := Balance{
		ActivePerMember:  Range{Min: 1, Max: 3, Spread: 2},
		AllPerMember:     Range{Min: 1, Max: 6, Spread: 5},
		ActivePerProcess: Range{Min: 2, Max: 4, Spread: 2},
		AllPerProcess:    Range{Min: 4, Max: 6, Spread: 2},
	}
	if r.Balance != wantB {
		t.Fatalf("balance %+v, want %+v", r.Balance, wantB)
	}
	// Two standbys wanted per stateful task, one possible on two
	// processes; tasks 0 and 1 have none.
	if want := (Standbys{Wanted: 8, Possible: 4, Placed: 2, Short: 2}); r.Standbys != want {
		t.Fatalf("standbys %+v, want %+v", r.Standbys, want)
	}
	// Warm-up of task 0 is 50 behind (caught up), of task 1 990 behind.
	if want := (Warmups{Open: 2, CaughtUp: 1}); r.Warmups != want {
		t.Fatalf("warm-ups %+v, want %+v", r.Warmups, want)
	}
}

func TestRacks(t *testing.T) {
	req := group(0,
		abi.Member{ID: "a", Process: 0, Rack: "r1"},
		abi.Member{ID: "b", Process: 1, Rack: "r1"},
		abi.Member{ID: "c", Process: 2, Rack: "r2"},
	)
	resp := &abi.AssignResponse{Members: []abi.MemberAssignment{
		{Active: []int32{0, 1, 4}},
		{Active: []int32{2, 5}, Standby: []int32{0}}, // task 0: r1 + r1
		{Active: []int32{3}, Standby: []int32{1, 2}}, // tasks 1, 2: r1 + r2
	}}
	if got, want := measure(t, req, resp).Racks, (Racks{Known: 2, Checked: 3, Spread: 2, Concentrated: 1}); got != want {
		t.Fatalf("racks %+v, want %+v", got, want)
	}
	req.Members[1].Rack = "" // tasks 0 and 2 have a copy on an unknown rack: not judged
	if got, want := measure(t, req, resp).Racks, (Racks{Known: 2, Checked: 1, Spread: 1}); got != want {
		t.Fatalf("racks %+v, want %+v", got, want)
	}
	for i := range req.Members {
		req.Members[i].Rack = ""
	}
	if got := measure(t, req, resp).Racks; got != (Racks{}) {
		t.Fatalf("no racks: %+v", got)
	}
}

// TestBadInputIsAnError: mismatched entries and out-of-range indices are
// errors naming the problem, never a panic.
func TestBadInputIsAnError(t *testing.T) {
	ok := func() (*abi.AssignRequest, *abi.AssignResponse) {
		return group(0, abi.Member{ID: "a", Process: 0}), target([]int32{0, 1, 2, 3, 4, 5})
	}
	cases := map[string]func(*abi.AssignRequest, *abi.AssignResponse, *Options){
		"response has 2 member entries for 1": func(_ *abi.AssignRequest, r *abi.AssignResponse, _ *Options) {
			r.Members = append(r.Members, abi.MemberAssignment{})
		},
		"previous assignment has 0 member entries": func(_ *abi.AssignRequest, _ *abi.AssignResponse, o *Options) {
			o.Previous = []abi.MemberAssignment{}
		},
		`member "a": task 6 out of range (6 tasks) in target standby`: func(_ *abi.AssignRequest, r *abi.AssignResponse, _ *Options) {
			r.Members[0].Standby = []int32{6}
		},
		`member "a": task -1 out of range (6 tasks) in previous active`: func(q *abi.AssignRequest, _ *abi.AssignResponse, _ *Options) {
			q.Members[0].Active = []int32{-1}
		},
		`member "a": process index 3, only 3 processes`: func(q *abi.AssignRequest, _ *abi.AssignResponse, _ *Options) {
			q.Members[0].Process = 3
		},
		`member "a": offset for task 9 out of range`: func(q *abi.AssignRequest, _ *abi.AssignResponse, _ *Options) {
			q.Members[0].TaskEndOffsets = offs(9, 1)
		},
		`subtopology "1" has -2 partitions`: func(q *abi.AssignRequest, _ *abi.AssignResponse, _ *Options) {
			q.Subtopologies[1].Partitions = -2
		},
		"tasks exceed the limit": func(q *abi.AssignRequest, _ *abi.AssignResponse, _ *Options) {
			q.Subtopologies[0].Partitions, q.Subtopologies[1].Partitions = 1<<31-1, 1<<31-1
		},
	}
	for want, spoil := range cases {
		req, resp := ok()
		var o Options
		spoil(req, resp, &o)
		if _, err := Measure(req, resp, o); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
		if _, err := HandOvers(req, resp, o); err == nil {
			t.Errorf("HandOvers accepted the input of %q", want)
		}
	}
}
