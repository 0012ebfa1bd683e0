package host_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/loop"
	"github.com/coordhost/coordhost/host/runtime"
	"github.com/coordhost/coordhost/host/store"
	"github.com/coordhost/coordhost/host/wire"
	"github.com/coordhost/coordhost/interop/proccpu"
)

// floodTopics is the topic image of the flood test: 64 topics of 16
// partitions, so a flooding member's topology is large.
var floodTopics = func() []core.TopicMetadata {
	var ts []core.TopicMetadata
	for i := 0; i < 64; i++ {
		ts = append(ts, core.TopicMetadata{Name: fmt.Sprintf("t%02d", i), ID: [16]byte{byte(i + 1)}, Partitions: 16})
	}
	return append(ts, core.TopicMetadata{Name: "in", ID: [16]byte{200}, Partitions: 4})
}()

func newFloodCore() (*core.Coordinator, error) {
	cfg := core.DefaultConfig()
	cfg.Streams.InitialRebalanceDelayMs, cfg.Streams.AssignmentIntervalMs = 0, 0
	cfg.Streams.MaxSize = 100000
	c, err := core.New(cfg)
	if err != nil {
		return nil, err
	}
	c.Step(time.Now().UnixMilli(), core.Topics{Topics: floodTopics})
	c.Commit()
	return c, nil
}

// hugeJoin is a join of a new member with a topology of 64 subtopologies.
func hugeJoin(group, member string) *kmsg.StreamsGroupHeartbeatRequest {
	req := joinRequest(group, member)
	req.Topology.Subtopologies = nil
	for i := 0; i < 64; i++ {
		req.Topology.Subtopologies = append(req.Topology.Subtopologies, kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
			SubtopologyID: fmt.Sprint(i), SourceTopics: []string{fmt.Sprintf("t%02d", i)}})
	}
	return req
}

func handleHB(l *loop.Loop, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := l.Handle(ctx, &wire.Request{Key: req.Key(), Version: req.Version, Body: req})
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.StreamsGroupHeartbeatResponse), nil
}

// hugeTopology is a topology of 20,000 subtopologies reading a topic the
// image lacks (40,000 entries, under streams.max.topology.size): the
// group stays not ready, so a join costs the topology's checks and its
// comparison with the stored one, not an assignment of its tasks.
var hugeTopology = func() *kmsg.StreamsGroupHeartbeatRequestTopology {
	t := &kmsg.StreamsGroupHeartbeatRequestTopology{}
	for i := 0; i < 20000; i++ {
		t.Subtopologies = append(t.Subtopologies, kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
			SubtopologyID: fmt.Sprint(i), SourceTopics: []string{"absent"}})
	}
	return t
}()

// hugeTopologyJoin is a join of a new member with hugeTopology (one value
// shared by every request: the server only reads it).
func hugeTopologyJoin(group, member string) *kmsg.StreamsGroupHeartbeatRequest {
	req := joinRequest(group, member)
	req.Topology = hugeTopology
	return req
}

// floodKind is what the flooding clients send: a join of a new member
// built by join, then that member's full heartbeat with the topology
// again (which Kafka refuses: a topology only comes with a join).
type floodKind struct {
	name string
	join func(group, member string) *kmsg.StreamsGroupHeartbeatRequest
}

var (
	noFlood       = floodKind{name: "none"}
	joinsFlood    = floodKind{"joins with 64 subtopologies", hugeJoin}
	topologyFlood = floodKind{"joins with 20,000 subtopologies", hugeTopologyJoin}
)

// canaryFigures are one flood run's canary heartbeat latencies: the
// canaries on other partitions than the flooded group's, and the one on
// its partition.
type canaryFigures struct {
	other, same       time.Duration // p99
	otherMed, sameMed time.Duration // median
	n                 int
	floods            int64
}

