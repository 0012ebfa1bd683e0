package host_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/admin"
	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/loop"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/plugin/plugintest"
	"github.com/coordhost/coordhost/host/store"
	"github.com/coordhost/coordhost/host/wire"
	"github.com/coordhost/coordhost/internal/testtool"
)

// loopFixture is an event loop over a real core and store, without a data
// plane: topics are handed to core directly.
type loopFixture struct {
	loop  *loop.Loop
	core  *core.Coordinator
	store *store.Store
	asg   *assign.Registry
	logs  *testtool.LogBuffer
}

func newLoopFixture(t *testing.T, dir, fallback, groups string) *loopFixture {
	t.Helper()
	return newLoopFixtureWith(t, dir, fallback, groups, plugin.Config{})
}

// newLoopFixtureWith is newLoopFixture with pc as the config of every
// plugin the host's Assignors load (deadline, memory limit).
func newLoopFixtureWith(t *testing.T, dir, fallback, groups string, pc plugin.Config) *loopFixture {
	t.Helper()
	cfg := core.DefaultConfig()
	cfg.Streams.InitialRebalanceDelayMs, cfg.Streams.AssignmentIntervalMs = 0, 0
	c, err := core.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.Step(time.Now().UnixMilli(), core.Topics{Topics: []core.TopicMetadata{{Name: "in", ID: [16]byte{1}, Partitions: 4}}})
	c.Commit()
	st, err := store.Open(filepath.Join(dir, "coordhost.db"))
	if err != nil {
		t.Fatal(err)
	}
	logs := &testtool.LogBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	asg := assign.New(context.Background(), t.TempDir(), fallback, pc, log)
	l, err := loop.New(loop.Deps{Core: c, Store: st, Assignors: asg, Metrics: admin.NewMetrics(), Log: log, Groups: fixtureGroups(t, groups)})
	if err != nil {
		t.Fatal(err)
	}
	f := &loopFixture{loop: l, core: c, store: st, asg: asg, logs: logs}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = l.Shutdown(ctx)
		_ = st.Close()
	})
	return f
}

func (f *loopFixture) heartbeat(t *testing.T, group, member string, epoch int32, active []kmsg.TaskIDs) *kmsg.StreamsGroupHeartbeatResponse {
	t.Helper()
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = group, member, epoch
	if epoch == 0 {
		proc := "p-" + member
		req.RebalanceTimeoutMillis, req.ProcessID = 30000, &proc
		req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
			{SubtopologyID: "0", SourceTopics: []string{"in"}}}}
	}
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = append([]kmsg.TaskIDs{}, active...), []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := f.loop.Handle(ctx, &wire.Request{Key: req.Key(), Version: req.Version, Body: req})
	if err != nil {
		t.Fatal(err)
	}
	return resp.(*kmsg.StreamsGroupHeartbeatResponse)
}

func countTasks(ts []kmsg.TaskIDs) int {
	n := 0
	for _, t := range ts {
		n += len(t.Partitions)
	}
	return n
}

