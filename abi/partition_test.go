package abi_test

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
)

func TestPartitionAssignRequestRoundTrip(t *testing.T) {
	for _, c := range abitest.PartitionCases() {
		b, err := abi.AppendPartitionAssignRequest(nil, c.Req)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		var back abi.PartitionAssignRequest
		if err := abi.DecodePartitionAssignRequest(b, &back); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		again, _ := abi.AppendPartitionAssignRequest(nil, &back)
		if !bytes.Equal(b, again) {
			t.Fatalf("%s: re-encoding differs", c.Name)
		}
		if len(back.Members) != len(c.Req.Members) || back.Members[0].ID != c.Req.Members[0].ID ||
			!reflect.DeepEqual(back.Topics[0].ID, c.Req.Topics[0].ID) {
			t.Fatalf("%s: decoded request differs", c.Name)
		}
	}
}

// TestPartitionAssignBytes pins the encoding of SPEC.md 5.5 and 5.6.
func TestPartitionAssignBytes(t *testing.T) {
	req := &abi.PartitionAssignRequest{
		GroupID: "g", GroupEpoch: 2, Seed: 1, Heterogeneous: true,
		Racks:  []string{"r"},
		Topics: []abi.Topic{{ID: abi.TopicID{15: 7}, Name: "t", Partitions: 2, PartitionRacks: [][]int32{{0}, nil}}},
		Members: []abi.ConsumerMember{{ID: "m", Subscribed: []int32{0},
			Assigned: []abi.TopicPartitions{{Topic: 0, Partitions: []int32{1}}}}},
	}
	want := []byte{5, 1, 'g', 2, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 'r',
		1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 1, 't', 2, 2, 1, 0, 0,
		1, 1, 'm', 0, 0, 1, 0, 1, 0, 1, 1, 0, 0}
	got, err := abi.AppendPartitionAssignRequest(nil, req)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("got % x, %v\nwant % x", got, err, want)
	}
	resp := &abi.PartitionAssignResponse{Members: [][]abi.TopicPartitions{{{Topic: 0, Partitions: []int32{0, 1}}}}}
	rb, err := abi.AppendPartitionAssignResponse(nil, resp)
	if err != nil || !bytes.Equal(rb, []byte{6, 1, 1, 0, 2, 0, 0, 0, 0}) {
		t.Fatalf("response % x, %v", rb, err)
	}
	if err := abi.ValidatePartitionAssignment(req, resp); err != nil {
		t.Fatal(err)
	}
}

func TestPartitionAssignRequestRejects(t *testing.T) {
	base := func() *abi.PartitionAssignRequest {
		return &abi.PartitionAssignRequest{
			Topics: []abi.Topic{{ID: abi.TopicID{1}, Name: "a", Partitions: 3}, {ID: abi.TopicID{2}, Name: "b", Partitions: 1}},
			Members: []abi.ConsumerMember{
				{ID: "x", Subscribed: []int32{0}, Assigned: []abi.TopicPartitions{{Topic: 0, Partitions: []int32{0}}}},
				{ID: "y", Subscribed: []int32{0}},
			},
		}
	}
	for name, tc := range map[string]struct {
		edit func(r *abi.PartitionAssignRequest)
		want string
	}{
		"duplicate member":          {func(r *abi.PartitionAssignRequest) { r.Members[1].ID = "x" }, "appears twice"},
		"homogeneous but differs":   {func(r *abi.PartitionAssignRequest) { r.Members[1].Subscribed = []int32{1} }, "different topics"},
		"partition owned twice":     {func(r *abi.PartitionAssignRequest) { r.Members[1].Assigned = r.Members[0].Assigned }, "assigned to both"},
		"partition out of range":    {func(r *abi.PartitionAssignRequest) { r.Members[0].Assigned[0].Partitions = []int32{3} }, "out of range"},
		"subscription out of range": {func(r *abi.PartitionAssignRequest) { r.Heterogeneous = true; r.Members[1].Subscribed = []int32{2} }, "out of range"},
	} {
		r := base()
		tc.edit(r)
		b, err := abi.AppendPartitionAssignRequest(nil, r)
		if err != nil {
			t.Fatalf("%s: encode: %v", name, err)
		}
		var back abi.PartitionAssignRequest
		if err := abi.DecodePartitionAssignRequest(b, &back); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", name, err, tc.want)
		}
	}
}