// canaryHeartbeats starts a loop with parts partitions on a bbolt store
// (pipeline and quota: loop.Deps.Pipeline and GroupQuotaPercent), joins
// 4 canary groups — one on the flooded group's partition, three on
// others (all on the one partition when parts is 1) — and measures their
// steady heartbeats while flood (unless noFlood) keeps 16 clients each
// joining a new member with a huge topology to one group and sending
// that member's huge heartbeat.
func canaryHeartbeats(t *testing.T, parts, pipeline, quota int, flood floodKind) canaryFigures {
	st, err := store.Open(filepath.Join(t.TempDir(), "coordhost.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l, err := loop.New(loop.Deps{NewCore: newFloodCore, Partitions: parts, Workers: 2, Store: st, Pipeline: pipeline, GroupQuotaPercent: quota})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Shutdown(context.Background())
	same, epochs := joinCanaries(t, l, "flood", parts)
	stopFlood := func() int64 { return 0 }
	floodStart := time.Now()
	if flood.join != nil {
		stopFlood = joinFlood(flood.join, func(_ int, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			resp, err := handleHB(l, req)
			if err == nil && resp.ThrottleMillis > 0 {
				// As a Kafka client does (KIP-219); over the wire the
				// listener mutes the connection instead.
				time.Sleep(time.Duration(resp.ThrottleMillis) * time.Millisecond)
			}
			return resp, err
		})
		time.Sleep(200 * time.Millisecond)
	}
	f := measureCanaries(t, epochs, same, 200, canaryHeartbeat(l))
	f.floods = stopFlood()
	// The run lasts as long as the slowest canary: the rate, not the
	// count, compares the flood's throughput between runs.
	t.Logf("partitions=%d pipeline=%d quota=%d flood=%s: canary heartbeat p99 (median) other partitions %v (%v), flooded partition %v (%v); %d heartbeats, %d flooding requests (%.0f/s); load average %s",
		parts, pipeline, quota, flood.name, f.other, f.otherMed, f.same, f.sameMed, f.n, f.floods, float64(f.floods)/time.Since(floodStart).Seconds(), loadAverage())
	return f
}

// joinCanaries joins 4 canary groups to l (parts partitions): one on
// flooded's partition, three on others (all on the one partition when
// parts is 1). It returns the one on flooded's partition and every
// canary's member epoch.
func joinCanaries(t *testing.T, l *loop.Loop, flooded string, parts int) (same string, epochs map[string]int32) {
	t.Helper()
	fp := runtime.PartitionFor(flooded, parts)
	var others []string
	for i := 0; same == "" || len(others) < 3; i++ {
		g := fmt.Sprintf("canary-%d", i)
		switch {
		case runtime.PartitionFor(g, parts) == fp && same == "":
			same = g
		case runtime.PartitionFor(g, parts) != fp || parts == 1:
			if len(others) < 3 {
				others = append(others, g)
			}
		}
	}
	epochs = map[string]int32{}
	for _, g := range append([]string{same}, others...) {
		resp, err := handleHB(l, joinRequest(g, "m"))
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("canary %s join: %v %v", g, err, resp)
		}
		epochs[g] = resp.MemberEpoch
	}
	return same, epochs
}

// joinFlood starts 16 clients that each keep joining a new member with a
// huge topology to group "flood" and sending that member's huge
// heartbeat, through send (client is the client's number). The returned
// stop ends them and returns how many requests they sent.
func joinFlood(join func(group, member string) *kmsg.StreamsGroupHeartbeatRequest, send func(client int, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error)) (stop func() int64) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var floods atomic.Int64
	for c := 0; c < 16; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				m := fmt.Sprintf("f%d-%d", c, i)
				resp, err := send(c, join("flood", m))
				if err != nil {
					return
				}
				hb := join("flood", m)
				hb.MemberEpoch = resp.MemberEpoch
				if _, err := send(c, hb); err != nil {
					return
				}
				floods.Add(2)
			}
		}()
	}
	return func() int64 {
		close(done)
		wg.Wait()
		return floods.Load()
	}
}

