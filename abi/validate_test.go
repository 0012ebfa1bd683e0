package abi_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
)

func twoProcReq() *abi.AssignRequest {
	return &abi.AssignRequest{
		Processes:     []string{"A", "B"},
		Subtopologies: []abi.Subtopology{{ID: "0", Partitions: 2, Stateful: true}, {ID: "1", Partitions: 1}},
		Members:       []abi.Member{{ID: "a1", Process: 0}, {ID: "a2", Process: 0}, {ID: "b1", Process: 1}},
	}
}

func TestValidateAssignment(t *testing.T) {
	ok := []abi.MemberAssignment{{Active: []int32{0}}, {Active: []int32{2}}, {Active: []int32{1}, Standby: []int32{0}}}
	if err := abi.ValidateAssignment(twoProcReq(), &abi.AssignResponse{Members: ok}); err != nil {
		t.Fatalf("valid assignment rejected: %v", err)
	}
	bad := map[string]struct {
		ms   []abi.MemberAssignment
		want string
	}{
		"unknown member": {append(ok, abi.MemberAssignment{}), "4 member entries for 3 members"},
		"unknown task":   {[]abi.MemberAssignment{{Active: []int32{0, 3}}, {Active: []int32{2}}, {Active: []int32{1}}}, "unknown active task 3"},
		"task twice":     {[]abi.MemberAssignment{{Active: []int32{0}}, {Active: []int32{0, 2}}, {Active: []int32{1}}}, "task 0 is active on both"},
		"missing task":   {[]abi.MemberAssignment{{Active: []int32{0}}, {}, {Active: []int32{1}}}, "task 2 (subtopology \"1\" partition 0) is not active"},
		"standby on active process": {[]abi.MemberAssignment{{Active: []int32{0}}, {Active: []int32{2}, Standby: []int32{0}}, {Active: []int32{1}}},
			"process \"A\" holds task 0 more than once"},
		"stateless standby": {[]abi.MemberAssignment{{Active: []int32{0}}, {Active: []int32{2}}, {Active: []int32{1}, Standby: []int32{2}}},
			"standby task 2 of a stateless"},
	}
	for name, c := range bad {
		err := abi.ValidateAssignment(twoProcReq(), &abi.AssignResponse{Members: c.ms})
		if !errors.Is(err, abi.ErrInvalidAssignment) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", name, err, c.want)
		}
	}
}