// TestHostilePluginAsGroupAssignor: each hostile
// wasm fixture (testdata/plugins/c/hostile.c) is a real core group's
// assignor with a pending run. With a fallback (the native sticky build)
// the first member gets all 4 tasks from it and, once a second joins, the
// 2+2 target comes from it too; the plugin's error metric for the
// fixture's kind goes up, every failed call ran on a fresh instance that
// was then discarded, and a log line names the plugin and the kind. With
// no usable fallback the run fails: the group keeps its last target, the
// waiting heartbeat gets UNKNOWN_SERVER_ERROR and the group's describe
// shows the assignor error. A module speaking the wrong ABI version never
// runs: Load and Reload refuse it and the group stays on the assignor it had.
func TestHostilePluginAsGroupAssignor(t *testing.T) {
	cases := []struct {
		variant string
		kind    plugin.Kind
		cfg     plugin.Config
		okCalls uint64 // leading calls that succeed: TASK_TWICE needs two members
	}{
		{"TRAP_INIT", plugin.KindInit, plugin.Config{}, 0},
		{"TRAP_ASSIGN", plugin.KindTrap, plugin.Config{}, 0},
		{"LOOP", plugin.KindDeadline, plugin.Config{Deadline: 150 * time.Millisecond}, 0},
		{"MEMORY_BOMB", plugin.KindMemory, plugin.Config{MemoryLimitPages: 256}, 0},
		{"GARBAGE", plugin.KindBadOutput, plugin.Config{}, 0},
		{"UNKNOWN_MEMBER", plugin.KindInvalidAssignment, plugin.Config{}, 0},
		{"UNKNOWN_TASK", plugin.KindInvalidAssignment, plugin.Config{}, 0},
		{"TASK_TWICE", plugin.KindInvalidAssignment, plugin.Config{}, 1},
	}
	for _, c := range cases {
		t.Run(c.variant+"/fallback answers", func(t *testing.T) {
			wasm := plugintest.CPluginPath(t, "testdata/plugins/c/hostile.c", "HOSTILE_"+c.variant)
			f := newLoopFixtureWith(t, t.TempDir(), "sticky", groupAssignor("hostile"), c.cfg)
			if err := f.asg.Load(context.Background(), "hostile", wasm); err != nil {
				t.Fatal(err)
			}
			if active := f.ownAllTasks(t, "m1"); countTasks(active) != 4 {
				t.Fatalf("member owns %v after 10 s; the fallback should have assigned all 4 tasks", active)
			}
			// A second member makes a second run (TASK_TWICE can only
			// misbehave with two members); its target comes from the fallback.
			m := f.joinUntilCalls(t, "m2", 2)
			d := f.describe(t)
			if d.Streams == nil || d.Streams.AssignmentEpoch != d.Streams.Epoch || len(d.Streams.Members) != 2 ||
				countTasks(d.Streams.Members[0].TargetAssignment.ActiveTasks) != 2 || countTasks(d.Streams.Members[1].TargetAssignment.ActiveTasks) != 2 {
				t.Fatalf("the fallback's 2+2 target was not installed: %+v", d.Streams)
			}
			failed := m.Calls - c.okCalls
			if info := f.pluginInfo(t, "hostile"); info.Failures != int64(failed) || m.Errors[c.kind] != failed || m.Fallbacks != failed {
				t.Fatalf("plugin info after %s: %+v metrics %+v", c.variant, info, m)
			}
			// Each failed call's instance was discarded and the next call
			// got a fresh one (an instance whose _initialize trapped is
			// never created).
			if c.kind == plugin.KindInit && m.InstancesCreated != 0 ||
				c.kind != plugin.KindInit && (m.InstancesCreated != failed || m.InstancesDiscarded != failed) {
				t.Fatalf("instances not discarded and replaced after %s: %+v", c.variant, m)
			}
			f.wantLog(t, "plugin call failed; instance discarded", "plugin assignor failed", "plugin=hostile",
				"kind="+string(c.kind), "the group's target comes from the fallback assignor", "group=g", "fallback=sticky")
			// The group's admin view says its target came from the fallback.
			if fb := d.AssignorFallback; fb == nil || fb.Assignor != "hostile" || fb.Fallback != "sticky" ||
				fb.Epoch != d.Streams.Epoch || fb.Error == "" {
				t.Fatalf("admin view lacks the fallback: %+v", fb)
			}
		})
	}
	for _, c := range []struct {
		variant, inErr string
		kind           plugin.Kind
	}{{"TRAP_ASSIGN", "unreachable", plugin.KindTrap}, {"GARBAGE", "decode", plugin.KindBadOutput}} {
		t.Run(c.variant+"/no fallback keeps the last target", func(t *testing.T) {
			wasm := plugintest.CPluginPath(t, "testdata/plugins/c/hostile.c", "HOSTILE_"+c.variant)
			f := newLoopFixture(t, t.TempDir(), "no-such-assignor", groupAssignor("hostile"))
			if err := f.asg.Load(context.Background(), "hostile", wasm); err != nil {
				t.Fatal(err)
			}
			f.wantFailedRunKeepsTarget(t, c.inErr)
			if m := f.pluginInfo(t, "hostile").Metrics; m.Errors[c.kind] < 1 || m.InstancesDiscarded < 1 {
				t.Fatalf("metrics after %s: %+v", c.variant, m)
			}
			f.wantLog(t, "plugin=hostile", "kind="+string(c.kind))
		})
	}
	t.Run("WRONG_VERSION/refused at load", func(t *testing.T) {
		good := plugintest.CPluginPath(t, "testdata/plugins/c/assignor.c")
		bad := plugintest.CPluginPath(t, "testdata/plugins/c/hostile.c", "HOSTILE_WRONG_VERSION")
		f := newLoopFixture(t, t.TempDir(), "sticky", groupAssignor("hostile"))
		if err := f.asg.Load(context.Background(), "hostile", good); err != nil {
			t.Fatal(err)
		}
		const want = "plugin speaks ABI v2; this host serves ABI v1"
		if err := f.asg.Load(context.Background(), "hostile", bad); plugin.KindOf(err) != plugin.KindABIVersion || !strings.Contains(err.Error(), want) {
			t.Fatalf("Load of a v2 module: %v, want a %s error saying %q", err, plugin.KindABIVersion, want)
		}
		if err := f.asg.Reload(context.Background(), "hostile", bad); plugin.KindOf(err) != plugin.KindABIVersion || !strings.Contains(err.Error(), want) {
			t.Fatalf("Reload with a v2 module: %v, want a %s error saying %q", err, plugin.KindABIVersion, want)
		}
		if active := f.ownAllTasks(t, "m1"); countTasks(active) != 4 {
			t.Fatalf("member owns %v; the previously loaded plugin should have assigned all 4 tasks", active)
		}
		info := f.pluginInfo(t, "hostile")
		if info.Path != good || info.Runs < 1 || info.Failures != 0 || info.Metrics.Errors[plugin.KindABIVersion] != 1 || info.Metrics.Fallbacks != 0 {
			t.Fatalf("after refusing a v2 module the group is not served by the loaded plugin: %+v metrics %+v", info, info.Metrics)
		}
	})
}

