package abi_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
)

// tiny is the request whose bytes are spelled out by hand in
// TestAssignRequestBytes, straight from the tables of SPEC.md.
func tiny() *abi.AssignRequest {
	return &abi.AssignRequest{
		GroupID: "g", GroupEpoch: 3, Seed: 0x0102030405060708,
		Configs: abi.Configs{NumStandbyReplicas: 1, AcceptableRecoveryLag: -1,
			All: []abi.KV{{Key: "k", Value: "v"}}},
		Processes:     []string{"A"},
		Subtopologies: []abi.Subtopology{{ID: "0", Partitions: 130, Stateful: true}},
		Members: []abi.Member{{ID: "m", Process: 0, Active: []int32{1, 129},
			TaskOffsets: []abi.TaskOffset{{Task: 129, Offset: 5}}}},
	}
}

func TestAssignRequestBytes(t *testing.T) {
	want := []byte{
		1,      // kind
		1, 'g', // group_id
		3,                      // group_epoch
		8, 7, 6, 5, 4, 3, 2, 1, // seed, little-endian
		1,                 // num_standby_replicas
		0,                 // num_warmup_replicas
		1,                 // acceptable_recovery_lag -1 zigzag
		0,                 // rack tags
		1, 1, 'k', 1, 'v', // configs
		1, 1, 'A', // processes
		1, 1, '0', 0x82, 0x01, 1, // subtopology "0", 130 partitions, stateful
		1,      // one member
		1, 'm', // member_id
		0,         // instance_id
		0,         // process
		0,         // rack
		0,         // client tags
		2, 1, 127, // active {1, 129}: gaps 1, 127
		0, 0, // standby, warmup
		1, 129, 1, 10, // task_offsets {129: 5}: gap 129 (LEB128 0x81 0x01), zigzag 5 = 10
		0, // task_end_offsets
		0, // member tags
		0, // request tags
	}
	// The gap 129 needs two LEB128 bytes.
	want = bytes.Replace(want, []byte{1, 129, 1, 10}, []byte{1, 0x81, 0x01, 10}, 1)
	got, err := abi.AppendAssignRequest(nil, tiny())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding differs from SPEC.md:\n got %v\nwant %v", got, want)
	}
	var back abi.AssignRequest
	if err := abi.DecodeAssignRequest(want, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&back, tiny()) {
		t.Fatalf("decoded %+v", back)
	}
}

func TestAssignResponseBytes(t *testing.T) {
	resp := &abi.AssignResponse{Members: []abi.MemberAssignment{{Active: []int32{0, 2}, Warmup: []int32{5}}}, NextProbeMs: -1}
	want := []byte{2, 1, 2, 0, 1, 0, 1, 5, 0, 1, 0}
	got, err := abi.AppendAssignResponse(nil, resp)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("got %v, %v; want %v", got, err, want)
	}
}

func TestDecodeSkipsUnknownTags(t *testing.T) {
	b, _ := abi.AppendAssignResponse(nil, &abi.AssignResponse{NextProbeMs: 7})
	// Replace the final empty tags section with two tags a newer writer
	// might add.
	b = append(b[:len(b)-1], 2, 3, 2, 0xAA, 0xBB, 9, 0)
	var r abi.AssignResponse
	if err := abi.DecodeAssignResponse(b, &r); err != nil || r.NextProbeMs != 7 {
		t.Fatalf("got %+v, %v", r, err)
	}
}

func TestDecodeRejects(t *testing.T) {
	good, _ := abi.AppendAssignRequest(nil, tiny())
	cases := map[string][]byte{
		"empty":           nil,
		"wrong kind":      append([]byte{2}, good[1:]...),
		"truncated":       good[:len(good)-3],
		"trailing byte":   append(append([]byte{}, good...), 0),
		"huge count":      {1, 1, 'g', 3, 8, 7, 6, 5, 4, 3, 2, 1, 1, 0, 1, 0xff, 0xff, 0xff, 0xff, 0x07},
		"overlong varint": {1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01},
	}
	for name, b := range cases {
		var r abi.AssignRequest
		err := abi.DecodeAssignRequest(b, &r)
		var de *abi.DecodeError
		if !errors.As(err, &de) {
			t.Errorf("%s: got %v, want a DecodeError", name, err)
		}
	}
}

func TestDecodeChecksIndices(t *testing.T) {
	req := tiny()
	req.Members[0].Process = 1
	b, _ := abi.AppendAssignRequest(nil, req)
	var r abi.AssignRequest
	if err := abi.DecodeAssignRequest(b, &r); err == nil || !strings.Contains(err.Error(), "process index 1") {
		t.Fatalf("got %v", err)
	}
	req = tiny()
	req.Members[0].Active = []int32{130}
	b, _ = abi.AppendAssignRequest(nil, req)
	if err := abi.DecodeAssignRequest(b, &r); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Fatalf("got %v", err)
	}
}

func TestEncodeRejectsUnsortedSets(t *testing.T) {
	_, err := abi.AppendAssignResponse(nil, &abi.AssignResponse{Members: []abi.MemberAssignment{{Active: []int32{3, 1}}}})
	var ee *abi.EncodeError
	if !errors.As(err, &ee) {
		t.Fatalf("got %v", err)
	}
}

func TestRoundTripGenerated(t *testing.T) {
	for _, c := range abitest.Cases(false) {
		b, err := abi.AppendAssignRequest(nil, c.Req)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		var back abi.AssignRequest
		if err := abi.DecodeAssignRequest(b, &back); err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		again, _ := abi.AppendAssignRequest(nil, &back)
		if !bytes.Equal(b, again) {
			t.Fatalf("%s: re-encoding differs", c.Name)
		}
	}
}

