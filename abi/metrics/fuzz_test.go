package metrics

import (
	"testing"

	"github.com/coordhost/coordhost/abi"
)

// FuzzMeasure: any request and response the ABI decoders accept (a
// response need not be valid for its request) give a report or an error,
// never a panic, and the hand-overs listed are those counted.
func FuzzMeasure(f *testing.F) {
	req := group(100,
		abi.Member{ID: "a", Process: 0, Active: []int32{0, 1, 4}, TaskEndOffsets: offs(0, 1000, 1, 1000)},
		abi.Member{ID: "b", Process: 1, Rack: "r", Active: []int32{2, 3, 5}, Standby: []int32{0}},
		abi.Member{ID: "c", Process: 2, Rack: "s", TaskOffsets: offs(1, 900, 3, 500)},
	)
	resp := target([]int32{0}, []int32{2, 4}, []int32{1, 3, 5})
	resp.Members[0].Warmup = []int32{3}
	rb, err := abi.AppendAssignRequest(nil, req)
	if err != nil {
		f.Fatal(err)
	}
	pb, err := abi.AppendAssignResponse(nil, resp)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(rb, pb)
	f.Add(rb, []byte{2, 0, 1, 0})
	f.Fuzz(func(t *testing.T, reqBytes, respBytes []byte) {
		var req abi.AssignRequest
		var resp abi.AssignResponse
		if abi.DecodeAssignRequest(reqBytes, &req) != nil || abi.DecodeAssignResponse(respBytes, &resp) != nil {
			return
		}
		r, err := Measure(&req, &resp, Options{})
		if err != nil {
			return
		}
		hs, err := HandOvers(&req, &resp, Options{})
		if err != nil || len(hs) != r.Movement.HandOvers {
			t.Fatalf("%d hand-overs listed (%v), %d counted", len(hs), err, r.Movement.HandOvers)
		}
	})
}