// groupAssignor is the groups section of a config file naming the
// assignor of every group.
func groupAssignor(name string) string {
	return "groups:\n  defaults:\n" + fixtureDefaults + "    streams.assignor.name: " + name + "\n"
}

// fixtureDefaults are the groups.defaults lines every fixture's groups
// section starts with: no initial rebalance delay and no assignment
// interval, as the fixtures' cores are configured.
const fixtureDefaults = "    streams.initial.rebalance.delay.ms: 0\n    streams.assignment.interval.ms: 0\n"

// fixtureGroups is the per-group configuration of a config file whose
// groups section is yaml, as the server loads it; nil for "" (the loop
// then hands core no per-group settings).
func fixtureGroups(t *testing.T, yaml string) *config.Groups {
	t.Helper()
	if yaml == "" {
		return nil
	}
	file := filepath.Join(t.TempDir(), "groups.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load([]string{"--config", file}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Groups
}

// ownAllTasks heartbeats member into group "g" until it owns 4 tasks or
// 10 s pass, and returns what it owns.
func (f *loopFixture) ownAllTasks(t *testing.T, member string) []kmsg.TaskIDs {
	t.Helper()
	var active []kmsg.TaskIDs
	epoch := int32(0)
	deadline := time.Now().Add(10 * time.Second)
	for countTasks(active) != 4 && time.Now().Before(deadline) {
		resp := f.heartbeat(t, "g", member, epoch, active)
		if resp.ErrorCode != 0 {
			t.Fatalf("heartbeat: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		epoch = resp.MemberEpoch
		if resp.ActiveTasks != nil {
			active = resp.ActiveTasks
		}
		time.Sleep(20 * time.Millisecond)
	}
	return active
}

// pluginInfo is the host's view of the named wasm assignor.
func (f *loopFixture) pluginInfo(t *testing.T, name string) assign.PluginInfo {
	t.Helper()
	for _, pi := range f.asg.Info() {
		if pi.Name == name {
			if pi.Runtime != "wasm" || pi.Metrics == nil {
				t.Fatalf("assignor %q is not a wasm plugin: %+v", name, pi)
			}
			return pi
		}
	}
	t.Fatalf("assignor %q not configured", name)
	return assign.PluginInfo{}
}

// wantLog fails unless the captured log contains every string.
func (f *loopFixture) wantLog(t *testing.T, want ...string) {
	t.Helper()
	text := f.logs.String()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("log lacks %q:\n%s", w, text)
		}
	}
}

// joinUntilCalls heartbeats member into group "g" until the "hostile"
// plugin has been called calls times (or 10 s pass) and returns its metrics.
func (f *loopFixture) joinUntilCalls(t *testing.T, member string, calls uint64) plugin.Metrics {
	t.Helper()
	epoch := int32(0)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if m := *f.pluginInfo(t, "hostile").Metrics; m.Calls >= calls || time.Now().After(deadline) {
			if m.Calls < calls {
				t.Fatalf("plugin called %d times after 10 s, want %d: %+v", m.Calls, calls, m)
			}
			return m
		}
		resp := f.heartbeat(t, "g", member, epoch, nil)
		if resp.ErrorCode != 0 {
			t.Fatalf("heartbeat: %v", kerr.ErrorForCode(resp.ErrorCode))
		}
		epoch = resp.MemberEpoch
		time.Sleep(20 * time.Millisecond)
	}
}

