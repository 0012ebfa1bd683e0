package host_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/admin"
	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/gateway"
	"github.com/coordhost/coordhost/host/loop"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/plugin/plugintest"
	"github.com/coordhost/coordhost/host/store"
	"github.com/coordhost/coordhost/host/wire"
	"github.com/coordhost/coordhost/internal/testtool"
)

// The changelog of the test topology's one stateful subtopology.
const probeChangelog = "app-store-changelog"

type probeFixture struct {
	loop *loop.Loop
	asg  *assign.Registry
	logs *testtool.LogBuffer
}

// newProbeFixture is an event loop over a real core and store whose
// topic image holds the source topic "in" and the changelog (4 partitions
// each), with the goprobe fixture (testdata/plugins/goprobe: a module
// exporting only a probing policy) loaded as plugin "goprobe". dp, when
// not nil, is the loop's data plane.
func newProbeFixture(t *testing.T, groups string, dp *gateway.DataPlane) *probeFixture {
	t.Helper()
	cfg := core.DefaultConfig()
	cfg.Streams.InitialRebalanceDelayMs, cfg.Streams.AssignmentIntervalMs = 0, 0
	c, err := core.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if dp == nil {
		c.Step(time.Now().UnixMilli(), core.Topics{Topics: []core.TopicMetadata{{Name: "in", ID: [16]byte{1}, Partitions: 4},
			{Name: probeChangelog, ID: [16]byte{2}, Partitions: 4}}})
		c.Commit()
	}
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, "coordhost.db"))
	if err != nil {
		t.Fatal(err)
	}
	logs := &testtool.LogBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	asg := assign.New(context.Background(), t.TempDir(), "sticky", plugin.Config{}, log)
	wasm := filepath.Join(dir, "goprobe.wasm")
	if err := os.WriteFile(wasm, plugintest.GoPlugin(t, "testdata/plugins/goprobe"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := asg.Load(context.Background(), "goprobe", wasm); err != nil {
		t.Fatal(err)
	}
	deps := loop.Deps{Core: c, Store: st, Assignors: asg, Metrics: admin.NewMetrics(), Log: log, Groups: fixtureGroups(t, groups),
		EndOffsetsRefresh: func(string) time.Duration { return 200 * time.Millisecond }, EndOffsetsTick: 50 * time.Millisecond,
		TopicRefresh: 100 * time.Millisecond}
	if dp != nil {
		deps.DataPlane = dp
	}
	l, err := loop.New(deps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = l.Shutdown(ctx)
		_ = st.Close()
	})
	return &probeFixture{loop: l, asg: asg, logs: logs}
}

// lagMember is a streams member of a group with one stateful subtopology
// ("0", source "in", changelog app-store-changelog). It adopts every
// assignment at once and reports offsets/endOffsets (per partition of
// subtopology "0") on every heartbeat.
type lagMember struct {
	f                       *probeFixture
	group, id               string
	epoch                   int32
	active, standby, warmup []kmsg.TaskIDs
	offsets, ends           map[int32]int64
	mu                      sync.Mutex
}

func (m *lagMember) heartbeat(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	if m.epoch == 0 {
		proc := "p-" + m.id
		req.RebalanceTimeoutMillis, req.ProcessID = 30000, &proc
		req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
			{SubtopologyID: "0", SourceTopics: []string{"in"}, StateChangelogTopics: []kmsg.TopicInfo{{Topic: probeChangelog}}}}}
	}
	req.ActiveTasks = append([]kmsg.TaskIDs{}, m.active...)
	req.StandbyTasks = append([]kmsg.TaskIDs{}, m.standby...)
	req.WarmupTasks = append([]kmsg.TaskIDs{}, m.warmup...)
	offs := func(in map[int32]int64) []kmsg.TaskOffset {
		out := []kmsg.TaskOffset{}
		for p, o := range in {
			out = append(out, kmsg.TaskOffset{SubtopologyID: "0", Partition: p, Offset: o})
		}
		return out
	}
	req.TaskOffsets, req.TaskEndOffsets = offs(m.offsets), offs(m.ends)
	m.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := m.f.loop.Handle(ctx, &wire.Request{Key: req.Key(), Version: req.Version, Body: req})
	if err != nil {
		t.Fatal(err)
	}
	resp := r.(*kmsg.StreamsGroupHeartbeatResponse)
	if resp.ErrorCode != 0 {
		t.Fatalf("%s/%s heartbeat: error %d %v", m.group, m.id, resp.ErrorCode, deref(resp.ErrorMessage))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.epoch = resp.MemberEpoch
	if resp.ActiveTasks != nil {
		m.active = resp.ActiveTasks
	}
	if resp.StandbyTasks != nil {
		m.standby = resp.StandbyTasks
	}
	if resp.WarmupTasks != nil {
		m.warmup = resp.WarmupTasks
	}
}

