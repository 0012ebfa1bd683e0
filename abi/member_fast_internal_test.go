package abi

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

// decodeBoth decodes b with the member fast path on and off.
func decodeBoth(b []byte) (fast, checked AssignRequest, errFast, errChecked error) {
	var d1, d2 Decoder
	errFast = d1.DecodeAssignRequest(b, &fast)
	memberFastPath = false
	defer func() { memberFastPath = true }()
	errChecked = d2.DecodeAssignRequest(b, &checked)
	return
}

// TestMemberFastPathMatchesChecked: the fast member decoder gives exactly
// what the field-by-field reader gives — the same request, or the same
// error text (field and byte offset) — on records that take the fast path,
// records that need the fallback (long strings, client tags, large process
// indices), and truncated or corrupted messages.
func TestMemberFastPathMatchesChecked(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	str := func() string {
		switch rng.IntN(4) {
		case 0:
			return ""
		case 1:
			return strings.Repeat("x", 120+rng.IntN(20)) // around the one-byte length limit
		}
		return fmt.Sprintf("id-%d-é", rng.IntN(1<<20))
	}
	compared := 0
	for c := range 400 {
		procs := 1 + rng.IntN(3)
		if c%7 == 0 {
			procs = 200 // two-byte process indices
		}
		req := &AssignRequest{GroupID: "g", Subtopologies: []Subtopology{{ID: "s", Partitions: 300, Stateful: true}}}
		for p := range procs {
			req.Processes = append(req.Processes, fmt.Sprintf("p%04d", p))
		}
		for i := range 1 + rng.IntN(6) {
			m := Member{ID: fmt.Sprintf("m%d-%s", i, str()), InstanceID: str(), Rack: str(), Process: int32(rng.IntN(procs))}
			if rng.IntN(3) == 0 {
				m.ClientTags = []KV{{Key: "az", Value: str()}, {Key: "zone", Value: "b"}}
			}
			for t := int32(0); t < 300; t += 1 + rng.Int32N(150) {
				m.Active = append(m.Active, t)
				m.TaskOffsets = append(m.TaskOffsets, TaskOffset{Task: t, Offset: rng.Int64N(1 << (rng.IntN(40) + 1))})
			}
			if rng.IntN(2) == 0 {
				m.TaskEndOffsets = []TaskOffset{{Task: 299, Offset: -5}}
			}
			req.Members = append(req.Members, m)
		}
		b, err := AppendAssignRequest(nil, req)
		if err != nil {
			t.Fatal(err)
		}
		variants := [][]byte{b, b[:rng.IntN(len(b))]}
		for range 3 {
			bad := append([]byte(nil), b...)
			bad[rng.IntN(len(bad))] ^= byte(1 + rng.IntN(255))
			variants = append(variants, bad)
		}
		for _, v := range variants {
			fast, checked, e1, e2 := decodeBoth(v)
			if fmt.Sprint(e1) != fmt.Sprint(e2) {
				t.Fatalf("case %d: fast path error %v, checked path error %v", c, e1, e2)
			}
			if e1 == nil && !reflect.DeepEqual(fast, checked) {
				t.Fatalf("case %d: fast and checked paths decode differently", c)
			}
			compared++
		}
	}
	if compared < 2000 {
		t.Fatalf("only %d comparisons", compared)
	}
}

// encodeBoth encodes r with the member fast path on and off.
func encodeBoth(r *AssignRequest) (fast, checked []byte, errFast, errChecked error) {
	fast, errFast = AppendAssignRequest(nil, r)
	memberFastPath = false
	defer func() { memberFastPath = true }()
	checked, errChecked = AppendAssignRequest(nil, r)
	return
}

// TestMemberFastEncodeMatchesChecked: the fast member encoder writes the
// same bytes as the checked writer, and on a broken rule (unsorted tasks,
// negative process, unsorted tags, too long a string) fails with the same
// error.
func TestMemberFastEncodeMatchesChecked(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for c := range 300 {
		req := &AssignRequest{GroupID: "g", Processes: []string{"a", "b"}, Subtopologies: []Subtopology{{ID: "s", Partitions: 1000, Stateful: true}}}
		for i := range 1 + rng.IntN(5) {
			m := Member{ID: fmt.Sprintf("m%d", i), Rack: strings.Repeat("r", rng.IntN(200)), Process: int32(rng.IntN(2))}
			if rng.IntN(2) == 0 {
				m.ClientTags = []KV{{Key: "a", Value: "x"}, {Key: "b", Value: strings.Repeat("y", rng.IntN(300))}}
			}
			for t := int32(rng.IntN(3)); t < 1000; t += 1 + rng.Int32N(400) {
				m.Active = append(m.Active, t)
				m.TaskEndOffsets = append(m.TaskEndOffsets, TaskOffset{Task: t, Offset: rng.Int64N(1<<50) - 1<<49})
			}
			req.Members = append(req.Members, m)
		}
		m := &req.Members[rng.IntN(len(req.Members))]
		switch rng.IntN(6) {
		case 0:
			m.Process = -1
		case 1:
			if len(m.Active) > 1 {
				m.Active[0], m.Active[1] = m.Active[1], m.Active[0]
			}
		case 2:
			m.ClientTags = []KV{{Key: "b"}, {Key: "a"}}
		case 3:
			m.InstanceID = strings.Repeat("i", MaxString+1)
		}
		fast, checked, e1, e2 := encodeBoth(req)
		if fmt.Sprint(e1) != fmt.Sprint(e2) {
			t.Fatalf("case %d: fast error %v, checked error %v", c, e1, e2)
		}
		if e1 == nil && !bytes.Equal(fast, checked) {
			t.Fatalf("case %d: fast and checked encodings differ", c)
		}
	}
}

// FuzzMemberFastPath: on any bytes, the fast member decoder and the
// checked one agree (same request or same error).
func FuzzMemberFastPath(f *testing.F) {
	for _, r := range []*AssignRequest{
		{Processes: []string{"p"}, Subtopologies: []Subtopology{{ID: "s", Partitions: 300}},
			Members: []Member{{ID: "a", Active: []int32{0, 200}, TaskOffsets: []TaskOffset{{Task: 1, Offset: 1 << 40}}}, {ID: "b", Rack: "r", ClientTags: []KV{{Key: "k", Value: "v"}}}}},
	} {
		b, _ := AppendAssignRequest(nil, r)
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, checked, e1, e2 := decodeBoth(b)
		if fmt.Sprint(e1) != fmt.Sprint(e2) {
			t.Fatalf("fast path error %v, checked path error %v", e1, e2)
		}
		if e1 == nil && !reflect.DeepEqual(fast, checked) {
			t.Fatal("fast and checked paths decode differently")
		}
	})
}