// describe is the admin API's view of group "g".
func (f *loopFixture) describe(t *testing.T) loop.GroupDetail {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/v1/groups/g", nil)
	req.SetPathValue("id", "g")
	f.loop.GroupsHandler().ServeHTTP(rec, req)
	var d loop.GroupDetail
	if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil || rec.Code != 200 {
		t.Fatalf("describe: %d %s", rec.Code, rec.Body)
	}
	return d
}

// wantFailedRunKeepsTarget joins m1 to group "g" whose assignor fails with
// no fallback: the waiting heartbeat gets UNKNOWN_SERVER_ERROR, the member
// never gets tasks, the group's target stays where it was and its describe
// shows the assignor error (containing inErr).
func (f *loopFixture) wantFailedRunKeepsTarget(t *testing.T, inErr string) {
	t.Helper()
	resp := f.heartbeat(t, "g", "m1", 0, nil)
	saw := resp.ErrorCode
	deadline := time.Now().Add(10 * time.Second)
	for saw == 0 && time.Now().Before(deadline) {
		if countTasks(resp.ActiveTasks) != 0 {
			t.Fatalf("member got tasks %v from a failing assignor", resp.ActiveTasks)
		}
		time.Sleep(50 * time.Millisecond)
		resp = f.heartbeat(t, "g", "m1", resp.MemberEpoch, nil)
		saw = resp.ErrorCode
	}
	if saw != kerr.UnknownServerError.Code {
		t.Fatalf("heartbeat error %d, want UNKNOWN_SERVER_ERROR from the failed run", saw)
	}
	d := f.describe(t)
	if !strings.Contains(d.LastAssignorError, inErr) {
		t.Fatalf("describe does not show the assignor failure (%q): %+v", inErr, d)
	}
	if d.Streams == nil || d.Streams.AssignmentEpoch >= d.Streams.Epoch || len(d.Streams.Members) != 1 ||
		countTasks(d.Streams.Members[0].TargetAssignment.ActiveTasks) != 0 {
		t.Fatalf("group's target moved without an assignor result: %+v", d.Streams)
	}
}

