package wire

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestScreenClosesBeforeReading: a frame declaring the whole request
// budget with a key kmsg does not know, or a version newer than it
// decodes, closes the connection once its first 4 bytes arrived: the
// rest is never waited for and no budget is taken.
func TestScreenClosesBeforeReading(t *testing.T) {
	const budget = 1 << 20
	lim := NewLimits(budget, 100, 100)
	addr := startLimited(t, Config{MaxRequestBytes: budget, Limits: lim})
	for _, head := range [][]byte{{0xff, 0xff, 0xff, 0xff}, {0, 0, 0x7f, 0}, {0, 68, 0, 99}} {
		c := dial(t, addr)
		c.c.Write(append(binary.BigEndian.AppendUint32(nil, budget), head...))
		c.expectGone()
		if n := lim.inFlightBytes(); n != 0 {
			t.Fatalf("header %x: %d bytes of budget held", head, n)
		}
	}
	// ApiVersions of a version kmsg does not decode is answered.
	c := dial(t, addr)
	req := kmsg.NewPtrApiVersionsRequest()
	frame := kmsg.NewRequestFormatter().AppendRequest(nil, req, 3)
	binary.BigEndian.PutUint16(frame[6:], 99)
	c.c.Write(frame)
	req.SetVersion(0)
	if _, resp := c.recv(req); resp.(*kmsg.ApiVersionsResponse).ErrorCode != kerr.UnsupportedVersion.Code {
		t.Fatalf("ApiVersions v99: %+v", resp)
	}
}

// bigTopology is a streams heartbeat of group with n subtopologies: a
// frame over smallFrame for n in the thousands.
func bigTopology(group string, n int) *kmsg.StreamsGroupHeartbeatRequest {
	hb := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	hb.Group, hb.MemberID = group, "m"
	hb.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{}
	for i := range n {
		hb.Topology.Subtopologies = append(hb.Topology.Subtopologies,
			kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{SubtopologyID: fmt.Sprint(i), SourceTopics: []string{"t"}})
	}
	return hb
}

// TestScreenRefusesTopologyOverLimit: a large streams heartbeat whose
// topology has more subtopologies than its group's
// streams.max.topology.size is answered INVALID_REQUEST without reaching
// the group coordinator and without the request budget (here smaller than
// the frame, which the budget would refuse); the connection's next request
// is served. The same frame of a group with a larger bound, or a small one
// over the bound, reaches the coordinator.
func TestScreenRefusesTopologyOverLimit(t *testing.T) {
	var reached atomic.Int32
	addr := startLimited(t, Config{MaxRequestBytes: 1 << 20, Limits: NewLimits(smallFrame+1024, 100, 100),
		MaxTopologySize: func(group string) int32 {
			if group == "small" {
				return 100
			}
			return 100000
		},
		Group: func(_ context.Context, req *Request) (kmsg.Response, error) {
			reached.Add(1)
			return ErrorResponse(req.Body, kerr.CoordinatorNotAvailable.Code), nil
		}})
	c := dial(t, addr)
	huge := bigTopology("small", 20000)
	c.send(huge, 1, 7)
	corr, resp := c.recv(huge)
	hr := resp.(*kmsg.StreamsGroupHeartbeatResponse)
	if corr != 7 || hr.ErrorCode != kerr.InvalidRequest.Code || hr.ErrorMessage == nil || reached.Load() != 0 {
		t.Fatalf("correlation id %d, response %+v, coordinator reached %d times", corr, hr, reached.Load())
	}
	c.apiVersions(8) // the frame was read past to its end

	small := bigTopology("small", 200) // over the bound, under smallFrame: decoded
	c.send(small, 1, 9)
	if _, resp := c.recv(small); resp.(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode != kerr.CoordinatorNotAvailable.Code || reached.Load() != 1 {
		t.Fatalf("small frame: %+v, coordinator reached %d times", resp, reached.Load())
	}
	// A group whose bound the topology keeps within: screened through,
	// then refused by the budget the frame is larger than.
	other := dial(t, addr)
	other.send(bigTopology("large", 20000), 1, 10)
	other.expectGone()
	if reached.Load() != 1 {
		t.Fatalf("coordinator reached %d times", reached.Load())
	}
}

// TestScreenRefusalPassesGates: on a listener requiring SASL, a refused
// topology frame of an unauthenticated connection closes it, as any
// request of its key would.
func TestScreenRefusalPassesGates(t *testing.T) {
	addr := startLimited(t, Config{MaxRequestBytes: 1 << 20, Limits: NewLimits(1<<20, 100, 100), SASLRequired: true,
		PreAuthMaxRequestBytes: 1 << 20, MaxTopologySize: func(string) int32 { return 100 }})
	c := dial(t, addr)
	c.send(bigTopology("g", 20000), 1, 1)
	c.expectGone()
}

func FuzzTopologyAhead(f *testing.F) {
	for _, s := range seedFrames() {
		f.Add(s, uint16(len(s)))
	}
	fm := kmsg.NewRequestFormatter(kmsg.FormatterClientID("seed"))
	for _, n := range []int{1, 200} {
		hb := bigTopology("g", n)
		hb.SetVersion(1)
		fr := fm.AppendRequest(nil, hb, 3)[4:]
		f.Add(fr, uint16(min(len(fr), 100)))
	}
	f.Fuzz(func(t *testing.T, frame []byte, cut uint16) {
		prefix := frame[:min(int(cut), len(frame))]
		req, group, n, ok := topologyAhead(prefix, len(frame))
		if !ok {
			return
		}
		if n <= 0 || req.Body == nil || req.Key != int16(kmsg.StreamsGroupHeartbeat) {
			t.Fatalf("ok with %d subtopologies, request %+v", n, req)
		}
		full, err := ParseRequest(frame)
		if err != nil {
			return // a prefix of a frame, or a malformed rest
		}
		hb := full.Body.(*kmsg.StreamsGroupHeartbeatRequest)
		if hb.Group != group || hb.Topology == nil || len(hb.Topology.Subtopologies) != n || full.CorrelationID != req.CorrelationID {
			t.Fatalf("screened group %q, %d subtopologies, correlation id %d; parsed %q, %+v, %d", group, n, req.CorrelationID, hb.Group, hb.Topology, full.CorrelationID)
		}
	})
}
