package wire

import (
	"context"
	"encoding/binary"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	if corr != 7 || hr.ErrorCode != kerr.InvalidRequest.Code || hr.ErrorMessage == nil || hr.ThrottleMillis != 1000 || reached.Load() != 0 {
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

// heldQuota throttles group "busy" while held is set.
type heldQuota struct{ held atomic.Bool }

func (q *heldQuota) GroupThrottle(group string) time.Duration {
	if group == "busy" && q.held.Load() {
		return 20 * time.Millisecond
	}
	return 0
}

// TestScreenHoldsThrottledGroup: a request of a group over its quota,
// large or small, is not read (its connection waits) until the group's
// throttle ends, on each of its connections; another group's large and
// small requests on other connections are served meanwhile.
func TestScreenHoldsThrottledGroup(t *testing.T) {
	q := &heldQuota{}
	q.held.Store(true)
	addr, count := startCounting(t, q)
	var held []*client
	busy := metadataJoin("busy", 10)
	for i, size := range []int{100 << 10, 100 << 10, 10} {
		c := dial(t, addr)
		c.send(metadataJoin("busy", size), 9, int16(i))
		held = append(held, c)
	}
	busy.SetVersion(9)
	idle := dial(t, addr)
	for i, size := range []int{100 << 10, 10} {
		req := metadataJoin("idle", size)
		idle.send(req, 9, int16(i))
		idle.recv(req)
	}
	if n, m := count("busy"), count("idle"); n != 0 || m != 2 {
		t.Fatalf("the throttled group reached the coordinator %d times, the other %d; want 0 and 2", n, m)
	}
	q.held.Store(false)
	for _, c := range held {
		c.recv(busy)
	}
	if n := count("busy"); n != 3 {
		t.Fatalf("the group's held requests reached the coordinator %d times after its throttle, want 3", n)
	}
}

// windowQuota throttles group "busy" until a time, as a quota whose
// window runs out.
type windowQuota struct{ until time.Time }

func (q windowQuota) GroupThrottle(group string) time.Duration {
	if group == "busy" {
		return max(time.Until(q.until), 0)
	}
	return 0
}

// TestScreenServesThrottledGroupWhenWindowEnds: a throttled group's small
// request is read and served once its throttle runs out on its own, not
// before; another group's small request sent after it on another
// connection is answered while it waits.
func TestScreenServesThrottledGroupWhenWindowEnds(t *testing.T) {
	q := windowQuota{until: time.Now().Add(300 * time.Millisecond)}
	addr, count := startCounting(t, q)
	busy, idle := dial(t, addr), dial(t, addr)
	small := metadataJoin("busy", 10)
	busy.send(small, 9, 1)
	other := metadataJoin("idle", 10)
	idle.send(other, 9, 1)
	idle.recv(other)
	if n := count("busy"); n != 0 && time.Now().Before(q.until) {
		t.Fatalf("the throttled group reached the coordinator %d times before its throttle ended", n)
	}
	busy.recv(small)
	if now := time.Now(); now.Before(q.until) || count("busy") != 1 {
		t.Fatalf("answered %v before the throttle ended, coordinator reached %d times", q.until.Sub(now), count("busy"))
	}
}

// startCounting starts a listener with quota q whose group coordinator
// counts the requests of each group it is reached with (count) and
// answers COORDINATOR_NOT_AVAILABLE.
func startCounting(t *testing.T, q GroupQuota) (addr string, count func(group string) int) {
	var mu sync.Mutex
	reached := map[string]int{}
	addr = startLimited(t, Config{MaxRequestBytes: 1 << 20, Limits: NewLimits(1<<20, 100, 100), Quota: q,
		Group: func(_ context.Context, req *Request) (kmsg.Response, error) {
			mu.Lock()
			defer mu.Unlock()
			reached[reflect.ValueOf(req.Body).Elem().FieldByName("Group").String()]++
			return ErrorResponse(req.Body, kerr.CoordinatorNotAvailable.Code), nil
		}})
	return addr, func(g string) int { mu.Lock(); defer mu.Unlock(); return reached[g] }
}

// metadataJoin is a JoinGroup of group whose protocol metadata has size
// bytes: a frame over smallFrame for size over 64 KiB.
func metadataJoin(group string, size int) *kmsg.JoinGroupRequest {
	jg := kmsg.NewPtrJoinGroupRequest()
	jg.Group, jg.ProtocolType = group, "consumer"
	jg.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: make([]byte, size)}}
	return jg
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

// FuzzScreenAhead: groupAhead and topologyAhead never panic, and what they
// read from any prefix of a frame the full parse accepts agrees with it.
func FuzzScreenAhead(f *testing.F) {
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
		h, group, r, ok := groupAhead(prefix, cloneClientID)
		if !ok {
			return
		}
		req := h.req
		if h.body == nil || h.body.Key() != req.Key || h.body.GetVersion() != req.Version || !groupFirst(req.Key) || h.size > len(prefix) {
			t.Fatalf("ok with header %+v, body %T, size %d", req, h.body, h.size)
		}
		n, topoOK := -1, false
		if req.Key == int16(kmsg.StreamsGroupHeartbeat) {
			n, topoOK = topologyAhead(&r, len(frame)-(len(prefix)-len(r.Src)))
			if topoOK && n <= 0 {
				t.Fatalf("ok with %d subtopologies", n)
			}
		}
		full, err := ParseRequest(frame)
		// The frame decoded from the screened header agrees with the full
		// parse: the same error or the same request.
		passed, perr := h.parse(frame)
		if (err == nil) != (perr == nil) {
			t.Fatalf("full parse: %v; from the screened header: %v", err, perr)
		}
		if err != nil {
			return // a malformed rest
		}
		if !reflect.DeepEqual(full, passed) {
			t.Fatalf("full parse %+v, from the screened header %+v", full, passed)
		}
		if full.CorrelationID != req.CorrelationID || full.Version != req.Version {
			t.Fatalf("screened header %+v, parsed %+v", req, full)
		}
		if g := reflect.ValueOf(full.Body).Elem().FieldByName("Group").String(); g != group {
			t.Fatalf("screened group %q, parsed %q", group, g)
		}
		if hb, isHB := full.Body.(*kmsg.StreamsGroupHeartbeatRequest); isHB && topoOK && (hb.Topology == nil || len(hb.Topology.Subtopologies) != n) {
			t.Fatalf("screened %d subtopologies, parsed %+v", n, hb.Topology)
		}
	})
}