func TestValidatePartitionAssignment(t *testing.T) {
	req := abitest.PartitionCases()[1].Req // homogeneous
	bad := map[string]*abi.PartitionAssignResponse{
		"missing member": {Members: make([][]abi.TopicPartitions, len(req.Members)-1)},
		"twice": {Members: func() [][]abi.TopicPartitions {
			ms := make([][]abi.TopicPartitions, len(req.Members))
			ms[0] = []abi.TopicPartitions{{Topic: 0, Partitions: []int32{0}}}
			ms[1] = ms[0]
			return ms
		}()},
	}
	for name, resp := range bad {
		if err := abi.ValidatePartitionAssignment(req, resp); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	het := &abi.PartitionAssignRequest{Heterogeneous: true,
		Topics:  []abi.Topic{{ID: abi.TopicID{1}, Partitions: 1}},
		Members: []abi.ConsumerMember{{ID: "a"}}}
	if err := abi.ValidatePartitionAssignment(het, &abi.PartitionAssignResponse{Members: [][]abi.TopicPartitions{{{Topic: 0, Partitions: []int32{0}}}}}); err == nil {
		t.Error("a partition of an unsubscribed topic was accepted")
	}
}

// TestPartitionAssignMemberOrder pins request tag 0 (SPEC.md 5.5): the
// member order a host sends, its bytes, a request without it, unknown tags
// beside it, and the orders a reader rejects.
func TestPartitionAssignMemberOrder(t *testing.T) {
	req := &abi.PartitionAssignRequest{
		Topics:  []abi.Topic{{ID: abi.TopicID{1}, Name: "a", Partitions: 1}},
		Members: []abi.ConsumerMember{{ID: "x", Subscribed: []int32{0}}, {ID: "y", Subscribed: []int32{0}}},
	}
	plain, err := abi.AppendPartitionAssignRequest(nil, req)
	if err != nil {
		t.Fatal(err)
	}
	var back abi.PartitionAssignRequest
	if err := abi.DecodePartitionAssignRequest(plain, &back); err != nil || back.MemberOrder != nil {
		t.Fatalf("without the tag: order %v, %v", back.MemberOrder, err)
	}
	req.MemberOrder = []int32{1, 0}
	b, err := abi.AppendPartitionAssignRequest(nil, req)
	if err != nil {
		t.Fatal(err)
	}
	body := plain[:len(plain)-1] // all but the empty tags section
	if want := append(bytes.Clone(body), 1, 0, 3, 2, 1, 0); !bytes.Equal(b, want) {
		t.Fatalf("got % x\nwant % x", b, want)
	}
	if err := abi.DecodePartitionAssignRequest(b, &back); err != nil || !reflect.DeepEqual(back.MemberOrder, req.MemberOrder) {
		t.Fatalf("round trip: order %v, %v", back.MemberOrder, err)
	}
	withUnknown := append(bytes.Clone(body), 2, 0, 3, 2, 1, 0, 9, 2, 0xff, 0xff)
	if err := abi.DecodePartitionAssignRequest(withUnknown, &back); err != nil || !reflect.DeepEqual(back.MemberOrder, req.MemberOrder) {
		t.Fatalf("beside an unknown tag: order %v, %v", back.MemberOrder, err)
	}
	for name, tags := range map[string][]byte{
		"too few entries":   {1, 0, 2, 1, 0},
		"repeated index":    {1, 0, 3, 2, 1, 1},
		"index of no one":   {1, 0, 3, 2, 0, 2},
		"bytes left over":   {1, 0, 4, 2, 1, 0, 0},
		"payload too short": {1, 0, 3, 2, 1},
	} {
		if err := abi.DecodePartitionAssignRequest(append(bytes.Clone(body), tags...), &back); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	req.MemberOrder = []int32{0, 0}
	if _, err := abi.AppendPartitionAssignRequest(nil, req); err == nil {
		t.Error("an order that is not a permutation was encoded")
	}
}
