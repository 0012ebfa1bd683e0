package abi_test

import (
	"bytes"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
)

// FuzzDecodeAssignRequest: the decoder never panics, and whatever it accepts
// re-encodes to bytes that decode to the same request.
func FuzzDecodeAssignRequest(f *testing.F) {
	for _, c := range abitest.Cases(true) {
		b, _ := abi.AppendAssignRequest(nil, c.Req)
		f.Add(b)
	}
	b, _ := abi.AppendAssignRequest(nil, tiny())
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		var r abi.AssignRequest
		if abi.DecodeAssignRequest(b, &r) != nil {
			return
		}
		again, err := abi.AppendAssignRequest(nil, &r)
		if err != nil {
			t.Fatalf("accepted request does not re-encode: %v", err)
		}
		var r2 abi.AssignRequest
		if err := abi.DecodeAssignRequest(again, &r2); err != nil {
			t.Fatalf("re-encoded request does not decode: %v", err)
		}
		third, _ := abi.AppendAssignRequest(nil, &r2)
		if !bytes.Equal(again, third) {
			t.Fatal("encoding is not stable")
		}
	})
}

// FuzzDecodeAssignResponse: never panics; accepted responses re-encode and
// validation of any decoded response against a fixed request never panics.
func FuzzDecodeAssignResponse(f *testing.F) {
	f.Add([]byte{2, 1, 2, 0, 1, 0, 1, 5, 0, 1, 0})
	f.Add([]byte{2, 0, 1, 0})
	req := twoProcReq()
	f.Fuzz(func(t *testing.T, b []byte) {
		var r abi.AssignResponse
		if abi.DecodeAssignResponse(b, &r) != nil {
			return
		}
		if _, err := abi.AppendAssignResponse(nil, &r); err != nil {
			t.Fatalf("accepted response does not re-encode: %v", err)
		}
		_ = abi.ValidateAssignment(req, &r)
	})
}

// FuzzDecodeProbe: the probe decoders never panic.
func FuzzDecodeProbe(f *testing.F) {
	pr, _ := abi.AppendProbeRequest(nil, &abi.ProbeRequest{Group: *tiny(), Target: []abi.MemberAssignment{{}}})
	f.Add(pr)
	f.Add(abi.AppendProbeResponse(nil, &abi.ProbeResponse{Rebalance: true, NextProbeMs: -1}))
	f.Fuzz(func(t *testing.T, b []byte) {
		var req abi.ProbeRequest
		_ = abi.DecodeProbeRequest(b, &req)
		var resp abi.ProbeResponse
		_ = abi.DecodeProbeResponse(b, &resp)
	})
}

// FuzzDecodePartitionAssign: the partition-assignor decoders never panic;
// an accepted request re-encodes to bytes that decode to the same request, and validating any
// decoded response against a fixed request never panics.
func FuzzDecodePartitionAssign(f *testing.F) {
	cases := abitest.PartitionCases()
	for _, c := range cases[:4] {
		b, _ := abi.AppendPartitionAssignRequest(nil, c.Req)
		f.Add(b)
	}
	ordered := *cases[1].Req // with request tag 0, the member order
	ordered.MemberOrder = make([]int32, len(ordered.Members))
	for i := range ordered.MemberOrder {
		ordered.MemberOrder[i] = int32(len(ordered.Members) - 1 - i)
	}
	b, err := abi.AppendPartitionAssignRequest(nil, &ordered)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add([]byte{6, 1, 1, 0, 2, 0, 0, 0, 0})
	req := cases[0].Req
	f.Fuzz(func(t *testing.T, b []byte) {
		var r abi.PartitionAssignRequest
		if abi.DecodePartitionAssignRequest(b, &r) == nil {
			again, err := abi.AppendPartitionAssignRequest(nil, &r)
			if err != nil {
				t.Fatalf("accepted request does not re-encode: %v", err)
			}
			var r2 abi.PartitionAssignRequest
			if err := abi.DecodePartitionAssignRequest(again, &r2); err != nil {
				t.Fatalf("re-encoded request does not decode: %v", err)
			}
			if third, _ := abi.AppendPartitionAssignRequest(nil, &r2); !bytes.Equal(again, third) {
				t.Fatal("encoding is not stable")
			}
		}
		var resp abi.PartitionAssignResponse
		if abi.DecodePartitionAssignResponse(b, len(req.Topics), &resp) == nil {
			if _, err := abi.AppendPartitionAssignResponse(nil, &resp); err != nil {
				t.Fatalf("accepted response does not re-encode: %v", err)
			}
			_ = abi.ValidatePartitionAssignment(req, &resp)
		}
	})
}
