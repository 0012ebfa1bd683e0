package ha_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/coordhost/coordhost/abi"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
)

// scaleOutGroup: process 0 runs all 12 stateful tasks (end offset 10000 each,
// reported by its member); processes 1..n-1 are new, with no state.
func scaleOutGroup(n int, acceptable int64) *abi.AssignRequest {
	req := &abi.AssignRequest{GroupID: "scale", Subtopologies: []abi.Subtopology{{ID: "0", Partitions: 12, Stateful: true}},
		Configs: abi.Configs{AcceptableRecoveryLag: acceptable, NumWarmupReplicas: 2}}
	for p := 0; p < n; p++ {
		req.Processes = append(req.Processes, fmt.Sprint("p", p))
		req.Members = append(req.Members, abi.Member{ID: fmt.Sprint("m", p), Process: int32(p)})
	}
	for t := int32(0); t < 12; t++ {
		req.Members[0].Active = append(req.Members[0].Active, t)
		req.Members[0].TaskEndOffsets = append(req.Members[0].TaskEndOffsets, abi.TaskOffset{Task: t, Offset: 10000})
	}
	return req
}

func assign(t *testing.T, req *abi.AssignRequest) *abi.AssignResponse {
	t.Helper()
	resp, err := ha.Assign(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := abi.ValidateAssignment(req, resp); err != nil {
		t.Fatal(err)
	}
	return resp
}

func countWarmups(resp *abi.AssignResponse) int {
	n := 0
	for _, m := range resp.Members {
		n += len(m.Warmup)
	}
	return n
}

func TestScaleOutKeepsActivesOnCaughtUpProcess(t *testing.T) {
	req := scaleOutGroup(3, 100)
	resp := assign(t, req)
	if got := len(resp.Members[0].Active); got != 12 {
		t.Fatalf("caught-up process keeps %d actives, want all 12 (others have no state)", got)
	}
	if got := countWarmups(resp); got != 2 {
		t.Fatalf("%d warm-ups, want num_warmup_replicas = 2", got)
	}
	// The warm-ups land where the balanced target (round-robin: task t on
	// process t%3) wants the tasks.
	for p := 1; p < 3; p++ {
		for _, w := range resp.Members[p].Warmup {
			if int(w)%3 != p {
				t.Errorf("warm-up of task %d on process %d, balanced target is %d", w, p, w%3)
			}
		}
	}
	if resp.NextProbeMs != ha.DefaultProbingIntervalMs {
		t.Fatalf("NextProbeMs = %d, want the probing interval", resp.NextProbeMs)
	}
}

func TestScaleOutMovesOnlyCaughtUpWarmups(t *testing.T) {
	req := scaleOutGroup(3, 100)
	first := assign(t, req)
	// Feed the target back; process 1's warm-up has caught up, process 2's has not.
	for i := range req.Members {
		req.Members[i].Active, req.Members[i].Warmup = first.Members[i].Active, first.Members[i].Warmup
	}
	caught, behind := first.Members[1].Warmup[0], first.Members[2].Warmup[0]
	req.Members[1].TaskOffsets = []abi.TaskOffset{{Task: caught, Offset: 9950}}
	req.Members[2].TaskOffsets = []abi.TaskOffset{{Task: behind, Offset: 5000}}
	second := assign(t, req)
	if !has32(second.Members[1].Active, caught) {
		t.Errorf("caught-up warm-up %d did not become active on process 1: %+v", caught, second.Members[1])
	}
	if !has32(second.Members[0].Active, behind) || !has32(second.Members[2].Warmup, behind) {
		t.Errorf("lagging warm-up %d should stay a warm-up while process 0 keeps the active: %+v", behind, second.Members)
	}
}

func TestUnboundedAcceptableLagDisablesWarmups(t *testing.T) {
	resp := assign(t, scaleOutGroup(3, math.MaxInt64))
	if n := countWarmups(resp); n != 0 {
		t.Fatalf("%d warm-ups with acceptable lag MaxInt64, want 0", n)
	}
	for i, m := range resp.Members {
		if len(m.Active) != 4 {
			t.Errorf("member %d has %d actives, want 4 (balanced at once)", i, len(m.Active))
		}
	}
	if resp.NextProbeMs != -1 {
		t.Fatalf("NextProbeMs = %d, want -1 (nothing to probe)", resp.NextProbeMs)
	}
}

func TestUnknownEndOffsetIsNeverCaughtUp(t *testing.T) {
	// Even an acceptable lag just below MaxInt64 (where Kafka, computing
	// MaxInt64 - offset, would call process 1 caught up) does not help.
	req := scaleOutGroup(2, math.MaxInt64-1)
	for i := range req.Members[0].TaskEndOffsets {
		req.Members[0].TaskEndOffsets[i].Offset = math.MaxInt64 // the client's "unknown"
	}
	// Process 1 has state for every task, but nobody knows how far behind it is.
	for t := int32(0); t < 12; t++ {
		req.Members[1].TaskOffsets = append(req.Members[1].TaskOffsets, abi.TaskOffset{Task: t, Offset: 9999})
	}
	resp := assign(t, req)
	if len(resp.Members[1].Active) != 0 {
		t.Fatalf("process 1 got actives %v though no end offset is known", resp.Members[1].Active)
	}
	if countWarmups(resp) != 2 {
		t.Fatalf("want 2 warm-ups while end offsets are unknown, got %d", countWarmups(resp))
	}
}

func TestRestartWithStateRegainsTasksWithoutWarmups(t *testing.T) {
	// Process 1 restarted (new member id, nothing assigned) with its former
	// half of the tasks on disk, within the acceptable lag.
	req := scaleOutGroup(2, 100)
	req.Members[1].ID = "m1-restarted"
	for t := int32(1); t < 12; t += 2 {
		req.Members[1].TaskOffsets = append(req.Members[1].TaskOffsets, abi.TaskOffset{Task: t, Offset: 9990})
	}
	resp := assign(t, req)
	if n := countWarmups(resp); n != 0 {
		t.Fatalf("%d warm-ups, want none: the restarted process is caught up", n)
	}
	if got := fmt.Sprint(resp.Members[1].Active); got != "[1 3 5 7 9 11]" {
		t.Fatalf("restarted process got %s, want its tasks back [1 3 5 7 9 11]", got)
	}
}

func TestRackTagsSpreadStandbys(t *testing.T) {
	req := &abi.AssignRequest{Subtopologies: []abi.Subtopology{{ID: "0", Partitions: 8, Stateful: true}},
		Configs: abi.Configs{NumStandbyReplicas: 1, NumWarmupReplicas: 2, AcceptableRecoveryLag: math.MaxInt64,
			RackAwareAssignmentTags: []string{"zone"}}}
	zoneOf := []string{"a", "a", "b", "b"}
	for p, z := range zoneOf {
		req.Processes = append(req.Processes, fmt.Sprint("p", p))
		req.Members = append(req.Members, abi.Member{ID: fmt.Sprint("m", p), Process: int32(p),
			ClientTags: []abi.KV{{Key: "zone", Value: z}}})
	}
	resp := assign(t, req)
	activeZone := map[int32]string{}
	for i, m := range resp.Members {
		for _, task := range m.Active {
			activeZone[task] = zoneOf[i]
		}
	}
	standbys := 0
	for i, m := range resp.Members {
		for _, task := range m.Standby {
			standbys++
			if zoneOf[i] == activeZone[task] {
				t.Errorf("standby of task %d in zone %s, the zone of its active", task, zoneOf[i])
			}
		}
	}
	if standbys != 8 {
		t.Fatalf("%d standbys, want 8", standbys)
	}
}

func TestMembersKeepTheirTasksWithinAProcess(t *testing.T) {
	// One process with two members that swapped nothing: each keeps its tasks.
	req := &abi.AssignRequest{Processes: []string{"p"}, Subtopologies: []abi.Subtopology{{ID: "0", Partitions: 6, Stateful: true}},
		Configs: abi.Configs{AcceptableRecoveryLag: 100, NumWarmupReplicas: 2},
		Members: []abi.Member{
			{ID: "b", Process: 0, Active: []int32{0, 2, 4}},
			{ID: "a", Process: 0, Active: []int32{1, 3, 5}},
		}}
	resp := assign(t, req)
	if fmt.Sprint(resp.Members[0].Active, resp.Members[1].Active) != "[0 2 4] [1 3 5]" {
		t.Fatalf("members moved tasks: %v %v", resp.Members[0].Active, resp.Members[1].Active)
	}
}

func TestBadProbingIntervalIsAnError(t *testing.T) {
	req := scaleOutGroup(2, 100)
	req.Configs.All = []abi.KV{{Key: ha.ConfigProbingInterval, Value: "soon"}}
	if _, err := ha.Assign(req); err == nil {
		t.Fatal("want an error naming the bad config")
	}
}