// canaryHeartbeat sends canary member "m" of group g's steady heartbeat
// to l and returns its new epoch (measureCanaries' hb).
func canaryHeartbeat(l *loop.Loop) func(g string, epoch int32) (int32, error) {
	return func(g string, epoch int32) (int32, error) {
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, g, "m", epoch
		resp, err := handleHB(l, req)
		if err == nil && resp.ErrorCode != 0 {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		if err != nil {
			return 0, err
		}
		return resp.MemberEpoch, nil
	}
}

// measureCanaries sends n steady heartbeats per canary group of epochs,
// 5 ms apart, through hb (which returns the member's new epoch), and
// returns the latencies of the canary same and of the others. epochs is
// left with each canary's last epoch.
func measureCanaries(t *testing.T, epochs map[string]int32, same string, n int, hb func(g string, epoch int32) (int32, error)) canaryFigures {
	otherLat, sameLat := canaryLatencies(t, epochs, func(g string) bool { return g == same }, n, hb)
	f := canaryFigures{n: len(sameLat) + len(otherLat)}
	f.other, f.otherMed = quantiles(otherLat)
	f.same, f.sameMed = quantiles(sameLat)
	return f
}

// canaryLatencies sends n steady heartbeats per canary group of epochs,
// 5 ms apart, through hb, and returns the latencies of the canaries on
// other partitions than the flooded group's and of those on its
// partition (onFlooded). epochs is left with each canary's last epoch.
func canaryLatencies(t *testing.T, epochs map[string]int32, onFlooded func(g string) bool, n int, hb func(g string, epoch int32) (int32, error)) (other, same []time.Duration) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g, epoch := range epochs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { mu.Lock(); epochs[g] = epoch; mu.Unlock() }()
			for i := 0; i < n; i++ {
				start := time.Now()
				e, err := hb(g, epoch)
				d := time.Since(start)
				if err != nil {
					t.Errorf("canary %s heartbeat: %v", g, err)
					return
				}
				epoch = e
				mu.Lock()
				if onFlooded(g) {
					same = append(same, d)
				} else {
					other = append(other, d)
				}
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	return other, same
}

// quantiles returns the p99 and median of lat.
func quantiles(lat []time.Duration) (p99, median time.Duration) {
	if len(lat) == 0 {
		return 0, 0
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[len(lat)*99/100], lat[len(lat)/2]
}

// loadAverage is the machine's 1-minute load average, for the log.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "unknown"
	}
	return f[0]
}

// The isolation bars for a flooded group: canaries on other partitions
// keep their heartbeat p99 under otherBar, the canary on the flooded
// group's own partition under sameBar, and both within 2× their
// unflooded p99. The in-process tests fail only at floodGate× the
// absolute bars (a loaded machine must not turn them red); the 2× ratio
// is logged (TestFloodThroughBinary asserts the bars themselves), and
// docs/HOST.md reports what it measured (in one process on two shared
// cores the flood's CPU and garbage alone exceed it).
const (
	otherBar  = 50 * time.Millisecond
	sameBar   = 100 * time.Millisecond
	floodGate = 1.5
)

// noQuota turns the per-group quota off (loop.Deps.GroupQuotaPercent).
const noQuota = -1