// describe returns the group's epoch and each member's target as
// "active/standby/warmup" partition counts.
func (f *probeFixture) describe(t *testing.T, group string) (int32, map[string][3]int) {
	t.Helper()
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := f.loop.Handle(ctx, &wire.Request{Key: req.Key(), Version: req.Version, Body: req})
	if err != nil {
		t.Fatal(err)
	}
	g := r.(*kmsg.StreamsGroupDescribeResponse).Groups[0]
	out := map[string][3]int{}
	for _, m := range g.Members {
		ta := m.TargetAssignment
		out[m.MemberID] = [3]int{countTasks(ta.ActiveTasks), countTasks(ta.StandbyTasks), countTasks(ta.WarmupTasks)}
	}
	return g.Epoch, out
}

func (f *probeFixture) info(name string) assign.PluginInfo {
	for _, pi := range f.asg.Info() {
		if pi.Name == name {
			return pi
		}
	}
	return assign.PluginInfo{}
}

// pump heartbeats every member every 50 ms until cond holds or 15 s pass.
func pump(t *testing.T, what string, ms []*lagMember, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		for _, m := range ms {
			m.heartbeat(t)
		}
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within 15s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func wantTargets(f *probeFixture, t *testing.T, group string, want map[string][3]int) func() error {
	return func() error {
		_, got := f.describe(t, group)
		for id, w := range want {
			if got[id] != w {
				return fmt.Errorf("targets %v, want %v", got, want)
			}
		}
		return nil
	}
}

// haScaleOut brings group to "a holds all 4 actives, caught up; b holds 2
// warm-ups" with the HA assignor, then reports b's warm-ups caught up.
// It returns the members and the group epoch before b caught up.
func haScaleOut(t *testing.T, f *probeFixture, group string) ([]*lagMember, int32) {
	t.Helper()
	all := map[int32]int64{0: 1000, 1: 1000, 2: 1000, 3: 1000}
	a := &lagMember{f: f, group: group, id: "a", offsets: all, ends: all}
	pump(t, group+": a owns all", []*lagMember{a}, wantTargets(f, t, group, map[string][3]int{"a": {4, 0, 0}}))
	b := &lagMember{f: f, group: group, id: "b"}
	ms := []*lagMember{a, b}
	pump(t, group+": b warms up", ms, func() error {
		if err := wantTargets(f, t, group, map[string][3]int{"a": {4, 0, 0}, "b": {0, 0, 2}})(); err != nil {
			return err
		}
		if countTasks(b.warmup) != 2 {
			return fmt.Errorf("b owns warm-ups %v", b.warmup)
		}
		return nil
	})
	epoch, _ := f.describe(t, group)
	b.mu.Lock()
	b.offsets = map[int32]int64{}
	for _, w := range b.warmup {
		for _, p := range w.Partitions {
			b.offsets[p] = 995 // lag 5 <= acceptable 10: caught up
		}
	}
	b.mu.Unlock()
	return ms, epoch
}

// haGroups is the groups section of a config file for the probe tests:
// every group on the HA assignor with 2 warm-ups, acceptable lag 10 and
// the built-in probing policy; groups "s-*" and "refuse-s*" on sticky;
// and the probing policy of each prefix in policy.
func haGroups(policy map[string]string) string {
	var y strings.Builder
	y.WriteString("groups:\n  defaults:\n" + fixtureDefaults +
		"    streams.assignor.name: ha\n    streams.num.warmup.replicas: 2\n    streams.acceptable.recovery.lag: 10\n" +
		"    streams.probing.rebalance.interval.ms: 600000\n    streams.probing.policy: builtin\n  overrides:\n")
	keys := map[string]string{"s-": "      streams.assignor.name: sticky\n", "refuse-s": "      streams.assignor.name: sticky\n"}
	for prefix, p := range policy {
		keys[prefix] += "      streams.probing.policy: " + p + "\n"
	}
	for prefix, lines := range keys {
		fmt.Fprintf(&y, "    - match: %q\n%s", prefix+"*", lines)
	}
	return y.String()
}

// TestProbingPolicyPluginDecides (host wiring): a probing policy
// is its own plugin kind. Scale-out with the HA assignor: b's warm-ups
// catch up. With the HA module's own probe (the default policy) the probe
// moves two actives to b (group epoch bumped, target 2/2). With the
// goprobe module, which exports only a probe, refusing: the policy is
// consulted again and again, yet no probe runs, the epoch stays and b
// keeps its warm-ups. When the policy traps, the failure is counted and
// logged, the instance discarded, and the built-in policy decides: the
// early probe moves the actives as with the default.
func TestProbingPolicyPluginDecides(t *testing.T) {
	f := newProbeFixture(t, haGroups(map[string]string{"ha-": "ha", "refuse-": "goprobe", "trap-": "goprobe"}), nil)

	t.Run("assignor's own probe export", func(t *testing.T) {
		ms, epoch := haScaleOut(t, f, "ha-own")
		pump(t, "actives move to b", ms, wantTargets(f, t, "ha-own", map[string][3]int{"a": {2, 0, 0}, "b": {2, 0, 0}}))
		if e, _ := f.describe(t, "ha-own"); e <= epoch {
			t.Fatalf("group epoch %d after the probe moved actives, was %d", e, epoch)
		}
	})

	t.Run("probe-only plugin refuses", func(t *testing.T) {
		ms, epoch := haScaleOut(t, f, "refuse-ha")
		calls := f.info("goprobe").Metrics.Calls
		haRuns := f.info("ha").Runs
		pump(t, "policy consulted 5 more times", ms, func() error {
			if c := f.info("goprobe").Metrics.Calls; c < calls+5 {
				return fmt.Errorf("goprobe calls %d, want >= %d", c, calls+5)
			}
			return nil
		})
		e, targets := f.describe(t, "refuse-ha")
		if e != epoch || targets["a"] != [3]int{4, 0, 0} || targets["b"] != [3]int{0, 0, 2} {
			t.Fatalf("refusing policy: epoch %d (was %d), targets %v: want unchanged 4/0/0 and 0/0/2", e, epoch, targets)
		}
		if r := f.info("ha").Runs; r != haRuns {
			t.Fatalf("ha assignor ran %d times while the policy refused every probe", r-haRuns)
		}
	})

	t.Run("policy failure falls back to the built-in policy", func(t *testing.T) {
		before := f.info("goprobe")
		ms, epoch := haScaleOut(t, f, "trap-ha")
		pump(t, "actives move to b", ms, wantTargets(f, t, "trap-ha", map[string][3]int{"a": {2, 0, 0}, "b": {2, 0, 0}}))
		if e, _ := f.describe(t, "trap-ha"); e <= epoch {
			t.Fatalf("group epoch %d after the fallback probe, was %d", e, epoch)
		}
		after := f.info("goprobe")
		if after.ProbeFailures <= before.ProbeFailures || after.Metrics.Errors[plugin.KindStatus] <= before.Metrics.Errors[plugin.KindStatus] {
			t.Fatalf("probe failures %d -> %d, status errors %d -> %d: want both up",
				before.ProbeFailures, after.ProbeFailures, before.Metrics.Errors[plugin.KindStatus], after.Metrics.Errors[plugin.KindStatus])
		}
		if after.Metrics.InstancesDiscarded <= before.Metrics.InstancesDiscarded {
			t.Fatalf("instances discarded %d -> %d: the failing instance must be discarded", before.Metrics.InstancesDiscarded, after.Metrics.InstancesDiscarded)
		}
		if !strings.Contains(f.logs.String(), "probing policy failed: the built-in interval policy decides this check") ||
			!strings.Contains(f.logs.String(), "group=trap-ha") {
			t.Fatalf("no log line for the failed probing policy:\n%s", f.logs.String())
		}
	})
}

// TestStickyWithProbePlugin: the sticky assignor (no probe
// export, never warm-ups: the built-in policy never probes it) paired
// with the probe-only goprobe module. Asking for a probe 300 ms after the
// target, the policy makes the sticky assignor run once more at the same
// epoch; the result equals the target, so the epoch and targets stay
// (docs/WARMUPS.md §2.2), and as the input does not change, the same
// probe is not run again however often the policy asks. Refusing, the
// policy is consulted repeatedly and the assignor never runs.
func TestStickyWithProbePlugin(t *testing.T) {
	f := newProbeFixture(t, haGroups(map[string]string{"s-": "goprobe", "refuse-s": "goprobe"}), nil)
	stable := func(group string) ([]*lagMember, int32, map[string][3]int) {
		a, b := &lagMember{f: f, group: group, id: "a"}, &lagMember{f: f, group: group, id: "b"}
		ms := []*lagMember{a, b}
		pump(t, group+": 2+2", ms, func() error {
			if err := wantTargets(f, t, group, map[string][3]int{"a": {2, 0, 0}, "b": {2, 0, 0}})(); err != nil {
				return err
			}
			if countTasks(a.active) != 2 || countTasks(b.active) != 2 {
				return fmt.Errorf("owned %v / %v", a.active, b.active)
			}
			return nil
		})
		e, targets := f.describe(t, group)
		return ms, e, targets
	}

	ms, epoch, targets := stable("s-after")
	runs := f.info("sticky").Runs
	calls := f.info("goprobe").Metrics.Calls
	pump(t, "the policy's probe runs the sticky assignor", ms, func() error {
		if r := f.info("sticky").Runs; r < runs+1 {
			return fmt.Errorf("sticky runs %d, want %d", r, runs+1)
		}
		return nil
	})
	pump(t, "policy consulted 3 more times", ms, func() error {
		if c := f.info("goprobe").Metrics.Calls; c < calls+4 {
			return fmt.Errorf("goprobe calls %d, want >= %d", c, calls+4)
		}
		return nil
	})
	if r := f.info("sticky").Runs; r != runs+1 {
		t.Fatalf("sticky ran %d times after the target; want exactly 1 (a probe with an unchanged input is not repeated)", r-runs)
	}
	if e, got := f.describe(t, "s-after"); e != epoch || fmt.Sprint(got) != fmt.Sprint(targets) {
		t.Fatalf("after a probe that changed nothing: epoch %d targets %v, want %d %v", e, got, epoch, targets)
	}

	ms, epoch, _ = stable("refuse-s")
	runs = f.info("sticky").Runs
	calls = f.info("goprobe").Metrics.Calls
	pump(t, "policy consulted 4 more times", ms, func() error {
		if c := f.info("goprobe").Metrics.Calls; c < calls+4 {
			return fmt.Errorf("goprobe calls %d, want >= %d", c, calls+4)
		}
		return nil
	})
	if r := f.info("sticky").Runs; r != runs {
		t.Fatalf("sticky ran %d times while the policy refused every probe", r-runs)
	}
	if e, _ := f.describe(t, "refuse-s"); e != epoch {
		t.Fatalf("epoch %d, want %d", e, epoch)
	}
}

// TestNativePanicInLoop: a group whose native assignor panics on
// its input (it indexes the processes table out of range) gets
// UNKNOWN_SERVER_ERROR on the heartbeat that waited, keeps its last
// target (none), the failure is logged with the panic, and the loop goes
// on serving another group.
func TestNativePanicInLoop(t *testing.T) {
	assign.Builtins["boom"] = struct {
		Native assign.Native
		Probe  assign.NativeProbe
		File   string
	}{Native: func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
		_ = req.Processes[len(req.Processes)+int(req.Members[0].Process)]
		return nil, nil
	}, File: "boom.wasm"}
	defer delete(assign.Builtins, "boom")
	f := newLoopFixture(t, t.TempDir(), "sticky", groupAssignor("sticky")+"  overrides:\n    - match: bad\n      streams.assignor.name: boom\n")
	if code := f.heartbeat(t, "bad", "m1", 0, nil).ErrorCode; code != kerr.UnknownServerError.Code {
		t.Fatalf("heartbeat waiting on the panicking assignor: error %d, want UNKNOWN_SERVER_ERROR", code)
	}
	logs := f.logs.String()
	if !strings.Contains(logs, "assignor run failed: the group keeps its last target") || !strings.Contains(logs, "group=bad") ||
		!strings.Contains(logs, `native assign of \"boom\" panicked`) {
		t.Fatalf("no log line for the recovered panic:\n%s", logs)
	}
	pf := &probeFixture{loop: f.loop}
	if e, targets := pf.describe(t, "bad"); targets["m1"] != [3]int{} || e < 1 {
		t.Fatalf("group bad: epoch %d targets %v, want no target", e, targets)
	}
	for _, pi := range f.asg.Info() {
		if pi.Name == "boom" && (pi.Panics != 1 || pi.Errors != 1) {
			t.Fatalf("boom: %+v, want 1 panic, 1 error", pi)
		}
	}
	waitFor(t, 10*time.Second, "group good assigned", func() error {
		if n := countTasks(f.heartbeat(t, "good", "m1", 0, nil).ActiveTasks); n != 4 {
			return fmt.Errorf("%d tasks", n)
		}
		return nil
	})
}
