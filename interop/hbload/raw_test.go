package main

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestParseOpen(t *testing.T) {
	for _, s := range []string{openRaw, openKgo} {
		if got, err := parseOpen(s); err != nil || got != s {
			t.Errorf("parseOpen(%q) = %q, %v", s, got, err)
		}
	}
	if _, err := parseOpen("fast"); err == nil {
		t.Error("parseOpen(fast): no error")
	}
}

// frame is a size-prefixed response: correlation ID, an empty tag
// section (flexible header), then body.
func frame(corr int32, body []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(4+1+len(body)))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	return append(append(b, 0), body...)
}

func TestNextFrame(t *testing.T) {
	one := frame(7, []byte("abc"))
	two := append(append([]byte{}, one...), one[:6]...)
	body, rest, err := nextFrame(two)
	if err != nil || len(body) != 8 || !bytes.Equal(rest, one[:6]) {
		t.Fatalf("nextFrame(one and a part) = %q, %q, %v", body, rest, err)
	}
	if _, rest2, err := nextFrame(rest); err != errShortFrame || !bytes.Equal(rest2, rest) {
		t.Errorf("nextFrame(part) = %q, %v; want the part back and errShortFrame", rest2, err)
	}
	for _, b := range [][]byte{nil, {0, 0}} {
		if _, _, err := nextFrame(b); err != errShortFrame {
			t.Errorf("nextFrame(%v): %v, want errShortFrame", b, err)
		}
	}
	for _, n := range []uint32{1<<31 + 5, maxFrame + 1} {
		if _, _, err := nextFrame(binary.BigEndian.AppendUint32(nil, n)); err == nil || err == errShortFrame {
			t.Errorf("nextFrame(size %d): %v, want a bound error", int32(n), err)
		}
	}
}

func TestParseHeartbeatResponse(t *testing.T) {
	resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	resp.MemberID, resp.MemberEpoch, resp.HeartbeatIntervalMillis = "m1", 4, 5000
	b := frame(42, resp.AppendTo(nil))
	corr, got, err := parseHeartbeatResponse(b[4:], resp.Version)
	if err != nil || corr != 42 || got.MemberID != "m1" || got.MemberEpoch != 4 || got.HeartbeatIntervalMillis != 5000 {
		t.Fatalf("parse = %d, %+v, %v", corr, got, err)
	}
	// A header tag of 3 bytes is skipped.
	tagged := binary.BigEndian.AppendUint32(nil, 43)
	tagged = append(tagged, 1, 0, 3, 'x', 'y', 'z')
	tagged = append(tagged, resp.AppendTo(nil)...)
	if corr, got, err := parseHeartbeatResponse(tagged, resp.Version); err != nil || corr != 43 || got.MemberEpoch != 4 {
		t.Errorf("parse with a header tag = %d, %+v, %v", corr, got, err)
	}
	for name, body := range map[string][]byte{
		"no correlation ID": {0, 0},
		"tag past the end":  {0, 0, 0, 1, 1, 0, 9, 'x'},
		"truncated body":    b[4 : len(b)-3],
	} {
		if _, _, err := parseHeartbeatResponse(body, resp.Version); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func FuzzParseHeartbeatResponse(f *testing.F) {
	resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	resp.MemberID, resp.MemberEpoch = "m1", 4
	resp.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{1, 2}}}
	f.Add(frame(1, resp.AppendTo(nil)))
	f.Add([]byte{0, 0, 0, 5, 0, 0, 0, 1, 2, 1, 200})
	f.Fuzz(func(t *testing.T, b []byte) {
		body, _, err := nextFrame(b)
		if err != nil {
			body = b
		}
		_, _, _ = parseHeartbeatResponse(body, resp.Version)
	})
}