// TestFloodedGroupDoesNotSlowOtherPartitions: one group flooded with joins
// of members with huge topologies and their huge heartbeats (16 clients)
// while 4 canary groups heartbeat, one of them on the flooded group's
// partition. It logs the canaries' p99 unflooded, twice (the second run's
// ratio to the first is the machine's noise, the floor under every other
// ratio); flooded with 50 partitions; the same run one round at a time
// (Pipeline 1: the comparison for pipelined appends); flooded with 50
// partitions and the quota off (partitioning alone); the control, one
// partition with the quota off, where every canary queues behind the
// flood; one partition with the quota on; and flooded with joins whose
// topology has 20,000 subtopologies, with the ratios docs/HOST.md
// reports. It fails at floodGate× the absolute bars with 50 partitions,
// and when the control keeps within 2× its unflooded p99 (then the test
// cannot tell partitioning apart from no partitioning). A timing test on
// a bbolt store: it runs with COORDHOST_FLOOD=1 (30–90 s on the shared
// machine).
func TestFloodedGroupDoesNotSlowOtherPartitions(t *testing.T) {
	if os.Getenv("COORDHOST_FLOOD") != "1" {
		t.Skip("timing test: set COORDHOST_FLOOD=1 to run it")
	}
	parts := runtime.DefaultPartitions
	base := canaryHeartbeats(t, parts, 0, 0, noFlood)
	again := canaryHeartbeats(t, parts, 0, 0, noFlood)
	sharded := canaryHeartbeats(t, parts, 0, 0, joinsFlood)
	serial := canaryHeartbeats(t, parts, 1, 0, joinsFlood)
	unquoted := canaryHeartbeats(t, parts, 0, noQuota, joinsFlood)
	control := canaryHeartbeats(t, 1, 0, noQuota, joinsFlood)
	one := canaryHeartbeats(t, 1, 0, 0, joinsFlood)
	topo := canaryHeartbeats(t, parts, 0, 0, topologyFlood)
	baseP99 := max(base.other, base.same)
	controlP99, oneP99 := max(control.other, control.same), max(one.other, one.same)
	t.Logf("noise, unflooded run 2/run 1 canary p99: other partitions %.1f×, flooded partition %.1f×",
		ratio(again.other, base.other), ratio(again.same, base.same))
	t.Logf("50 partitions, flooded/unflooded canary p99: other partitions %.1f×, flooded partition %.1f× (bar 2×)",
		ratio(sharded.other, base.other), ratio(sharded.same, base.same))
	t.Logf("50 partitions, quota off, flooded/unflooded canary p99: other partitions %.1f×, flooded partition %.1f×",
		ratio(unquoted.other, base.other), ratio(unquoted.same, base.same))
	t.Logf("joins with 20,000 subtopologies, flooded/unflooded canary p99: other partitions %.1f×, flooded partition %.1f× (bar 2×)",
		ratio(topo.other, base.other), ratio(topo.same, base.same))
	t.Logf("flooded partition canary p99: pipelined %v, one round at a time %v (%.1f×)",
		sharded.same, serial.same, ratio(serial.same, sharded.same))
	t.Logf("control, one partition, quota off: canary p99 %v = %.1f× the unflooded p99, %.1f× the %v bar; with the quota %v = %.1f×",
		controlP99, ratio(controlP99, baseP99), ratio(controlP99, otherBar), otherBar, oneP99, ratio(oneP99, baseP99))
	for _, f := range []struct {
		name string
		canaryFigures
	}{{joinsFlood.name, sharded}, {topologyFlood.name, topo}} {
		if gate := time.Duration(floodGate * float64(otherBar)); f.other > gate {
			t.Errorf("50 partitions, %s: flooded canary p99 on other partitions %v over %v (%.1f× the %v bar)", f.name, f.other, gate, floodGate, otherBar)
		}
		if gate := time.Duration(floodGate * float64(sameBar)); f.same > gate {
			t.Errorf("50 partitions, %s: flooded canary p99 on the flooded partition %v over %v (%.1f× the %v bar)", f.name, f.same, gate, floodGate, sameBar)
		}
	}
	if ratio(controlP99, baseP99) <= 2 {
		t.Errorf("control: with one partition and no quota the flooded canaries kept within 2× their unflooded p99 (%v, %v): the test does not tell partitioning apart", controlP99, baseP99)
	}
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(max(b, time.Microsecond)) }

// wireClient sends requests on one connection and returns errors instead
// of failing the test (flooding connections end when the test stops them).
type wireClient struct {
	c    net.Conn
	br   *bufio.Reader
	corr int32
}

func dialWire(addr string) (*wireClient, error) {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	return &wireClient{c: c, br: bufio.NewReader(c)}, nil
}

func (w *wireClient) do(req kmsg.Request) (kmsg.Response, error) {
	w.corr++
	w.c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := w.c.Write(kmsg.NewRequestFormatter(kmsg.FormatterClientID("flood")).AppendRequest(nil, req, w.corr)); err != nil {
		return nil, err
	}
	frame, err := wire.ReadFrame(w.br, 64<<20)
	if err != nil {
		return nil, err
	}
	_, resp, err := wire.ParseResponse(frame, req)
	return resp, err
}

// wireCanaries are streams members of 6 canary groups on their own
// connections to a coordhost process: three on the partition of group
// "flood" and three on others, as the groups fall with
// runtime.DefaultPartitions (in a process forced to fewer partitions
// they may share the flooded one).
type wireCanaries struct {
	addr    string
	same    map[string]bool // on the flooded group's partition
	clients map[string]*wireClient
	epochs  map[string]int32
}

// wireCanaryGroups is how many canary groups wireCanaries has on the
// flooded group's partition, and how many on others.
const wireCanaryGroups = 3