func TestProbeRoundTrip(t *testing.T) {
	pr := &abi.ProbeRequest{NowMs: 1700000000000, LastAssignMs: 1699999990000, Group: *tiny(),
		Target: []abi.MemberAssignment{{Active: []int32{0}}}}
	b, err := abi.AppendProbeRequest(nil, pr)
	if err != nil {
		t.Fatal(err)
	}
	var back abi.ProbeRequest
	if err := abi.DecodeProbeRequest(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.NowMs != pr.NowMs || len(back.Target) != 1 || back.Group.Members[0].ID != "m" {
		t.Fatalf("got %+v", back)
	}
	rb := abi.AppendProbeResponse(nil, &abi.ProbeResponse{Rebalance: true, NextProbeMs: 60000})
	var resp abi.ProbeResponse
	if err := abi.DecodeProbeResponse(rb, &resp); err != nil || !resp.Rebalance || resp.NextProbeMs != 60000 {
		t.Fatalf("got %+v %v", resp, err)
	}
}

func TestTaskSpaceLocate(t *testing.T) {
	ts := abi.NewTaskSpace([]abi.Subtopology{{Partitions: 3}, {Partitions: 0}, {Partitions: 2}})
	want := [][2]int32{{0, 0}, {0, 1}, {0, 2}, {2, 0}, {2, 1}}
	for task, w := range want {
		s, p := ts.Locate(int32(task))
		if s != w[0] || p != w[1] || ts.Task(s, p) != int32(task) {
			t.Errorf("task %d: got (%d,%d), want %v", task, s, p, w)
		}
	}
}

// TestDecoderReuse: a Decoder gives the same result as a fresh decode, for
// requests smaller and larger than the one before.
func TestDecoderReuse(t *testing.T) {
	var d abi.Decoder
	cases := abitest.Cases(false)
	for _, i := range []int{9, 0, 7, 9, 3} {
		b, _ := abi.AppendAssignRequest(nil, cases[i].Req)
		var fresh, reused abi.AssignRequest
		if err := abi.DecodeAssignRequest(b, &fresh); err != nil {
			t.Fatal(err)
		}
		if err := d.DecodeAssignRequest(b, &reused); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(fresh, reused) {
			t.Fatalf("%s: reused decoder differs from a fresh decode", cases[i].Name)
		}
	}
	dup := tiny()
	dup.Members = append(dup.Members, dup.Members[0])
	b, _ := abi.AppendAssignRequest(nil, dup)
	var r abi.AssignRequest
	if err := d.DecodeAssignRequest(b, &r); err == nil || !strings.Contains(err.Error(), "appears twice") {
		t.Fatalf("duplicate member: %v", err)
	}
	b, _ = abi.AppendAssignRequest(nil, tiny())
	if err := d.DecodeAssignRequest(b, &r); err != nil {
		t.Fatalf("decoder not usable after an error: %v", err)
	}
}

// TestDecoderAliasInput: with AliasInput the decoded request is the same,
// and its strings are the input's own bytes (they change with it: the
// contract the option documents), not a copy.
func TestDecoderAliasInput(t *testing.T) {
	req := abitest.Generate(abitest.Shape{Members: 5, Processes: 2, Subtopologies: 2, Partitions: 4, RandomIDs: true, Seed: 9})
	in, _ := abi.AppendAssignRequest(nil, req)
	var copied, aliased abi.AssignRequest
	if err := abi.DecodeAssignRequest(in, &copied); err != nil {
		t.Fatal(err)
	}
	d := abi.Decoder{AliasInput: true}
	if err := d.DecodeAssignRequest(in, &aliased); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(copied, aliased) {
		t.Fatal("AliasInput decodes a different request")
	}
	id := copied.Members[0].ID
	at := bytes.Index(in, []byte(id))
	in[at] ^= 1
	if aliased.Members[0].ID == id || copied.Members[0].ID != id {
		t.Fatalf("aliased id %q, copied id %q after changing the input", aliased.Members[0].ID, copied.Members[0].ID)
	}
}

// TestHugeTaskGapRejected: a task-set gap of 2^64-1 (which would wrap to
// task -1 in int64 arithmetic) is an error, in task sets and offset lists.
func TestHugeTaskGapRejected(t *testing.T) {
	huge := []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}
	for _, field := range []string{"active", "offsets"} {
		req := &abi.AssignRequest{Processes: []string{"p"}, Subtopologies: []abi.Subtopology{{ID: "s", Partitions: 2}},
			Members: []abi.Member{{ID: "m", Active: []int32{1}}}}
		if field == "offsets" {
			req.Members[0].Active = nil
			req.Members[0].TaskOffsets = []abi.TaskOffset{{Task: 1, Offset: 0}}
		}
		b, _ := abi.AppendAssignRequest(nil, req)
		// The member's only task is encoded as gap 1: the last 0x01 before
		// the offset/tags bytes. Replace that byte with the 10-byte gap.
		var at int
		if field == "active" {
			at = bytes.LastIndex(b, []byte{1, 1, 0, 0, 0, 0, 0}) + 1 // count 1, gap 1, empty standby/warmup/offsets/end offsets, tags
		} else {
			at = bytes.LastIndex(b, []byte{1, 1, 0, 0, 0}) + 1 // count 1, gap 1, offset 0, end offsets, tags
		}
		if at <= 0 {
			t.Fatalf("%s: layout not found in %x", field, b)
		}
		bad := append(append(append([]byte(nil), b[:at]...), huge...), b[at+1:]...)
		var r abi.AssignRequest
		err := abi.DecodeAssignRequest(bad, &r)
		if err == nil || !strings.Contains(err.Error(), "exceeds limit") {
			t.Fatalf("%s: huge gap decoded as %+v, err %v", field, r.Members, err)
		}
	}
}