// BenchmarkScreenUnthrottledHeartbeat: the round trip of a small group
// request over loopback on a listener with no quota and on one whose
// quota throttles no group, where screen looks at every group request's
// group id before reading it; "groups=2" alternates two groups' requests
// on the connection, as a load generator's connections shared by many
// groups carry them. Compare with -count and benchstat.
func BenchmarkScreenUnthrottledHeartbeat(b *testing.B) {
	for _, q := range []struct {
		name   string
		quota  GroupQuota
		groups int
	}{{"quota=none", nil, 1}, {"quota=unthrottled", windowQuota{}, 1}, {"quota=unthrottled,groups=2", windowQuota{}, 2}} {
		b.Run(q.name, func(b *testing.B) {
			addr := startLimited(b, Config{MaxRequestBytes: 1 << 20, Limits: NewLimits(1<<20, 100, 100), Quota: q.quota})
			c := dial(b, addr)
			var frames [][]byte
			for i := range q.groups {
				hb := kmsg.NewPtrHeartbeatRequest()
				hb.Group, hb.MemberID = fmt.Sprintf("busy-%d", i), "m"
				frames = append(frames, kmsg.NewRequestFormatter(kmsg.FormatterClientID("bench")).AppendRequest(nil, hb, 1))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := c.c.Write(frames[i%len(frames)]); err != nil {
					b.Fatal(err)
				}
				if _, err := ReadFrame(c.br, 1<<20); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestScreenDoesNotHoldSharedConnection: on a connection that carries
// requests of several groups a throttled group's request is read and
// served at once, and so is the other group's request behind it; on a
// connection of the throttled group alone it waits.
func TestScreenDoesNotHoldSharedConnection(t *testing.T) {
	q := &heldQuota{}
	q.held.Store(true)
	addr, count := startCounting(t, q)
	shared, alone := dial(t, addr), dial(t, addr)
	shared.c.SetDeadline(time.Now().Add(2 * time.Second))
	held := metadataJoin("busy", 10)
	alone.send(held, 9, 1)
	for i, group := range []string{"idle", "busy", "idle"} {
		req := metadataJoin(group, 10)
		shared.send(req, 9, int16(i))
		shared.recv(req)
	}
	if n, m := count("busy"), count("idle"); n != 1 || m != 2 {
		t.Fatalf("the throttled group reached the coordinator %d times, the other %d; want 1 (its shared connection's) and 2", n, m)
	}
	q.held.Store(false)
	alone.recv(held)
	if n := count("busy"); n != 2 {
		t.Fatalf("after its throttle the group reached the coordinator %d times, want 2", n)
	}
}

// TestKeepClientID: a connection's requests that name the client id of the
// one before share its string, which does not alias the read buffer; a
// different id gets its own.
func TestKeepClientID(t *testing.T) {
	c := &conn{}
	buf := []byte("client-a")
	first := c.keepClientID(buf)
	if again := c.keepClientID(buf); again != first {
		t.Fatalf("the same client id was kept twice")
	}
	copy(buf, "client-b")
	other := c.keepClientID(buf)
	if *first != "client-a" || *other != "client-b" || other == first {
		t.Fatalf("kept %q then %q (same pointer: %v)", *first, *other, other == first)
	}
	if empty := c.keepClientID([]byte{}); empty == nil || *empty != "" {
		t.Fatalf("an empty client id kept as %v", empty)
	}
}