func joinWireCanaries(t *testing.T, addr string) *wireCanaries {
	t.Helper()
	fp := runtime.PartitionFor("flood", runtime.DefaultPartitions)
	w := &wireCanaries{addr: addr, same: map[string]bool{}, clients: map[string]*wireClient{}, epochs: map[string]int32{}}
	for i, others := 0, 0; len(w.same) < wireCanaryGroups || others < wireCanaryGroups; i++ {
		g := fmt.Sprintf("canary-%d", i)
		onFlood := runtime.PartitionFor(g, runtime.DefaultPartitions) == fp
		if (onFlood && len(w.same) == wireCanaryGroups) || (!onFlood && others == wireCanaryGroups) {
			continue
		}
		if onFlood {
			w.same[g] = true
		} else {
			others++
		}
		c, err := dialWire(addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.c.Close() })
		resp, err := c.do(joinRequest(g, "m"))
		if err != nil || resp.(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode != 0 {
			t.Fatalf("canary %s join: %v %+v", g, err, resp)
		}
		w.clients[g], w.epochs[g] = c, resp.(*kmsg.StreamsGroupHeartbeatResponse).MemberEpoch
	}
	return w
}

// measure sends n steady heartbeats per canary and returns the p99 of
// the canaries on other partitions and of those on the flooded group's
// partition.
func (w *wireCanaries) measure(t *testing.T, n int) (other, same time.Duration) {
	otherLat, sameLat := canaryLatencies(t, w.epochs, func(g string) bool { return w.same[g] }, n, w.heartbeat)
	other, _ = quantiles(otherLat)
	same, _ = quantiles(sameLat)
	return other, same
}

// heartbeat sends canary g's steady heartbeat at epoch and returns its
// new epoch (canaryLatencies' hb).
func (w *wireCanaries) heartbeat(g string, epoch int32) (int32, error) {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, g, "m", epoch
	resp, err := w.clients[g].do(req)
	if err != nil {
		return 0, err
	}
	if code := resp.(*kmsg.StreamsGroupHeartbeatResponse).ErrorCode; code != 0 {
		return 0, kerr.ErrorForCode(code)
	}
	return resp.(*kmsg.StreamsGroupHeartbeatResponse).MemberEpoch, nil
}

// canarySamples is how many heartbeats each canary sends in a window of
// TestFloodThroughBinary: 1,200 from the three canaries on other
// partitions and 1,200 from the three on the flooded one, whose p99s
// are then the 12th longest.
const canarySamples = 400

// floodRounds is how many times TestFloodThroughBinary alternates an
// unflooded window with a flooded one for each flood
// (COORDHOST_FLOOD_ROUNDS overrides it).
const floodRounds = 3

// wireFlood is one flood of TestFloodThroughBinary, sent by a process of
// its own: this test binary running test with env, answering with a line
// that count matches (its first group is the count), the bar of the
// canaries on other partitions.
type wireFlood struct {
	what, test, env, count, unit string
	otherBar                     time.Duration
	// started is the line the process prints once it floods; "" waits
	// 1 s instead (the frames hold the request budget by then).
	started string
}

var wireFloods = []wireFlood{
	{what: "join flood, 16 connections", test: "TestFloodLoadProcess", env: "FLOODLOAD_KIND=joins", count: `(\d+ flooding requests.*)`, unit: "", otherBar: otherBar, started: "flood started"},
	{what: "2 MB heartbeats, 32 connections", test: "TestFloodLoadProcess", env: "FLOODLOAD_KIND=huge", count: `(\d+) flooding requests`, unit: " answered", otherBar: otherBar, started: "flood started"},
	{what: "100 MiB frames of an unknown key, 100 connections", test: "TestFrameFloodProcess", env: "FRAMEFLOOD_HEAD=unknown-key", count: `(\d+) of 100 frames read`, unit: " of 100 closed in 6 s", otherBar: sameBar},
	{what: "100 MiB frames with a Produce header, 100 connections", test: "TestFrameFloodProcess", env: "FRAMEFLOOD_HEAD=produce", count: `(\d+) of 100 frames read`, unit: " of 100 frames read in 6 s", otherBar: sameBar},
}