// TestAppendFailureRollsBack: when the store append fails, the batch is
// rolled back in core and its requests are answered NOT_COORDINATOR; the
// group does not exist afterwards.
func TestAppendFailureRollsBack(t *testing.T) {
	f := newLoopFixture(t, t.TempDir(), "sticky", "")
	if err := f.store.Close(); err != nil { // every append now fails
		t.Fatal(err)
	}
	resp := f.heartbeat(t, "g", "m1", 0, nil)
	if resp.ErrorCode != kerr.NotCoordinator.Code {
		t.Fatalf("heartbeat answered %v, want NOT_COORDINATOR after a failed append", kerr.ErrorForCode(resp.ErrorCode))
	}
	if _, ok := f.core.Group("g"); ok {
		t.Fatal("group exists in core although its records were never stored")
	}
	if !strings.Contains(f.logs.String(), "store append failed") {
		t.Fatalf("no log line for the failed append:\n%s", f.logs.String())
	}
}

// TestRestartReplaysStore: a second loop over the same store rebuilds the
// group (same epochs) and the member continues without being fenced.
func TestRestartReplaysStore(t *testing.T) {
	dir := t.TempDir()
	f := newLoopFixture(t, dir, "sticky", "")
	var active []kmsg.TaskIDs
	epoch := int32(0)
	for i := 0; i < 100 && countTasks(active) != 4; i++ {
		resp := f.heartbeat(t, "g", "m1", epoch, active)
		if resp.ErrorCode != 0 {
			t.Fatal(kerr.ErrorForCode(resp.ErrorCode))
		}
		epoch = resp.MemberEpoch
		if resp.ActiveTasks != nil {
			active = resp.ActiveTasks
		}
		time.Sleep(20 * time.Millisecond)
	}
	if countTasks(active) != 4 {
		t.Fatalf("no assignment: %v", active)
	}
	before := f.core.Dump()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.loop.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := f.store.Close(); err != nil {
		t.Fatal(err)
	}
	g := newLoopFixture(t, dir, "sticky", "")
	if after := g.core.Dump(); after != before {
		t.Fatalf("replayed state differs:\nbefore\n%s\nafter\n%s", before, after)
	}
	resp := g.heartbeat(t, "g", "m1", epoch, active)
	if resp.ErrorCode != 0 || resp.MemberEpoch != epoch {
		t.Fatalf("after restart: error %v epoch %d, want none and %d", kerr.ErrorForCode(resp.ErrorCode), resp.MemberEpoch, epoch)
	}
}

// TestGroupConfigReachesCore: a per-group override (glob) is applied to
// core, so the heartbeat interval a member is told differs by group.
func TestGroupConfigReachesCore(t *testing.T) {
	yaml := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(yaml, []byte("groups:\n  overrides:\n    - match: \"fast-*\"\n      streams.heartbeat.interval.ms: 250\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startLoopHost(t, "", "--config="+yaml, "--groups.defaults.streams.heartbeat.interval.ms=400")
	ctx := timeout(t)
	kc := newClient(t, srv.KafkaAddr())
	if err := createTopic(ctx, kc, "gc-in", 2); err != nil {
		t.Fatal(err)
	}
	cl := &coordinator{cl: kc}
	m := newStreamsMember(cl, "plain", "gc-in")
	if _, _, err := m.heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	if m.interval != 400*time.Millisecond {
		t.Fatalf("heartbeat interval %v, want the groups.defaults 400ms", m.interval)
	}
	fast := newStreamsMember(cl, "fast-1", "gc-in")
	if _, _, err := fast.heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	if fast.interval != 250*time.Millisecond {
		t.Fatalf("heartbeat interval of fast-1 %v, want the override's 250ms", fast.interval)
	}
}
