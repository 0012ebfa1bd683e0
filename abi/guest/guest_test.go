package guest

import (
	"errors"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
)

func encodedReq(t *testing.T) []byte {
	t.Helper()
	b, err := abi.AppendAssignRequest(nil, &abi.AssignRequest{
		Processes:     []string{"p"},
		Subtopologies: []abi.Subtopology{{ID: "0", Partitions: 2}},
		Members:       []abi.Member{{ID: "m"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func withAssign(t *testing.T, f AssignFunc) {
	old := assignFn
	HandleAssign(f)
	t.Cleanup(func() { assignFn = old })
}

func TestInvokeAssignOK(t *testing.T) {
	withAssign(t, func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
		return &abi.AssignResponse{Members: []abi.MemberAssignment{{Active: []int32{0, 1}}}, NextProbeMs: -1}, nil
	})
	st, out := InvokeAssign(encodedReq(t))
	if st != abi.StatusOK {
		t.Fatalf("status %v: %s", st, out)
	}
	var resp abi.AssignResponse
	if err := abi.DecodeAssignResponse(out, &resp); err != nil || len(resp.Members[0].Active) != 2 {
		t.Fatalf("got %+v, %v", resp, err)
	}
	if Kinds() != abi.KindAssign {
		t.Fatalf("kinds %d", Kinds())
	}
}

func TestInvokeAssignRecoversPanic(t *testing.T) {
	withAssign(t, func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
		var m []int
		_ = m[len(req.Members)+3] // index out of range
		return nil, nil
	})
	st, out := InvokeAssign(encodedReq(t))
	if st != abi.StatusPanic || !strings.Contains(string(out), "index out of range") {
		t.Fatalf("status %v: %s", st, out)
	}
}

func TestInvokeAssignErrors(t *testing.T) {
	withAssign(t, func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
		return nil, errors.New("no member available")
	})
	if st, out := InvokeAssign(encodedReq(t)); st != abi.StatusAssignError || string(out) != "no member available" {
		t.Fatalf("status %v: %s", st, out)
	}
	if st, _ := InvokeAssign([]byte{9, 9}); st != abi.StatusDecodeError {
		t.Fatalf("garbage input: status %v", st)
	}
	withAssign(t, func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
		return nil, errors.Join(ErrUnsupported, errors.New("warm-ups"))
	})
	if st, _ := InvokeAssign(encodedReq(t)); st != abi.StatusUnsupported {
		t.Fatalf("status %v", st)
	}
	withAssign(t, func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
		return &abi.AssignResponse{Members: []abi.MemberAssignment{{Active: []int32{1, 0}}}}, nil
	})
	if st, out := InvokeAssign(encodedReq(t)); st != abi.StatusPanic || !strings.Contains(string(out), "strictly ascending") {
		t.Fatalf("unsorted output: status %v: %s", st, out)
	}
}

func TestInvokeProbeWithoutHandler(t *testing.T) {
	if st, _ := InvokeProbe(nil); st != abi.StatusUnsupported {
		t.Fatalf("status %v", st)
	}
}

// TestMemberOrderAndAliasInput: during a call, MemberOrder gives the
// members by ascending id, and with AliasInput the request decodes the
// same.
func TestMemberOrderAndAliasInput(t *testing.T) {
	in, err := abi.AppendAssignRequest(nil, &abi.AssignRequest{
		Processes:     []string{"p"},
		Subtopologies: []abi.Subtopology{{ID: "0", Partitions: 3}},
		Members:       []abi.Member{{ID: "c"}, {ID: "a"}, {ID: "b"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	SetOptions(Options{AliasInput: true})
	t.Cleanup(func() { SetOptions(Options{}) })
	var ids, ordered []string
	withAssign(t, func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
		for _, m := range req.Members {
			ids = append(ids, strings.Clone(m.ID))
		}
		for _, i := range MemberOrder() {
			ordered = append(ordered, req.Members[i].ID)
		}
		return &abi.AssignResponse{Members: []abi.MemberAssignment{{Active: []int32{0}}, {Active: []int32{1}}, {Active: []int32{2}}}, NextProbeMs: -1}, nil
	})
	if st, out := InvokeAssign(in); st != abi.StatusOK {
		t.Fatalf("status %v: %s", st, out)
	}
	if strings.Join(ids, ",") != "c,a,b" || strings.Join(ordered, ",") != "a,b,c" {
		t.Fatalf("ids %v, by MemberOrder %v", ids, ordered)
	}
}

func TestInvokeAssignPartitions(t *testing.T) {
	old := partsFn
	t.Cleanup(func() { partsFn = old })
	req := &abi.PartitionAssignRequest{
		Topics:  []abi.Topic{{ID: abi.TopicID{1}, Name: "t", Partitions: 2}},
		Members: []abi.ConsumerMember{{ID: "m", Subscribed: []int32{0}}},
	}
	in, err := abi.AppendPartitionAssignRequest(nil, req)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := InvokeAssignPartitions(in); st != abi.StatusUnsupported {
		t.Fatalf("without a handler: status %v", st)
	}
	HandleAssignPartitions(func(r *abi.PartitionAssignRequest) (*abi.PartitionAssignResponse, error) {
		return &abi.PartitionAssignResponse{Members: [][]abi.TopicPartitions{{{Topic: 0, Partitions: []int32{0, 1}}}}}, nil
	})
	if Kinds()&abi.KindAssignPartitions == 0 {
		t.Fatalf("kinds %d", Kinds())
	}
	st, out := InvokeAssignPartitions(in)
	var resp abi.PartitionAssignResponse
	if st != abi.StatusOK || abi.DecodePartitionAssignResponse(out, 1, &resp) != nil || abi.ValidatePartitionAssignment(req, &resp) != nil {
		t.Fatalf("status %v: %q", st, out)
	}
	if st, out := InvokeAssignPartitions(in[:len(in)-1]); st != abi.StatusDecodeError {
		t.Fatalf("truncated input: status %v: %s", st, out)
	}
	HandleAssignPartitions(func(r *abi.PartitionAssignRequest) (*abi.PartitionAssignResponse, error) {
		return nil, errors.New("no")
	})
	if st, out := InvokeAssignPartitions(in); st != abi.StatusAssignError || string(out) != "no" {
		t.Fatalf("status %v: %s", st, out)
	}
}