// envInt is the integer in environment variable name, or def when it is
// unset; a value that is not a positive integer fails the test.
func envInt(t *testing.T, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// TestFloodThroughBinary measures the canaries of a coordhost process (50
// store partitions, default limits; COORDHOST_FLOOD_PARTITIONS forces
// another count; the control that must fail is the group quota off,
// COORDHOST_RUNTIME_GROUP_QUOTA_PERCENT=0, at one partition or fifty —
// with the quota on, one partition passes on an idle machine) over the wire, every
// flood sent by a load-generating process of its own (this test binary
// running TestFloodLoadProcess or TestFrameFloodProcess), so the
// canaries' process runs only the canaries. The floods: 16 connections
// flooding group "flood" with joins of members with huge topologies and
// their huge heartbeats; 32 connections of group "flood" sending
// heartbeats whose topology is over streams.max.topology.size; 100
// connections each sending a 100 MiB frame (default 256 MiB request
// budget), of an unknown key and then with a Produce header. Each flood
// runs at the load process's default scheduling priority, then at the
// lowest, SCHED_IDLE, where it gets a core only when neither the server
// nor the canaries want it — as an attacker on another machine, whose
// CPU is not the server's (docs/HOST.md).
//
// A canary p99 under a millisecond moves by itself from one window to
// the next on a shared machine, so each flood runs floodRounds rounds of
// an unflooded window right before a flooded one, and its ratio is the
// median of the rounds' flooded/unflooded p99s, its p99 the median of
// the flooded p99s. It logs every window's p99s, the server's and the
// load process's CPU, and fails when a flood's median ratio is over 2×
// or its median p99 over the bar above: otherBar for canaries on other
// partitions (sameBar under the frame floods), sameBar on the flooded
// one. COORDHOST_FLOOD_ONLY runs only the floods whose description
// contains it ("2 MB", "join"). A timing test: it runs with COORDHOST_FLOOD=1 (about 4 minutes
// with the build).
func TestFloodThroughBinary(t *testing.T) {
	if os.Getenv("COORDHOST_FLOOD") != "1" {
		t.Skip("timing test: set COORDHOST_FLOOD=1 to run it")
	}
	parts := envInt(t, "COORDHOST_FLOOD_PARTITIONS", runtime.DefaultPartitions)
	rounds := envInt(t, "COORDHOST_FLOOD_ROUNDS", floodRounds)
	only := os.Getenv("COORDHOST_FLOOD_ONLY")
	// The child reads COORDHOST_* as its config: it must not see these.
	for _, v := range []string{"COORDHOST_FLOOD", "COORDHOST_FLOOD_PARTITIONS", "COORDHOST_FLOOD_ROUNDS", "COORDHOST_FLOOD_ONLY"} {
		t.Setenv(v, os.Getenv(v)) // restored after the test
		os.Unsetenv(v)
	}
	p := startProc(t, t.TempDir(), freePort(t), 1, fmt.Sprintf("--store.partitions=%d", parts))
	w := joinWireCanaries(t, p.addr)
	t.Logf("%d store partitions, %d rounds a flood", parts, rounds)
	cpu := cpuMeter(t, p.cmd.Process.Pid)
	for _, f := range wireFloods {
		if !strings.Contains(f.what, only) {
			continue
		}
		for _, idle := range []bool{false, true} {
			priority := "default priority"
			if idle {
				priority = "SCHED_IDLE"
			}
			var otherR, sameR []float64
			var otherP, sameP []time.Duration
			for r := 1; r <= rounds; r++ {
				cpu()
				baseOther, baseSame := w.measure(t, canarySamples)
				baseCPU := cpu()
				load := startWireFlood(t, p.addr, f, idle)
				cpu()
				loadCPU := cpuMeter(t, load.Process.Pid)
				other, same := w.measure(t, canarySamples)
				server, attacker := cpu(), loadCPU()
				count := load.stop()
				after, settled := settle(p.cmd.Process.Pid)
				otherR, sameR = append(otherR, ratio(other, baseOther)), append(sameR, ratio(same, baseSame))
				otherP, sameP = append(otherP, other), append(sameP, same)
				t.Logf("%s (another process, %s), round %d: canary p99 unflooded other partitions %v, flooded partition %v (server %s); flooded %v (%.1f×), %v (%.1f×); %s%s; server %s; load process %s; after it ended the server used %v in %v; load average %s",
					f.what, priority, r, baseOther, baseSame, baseCPU, other, ratio(other, baseOther), same, ratio(same, baseSame), count, f.unit, server, attacker, after, settled.Round(time.Millisecond), loadAverage())
			}
			t.Logf("%s (another process, %s), median of %d rounds: canary p99 other partitions %v (%.1f× unflooded), flooded partition %v (%.1f×)",
				f.what, priority, rounds, median(otherP), median(otherR), median(sameP), median(sameR))
			for _, c := range []struct {
				where    string
				got, bar time.Duration
				ratio    float64
			}{{"other partitions", median(otherP), f.otherBar, median(otherR)}, {"flooded partition", median(sameP), sameBar, median(sameR)}} {
				if c.got > c.bar || c.ratio > 2 {
					t.Errorf("%s, %s, %s: canary p99 %v (bar %v), %.1f× unflooded (bar 2×), medians of %d rounds", f.what, priority, c.where, c.got, c.bar, c.ratio, rounds)
				}
			}
		}
	}
}

// median is the median of xs (the upper one of an even count).
func median[T float64 | time.Duration](xs []T) T {
	s := append([]T(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// floodProc is a running load process of TestFloodThroughBinary.
type floodProc struct {
	*exec.Cmd
	stop func() string // ends it and returns its count
}

// startWireFlood starts this test binary running f against addr, at the
// SCHED_IDLE scheduling priority if idle, and waits until it floods.
// Its stop closes the process's standard input (TestFloodLoadProcess
// runs until then; TestFrameFloodProcess for 6 s) and returns the count
// it printed.
func startWireFlood(t *testing.T, addr string, f wireFlood, idle bool) *floodProc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+f.test+"$", "-test.v")
	cmd.Env = append(os.Environ(), "FLOODLOAD_ADDR="+addr, "FRAMEFLOOD_ADDR="+addr, f.env)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	start := cmd.Start
	if idle {
		start = func() error { return startIdle(cmd) }
	}
	if err := start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Wait() })
	lines := bufio.NewScanner(outPipe)
	var out strings.Builder
	// The process says when it is flooding (its set-up, building the
	// frames, is not the flood).
	for f.started != "" && lines.Scan() && !strings.Contains(lines.Text(), f.started) {
		out.WriteString(lines.Text() + "\n")
	}
	rest := make(chan string, 1)
	go func() {
		for lines.Scan() {
			out.WriteString(lines.Text() + "\n")
		}
		rest <- out.String()
	}()
	if f.started != "" {
		time.Sleep(200 * time.Millisecond)
	} else {
		time.Sleep(time.Second)
	}
	if idle { // every thread the process started by now
		if ok, err := allIdle(cmd.Process.Pid); !ok || err != nil {
			t.Fatalf("load process not under SCHED_IDLE (%v)", err)
		}
	}
	return &floodProc{Cmd: cmd, stop: func() string {
		in.Close()
		output := <-rest
		if err := cmd.Wait(); err != nil {
			t.Fatalf("flood process %s: %v\n%s", f.env, err, output)
		}
		m := regexp.MustCompile(f.count).FindStringSubmatch(output)
		if m == nil {
			t.Fatalf("flood process %s:\n%s", f.env, output)
		}
		return m[1]
	}}
}

