package ha_test

import (
	"math"
	"testing"

	"github.com/coordhost/coordhost/abi"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
)

func TestComputeLags(t *testing.T) {
	req := &abi.AssignRequest{
		Processes:     []string{"a", "b", "c"},
		Subtopologies: []abi.Subtopology{{ID: "0", Partitions: 5, Stateful: true}},
		Members: []abi.Member{
			{ID: "a1", Process: 0, Active: []int32{0},
				TaskEndOffsets: []abi.TaskOffset{{Task: 0, Offset: 900}, {Task: 1, Offset: 1000}, {Task: 3, Offset: math.MaxInt64}}},
			{ID: "b1", Process: 1, TaskOffsets: []abi.TaskOffset{{Task: 1, Offset: 700}, {Task: 2, Offset: 50}},
				TaskEndOffsets: []abi.TaskOffset{{Task: 0, Offset: 1000}}},
			{ID: "b2", Process: 1, TaskOffsets: []abi.TaskOffset{{Task: 1, Offset: 950}, {Task: 3, Offset: 10}, {Task: 4, Offset: -3}}},
			{ID: "c1", Process: 2, TaskOffsets: []abi.TaskOffset{{Task: 1, Offset: 5000}}},
		},
	}
	l := ha.ComputeLags(req)
	for _, c := range []struct {
		name string
		p, t int32
		want int64
	}{
		{"running active", 0, 0, ha.LagRunning},
		{"end is the largest report", 1, 0, 1000},
		{"offset is the largest of the process's members", 1, 1, 50},
		{"no state: lag is the end offset", 0, 1, 1000},
		{"offset beyond end (corrupt): lag is the end offset", 2, 1, 1000},
		{"unknown end with state", 1, 3, math.MaxInt64 - 10},
		{"unknown end without state", 0, 3, math.MaxInt64},
		{"nobody reported an end", 1, 2, math.MaxInt64 - 50},
		{"negative offsets count as absent", 1, 4, math.MaxInt64},
	} {
		if got := l.Lag(c.p, c.t); got != c.want {
			t.Errorf("%s: Lag(%d, %d) = %d, want %d", c.name, c.p, c.t, got, c.want)
		}
	}
	for _, c := range []struct {
		name       string
		p, t       int32
		acceptable int64
		want       bool
	}{
		{"running is always caught up", 0, 0, 0, true},
		{"within acceptable", 1, 1, 50, true},
		{"above acceptable", 1, 1, 49, false},
		{"unknown end is never caught up", 1, 3, math.MaxInt64 - 1, false},
		{"MaxInt64 turns the check off", 1, 3, math.MaxInt64, true},
	} {
		if got := l.CaughtUp(c.p, c.t, c.acceptable); got != c.want {
			t.Errorf("%s: CaughtUp = %v, want %v", c.name, got, c.want)
		}
	}
	if l.EndKnown(2) || !l.EndKnown(1) {
		t.Error("EndKnown: task 2 has no report, task 1 has one")
	}
}

// TestComputeLagsOwnReport: a member's offset is measured against the end
// offset it reported with it, not against a larger one another member
// reported; a position past its own end is caught up; without its own end
// offset the task's end offset and Kafka's corrupt-state rule apply.
func TestComputeLagsOwnReport(t *testing.T) {
	req := &abi.AssignRequest{
		Processes:     []string{"a", "b", "c", "d"},
		Subtopologies: []abi.Subtopology{{ID: "0", Partitions: 2, Stateful: true}},
		Members: []abi.Member{
			{ID: "a1", Process: 0, TaskEndOffsets: []abi.TaskOffset{{Task: 0, Offset: 5000}, {Task: 1, Offset: 5000}}},
			{ID: "b1", Process: 1, TaskOffsets: []abi.TaskOffset{{Task: 0, Offset: 950}, {Task: 1, Offset: math.MaxInt64}},
				TaskEndOffsets: []abi.TaskOffset{{Task: 0, Offset: 1000}, {Task: 1, Offset: 1000}}},
			{ID: "c1", Process: 2, TaskOffsets: []abi.TaskOffset{{Task: 0, Offset: 1001}, {Task: 1, Offset: 5001}},
				TaskEndOffsets: []abi.TaskOffset{{Task: 0, Offset: 1000}, {Task: 1, Offset: math.MaxInt64}}},
			{ID: "d1", Process: 3, TaskOffsets: []abi.TaskOffset{{Task: 0, Offset: 4900}}},
			{ID: "d2", Process: 3, TaskOffsets: []abi.TaskOffset{{Task: 0, Offset: 900}}, TaskEndOffsets: []abi.TaskOffset{{Task: 0, Offset: 920}}},
		},
	}
	l := ha.ComputeLags(req)
	for _, c := range []struct {
		name string
		p, t int32
		want int64
	}{
		{"own end, though another member reported a larger one", 1, 0, 50},
		{"one past its own end: caught up", 2, 0, 0},
		{"MaxInt64 offset: not against its own end (corrupt rule)", 1, 1, 5000},
		{"own end MaxInt64 (unknown): the task's end, corrupt rule", 2, 1, 5000},
		{"a process takes its members' smallest lag", 3, 0, 20},
		{"no state: the task's end", 0, 0, 5000},
	} {
		if got := l.Lag(c.p, c.t); got != c.want {
			t.Errorf("%s: Lag(%d, %d) = %d, want %d", c.name, c.p, c.t, got, c.want)
		}
	}
	if !l.CaughtUp(1, 0, 50) || l.CaughtUp(1, 0, 49) {
		t.Error("CaughtUp(b, 0_0): want caught up at acceptable 50, not at 49")
	}
}
