package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// seedFrames returns well-formed request frames (without size prefix) of
// several keys, flexible and not, to seed the fuzzers.
func seedFrames() [][]byte {
	f := kmsg.NewRequestFormatter(kmsg.FormatterClientID("seed"))
	var out [][]byte
	add := func(r kmsg.Request, v int16) {
		r.SetVersion(v)
		out = append(out, f.AppendRequest(nil, r, 7)[4:])
	}
	add(kmsg.NewPtrApiVersionsRequest(), 3)
	add(kmsg.NewPtrApiVersionsRequest(), 0)
	add(kmsg.NewPtrMetadataRequest(), 12)
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.ProtocolType = "g", "consumer"
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{0, 1}}}
	add(jg, 9)
	add(jg, 5)
	sh := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	sh.Group, sh.MemberID = "app", "m1"
	add(sh, 1)
	pr := kmsg.NewPtrProduceRequest()
	pr.Acks = -1
	add(pr, 9)
	long := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	long.Group, long.MemberID = "app", strings.Repeat("m", MaxStringLen+1)
	add(long, 0)
	return out
}

func FuzzParseRequest(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(s)
	}
	f.Add([]byte{})
	f.Add([]byte{0, 200, 0, 0, 0, 0, 0, 1})
	f.Add([]byte{0, 18, 0x7f, 0, 0, 0, 0, 1, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, frame []byte) {
		req, err := ParseRequest(frame)
		if err == nil {
			if req.Body == nil || req.Body.Key() != req.Key || req.Body.GetVersion() != req.Version {
				t.Fatalf("parsed request inconsistent with its header: %+v", req)
			}
			n := longestString(reflect.ValueOf(req.Body))
			if n > MaxStringLen {
				t.Fatalf("accepted a string of %d bytes", n)
			}
			if ref := longestStringRef(reflect.ValueOf(req.Body)); n != ref {
				t.Fatalf("longestString %d, the field-by-field walk %d", n, ref)
			}
			// A served error response must always be encodable.
			_ = AppendResponse(nil, req.CorrelationID, ErrorResponse(req.Body, 35))
			return
		}
		if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrUnknownKey) && !errors.Is(err, ErrUndecodableVersion) {
			t.Fatalf("unclassified error %v", err)
		}
	})
}

func FuzzReadFrame(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(binary.BigEndian.AppendUint32(nil, uint32(len(s))), s)
	}
	f.Add([]byte{0xff, 0xff, 0xff, 0xff}, []byte{})
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff}, []byte{1})
	f.Fuzz(func(t *testing.T, prefix, rest []byte) {
		const max = 1 << 16
		in := append(append([]byte{}, prefix...), rest...)
		frame, err := ReadFrame(bytes.NewReader(in), max)
		if err != nil {
			return
		}
		n := int32(binary.BigEndian.Uint32(in))
		if int32(len(frame)) != n || n > max || !bytes.Equal(frame, in[4:4+n]) {
			t.Fatalf("frame of %d bytes does not match its prefix %d", len(frame), n)
		}
	})
}

// longestStringRef is longestString as a plain walk of every field: the
// reference its plans must agree with.
func longestStringRef(v reflect.Value) int {
	switch v.Kind() {
	case reflect.String:
		return v.Len()
	case reflect.Pointer:
		if v.IsNil() {
			return 0
		}
		return longestStringRef(v.Elem())
	case reflect.Struct:
		longest := 0
		for i := 0; i < v.NumField(); i++ {
			longest = max(longest, longestStringRef(v.Field(i)))
		}
		return longest
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return 0
		}
		longest := 0
		for i := 0; i < v.Len(); i++ {
			longest = max(longest, longestStringRef(v.Index(i)))
		}
		return longest
	default:
		return 0
	}
}

// TestLongestStringAgreesWithFieldWalk: for a request of every key kmsg
// knows, empty and decoded from the seed frames, and for a heartbeat whose
// longest string is deep in its topology, longestString finds what a
// walk of every field finds.
func TestLongestStringAgreesWithFieldWalk(t *testing.T) {
	var bodies []kmsg.Request
	for key := int16(0); key < 200; key++ {
		if r := kmsg.RequestForKey(key); r != nil {
			bodies = append(bodies, r)
		}
	}
	for _, f := range seedFrames() {
		if req, err := ParseRequest(f); err == nil {
			bodies = append(bodies, req.Body)
		}
	}
	deep := bigTopology("g", 3)
	deep.Topology.Subtopologies[1].StateChangelogTopics = []kmsg.TopicInfo{
		{Topic: "t", Configs: []kmsg.TopicInfoConfig{{Key: "k", Value: strings.Repeat("v", 40000)}}}}
	bodies = append(bodies, deep)
	for _, b := range bodies {
		if got, want := longestString(reflect.ValueOf(b)), longestStringRef(reflect.ValueOf(b)); got != want {
			t.Errorf("%T: longestString %d, the field-by-field walk %d", b, got, want)
		}
	}
	if got := longestString(reflect.ValueOf(deep)); got != 40000 {
		t.Fatalf("the 40,000-byte config value was found as %d bytes", got)
	}
}