// hugeHeartbeatFrame is a framed heartbeat of group "flood" whose
// topology of 120,000 subtopologies (about 3 MB) is over
// streams.max.topology.size: refused before core builds anything.
func hugeHeartbeatFrame() []byte {
	huge := hugeJoin("flood", "huge")
	huge.Topology.Subtopologies = nil
	for i := 0; i < 120000; i++ {
		huge.Topology.Subtopologies = append(huge.Topology.Subtopologies,
			kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{SubtopologyID: fmt.Sprint(i), SourceTopics: []string{"t00"}})
	}
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID("flood")).AppendRequest(nil, huge, 1)
}

// TestFloodLoadProcess is TestFloodThroughBinary's load generator, run in
// a process of its own until its standard input closes: with
// FLOODLOAD_KIND=joins, 16 connections to FLOODLOAD_ADDR keep joining new
// members with 64-subtopology topologies to group "flood" and sending
// their heartbeats; with FLOODLOAD_KIND=huge, 32 connections keep sending
// hugeHeartbeatFrame. It logs how many requests were answered.
func TestFloodLoadProcess(t *testing.T) {
	addr := os.Getenv("FLOODLOAD_ADDR")
	if addr == "" {
		t.Skip("started by TestFloodThroughBinary")
	}
	var stop func() int64
	var throttled, refused atomic.Int64 // join flood answers with a throttle, an error
	switch kind := os.Getenv("FLOODLOAD_KIND"); kind {
	case "joins":
		var flooders []*wireClient
		for c := 0; c < 16; c++ {
			cl, err := dialWire(addr)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.c.Close()
			flooders = append(flooders, cl)
		}
		stop = joinFlood(hugeJoin, func(c int, req *kmsg.StreamsGroupHeartbeatRequest) (*kmsg.StreamsGroupHeartbeatResponse, error) {
			resp, err := flooders[c].do(req)
			if err != nil {
				return nil, err
			}
			hr := resp.(*kmsg.StreamsGroupHeartbeatResponse)
			if hr.ThrottleMillis > 0 {
				throttled.Add(1)
			}
			if hr.ErrorCode != 0 {
				refused.Add(1)
			}
			return hr, nil
		})
	case "huge":
		stop = frameLoop(addr, 32, hugeHeartbeatFrame())
	default:
		t.Fatalf("FLOODLOAD_KIND %q: want joins or huge", kind)
	}
	fmt.Println("flood started")  // to startLoad, unbuffered
	io.Copy(io.Discard, os.Stdin) // until the test closes it
	n := stop()
	t.Logf("%d flooding requests (%d answered with a throttle, %d with an error)", n, throttled.Load(), refused.Load())
}

