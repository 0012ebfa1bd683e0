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
			if n := longestString(reflect.ValueOf(req.Body)); n > MaxStringLen {
				t.Fatalf("accepted a string of %d bytes", n)
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