// frameLoop starts n connections to addr that each keep sending frame
// and reading its response. The returned stop ends them and returns how
// many responses they read.
func frameLoop(addr string, n int, frame []byte) (stop func() int64) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var answered atomic.Int64
	for c := 0; c < n; c++ {
		cl, err := dialWire(addr)
		if err != nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer cl.c.Close()
			for {
				select {
				case <-done:
					return
				default:
				}
				cl.c.SetDeadline(time.Now().Add(30 * time.Second))
				if _, err := cl.c.Write(frame); err != nil {
					return
				}
				if _, err := wire.ReadFrame(cl.br, 64<<20); err != nil {
					return
				}
				answered.Add(1)
			}
		}()
	}
	return func() int64 {
		close(done)
		wg.Wait()
		return answered.Load()
	}
}

// settle waits, after a flood process ended, until process pid used
// under a tenth of a core in each of two 500 ms windows in a row (at
// most 30 s), so the next phase does not measure what the flood left
// behind, and returns the CPU time pid used meanwhile and how long that
// took.
func settle(pid int) (used, took time.Duration) {
	start, cpu0 := time.Now(), proccpu.Seconds(pid)
	for last, quiet := cpu0, 0; quiet < 2 && time.Since(start) < 30*time.Second; {
		time.Sleep(500 * time.Millisecond)
		now := proccpu.Seconds(pid)
		if quiet++; now-last >= 0.05 {
			quiet = 0
		}
		last = now
	}
	return time.Duration((proccpu.Seconds(pid) - cpu0) * float64(time.Second)), time.Since(start)
}

// cpuMeter returns a function that says how much CPU time process pid
// used since its last call, and which share of one core that was.
func cpuMeter(t *testing.T, pid int) func() string {
	read := func() time.Duration {
		return time.Duration(proccpu.Seconds(pid) * float64(time.Second))
	}
	last, at := read(), time.Now()
	return func() string {
		now, nowAt := read(), time.Now()
		used, wall := now-last, nowAt.Sub(at)
		last, at = now, nowAt
		return fmt.Sprintf("CPU %v in %v (%.0f%% of a core)", used, wall.Round(time.Millisecond), 100*used.Seconds()/wall.Seconds())
	}
}

// TestFrameFloodProcess is TestFloodThroughBinary's frame flood, run in a
// process of its own: 100 connections to FRAMEFLOOD_ADDR each send a
// 100 MiB frame for 6 s, starting with produceHead or, with
// FRAMEFLOOD_HEAD=unknown-key, an unknown key.
func TestFrameFloodProcess(t *testing.T) {
	addr := os.Getenv("FRAMEFLOOD_ADDR")
	if addr == "" {
		t.Skip("started by TestFloodThroughBinary")
	}
	head := produceHead
	if os.Getenv("FRAMEFLOOD_HEAD") == "unknown-key" {
		head = nil
	}
	t.Logf("%d of 100 frames read", flood(t, addr, 100, 100<<20, 100<<20, 6*time.Second, head))
}
