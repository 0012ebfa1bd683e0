package host_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/admin"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/plugin/plugintest"
	"github.com/coordhost/coordhost/host/store"
	"github.com/coordhost/coordhost/host/wire"
)

// syncBuf is a log sink tests can read.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// loopFixture is an event loop over a real core and store, without a data
// plane: topics are handed to core directly.
type loopFixture struct {
	loop  *host.Loop
	core  *core.Coordinator
	store *store.Store
	asg   *host.Assignors
	logs  *syncBuf
}

func newLoopFixture(t *testing.T, dir, fallback string, groupCfg func(string) *core.StreamsGroupOverrides) *loopFixture {
	t.Helper()
	cfg := core.DefaultConfig()
	cfg.Streams.InitialRebalanceDelayMs, cfg.Streams.AssignmentIntervalMs = 0, 0
	c, err := core.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c.UpdateTopics(time.Now().UnixMilli(), []core.TopicMetadata{{Name: "in", ID: [16]byte{1}, Partitions: 4}})
	c.Commit()
	st, err := store.Open(filepath.Join(dir, "coordhost.db"))
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuf{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	asg := host.NewAssignors(context.Background(), t.TempDir(), fallback, plugin.Config{}, log)
	l, err := host.NewLoop(host.LoopDeps{Core: c, Store: st, Assignors: asg, Metrics: admin.NewMetrics(), Log: log, GroupConfig: groupCfg})
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

// TestHostilePluginAsGroupAssignor (issue 6, Must-show 2): a hostile wasm
// assignor (traps in assign) is a real core group's assignor. The pending
// run is answered by the fallback (the native sticky build): the member
// gets all 4 tasks, the plugin's trap metric and the host's failure count
// go up, the failed instance is discarded and a log line names the plugin.
// With no usable fallback the run fails: the group keeps its last target,
// the waiting heartbeat gets UNKNOWN_SERVER_ERROR and the group's
// describe shows the assignor error.
func TestHostilePluginAsGroupAssignor(t *testing.T) {
	wasm := plugintest.CPluginPath(t, "testdata/plugins/c/hostile.c", "HOSTILE_TRAP_ASSIGN")
	hostile := func(string) *core.StreamsGroupOverrides {
		name := "hostile"
		return &core.StreamsGroupOverrides{AssignorName: &name}
	}
	t.Run("fallback answers", func(t *testing.T) {
		f := newLoopFixture(t, t.TempDir(), "sticky", hostile)
		if err := f.asg.Load(context.Background(), "hostile", wasm); err != nil {
			t.Fatal(err)
		}
		var resp *kmsg.StreamsGroupHeartbeatResponse
		var active []kmsg.TaskIDs
		epoch := int32(0)
		deadline := time.Now().Add(10 * time.Second)
		for countTasks(active) != 4 && time.Now().Before(deadline) {
			resp = f.heartbeat(t, "g", "m1", epoch, active)
			if resp.ErrorCode != 0 {
				t.Fatalf("heartbeat: %v", kerr.ErrorForCode(resp.ErrorCode))
			}
			epoch = resp.MemberEpoch
			if resp.ActiveTasks != nil {
				active = resp.ActiveTasks
			}
			time.Sleep(20 * time.Millisecond)
		}
		if countTasks(active) != 4 {
			t.Fatalf("member owns %v after 10 s; the fallback should have assigned all 4 tasks", active)
		}
		var info host.PluginInfo
		for _, pi := range f.asg.Info() {
			if pi.Name == "hostile" {
				info = pi
			}
		}
		if info.Runtime != "wasm" || info.Failures < 1 || info.Metrics == nil || info.Metrics.Errors[plugin.KindTrap] < 1 ||
			info.Metrics.Fallbacks < 1 || info.Metrics.InstancesDiscarded < 1 {
			t.Fatalf("plugin info after a trap: %+v metrics %+v", info, info.Metrics)
		}
		if !strings.Contains(f.logs.String(), "plugin assignor failed") || !strings.Contains(f.logs.String(), "plugin=hostile") {
			t.Fatalf("no log line for the plugin failure:\n%s", f.logs.String())
		}
	})
	t.Run("no fallback keeps the last target", func(t *testing.T) {
		f := newLoopFixture(t, t.TempDir(), "no-such-assignor", hostile)
		if err := f.asg.Load(context.Background(), "hostile", wasm); err != nil {
			t.Fatal(err)
		}
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
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/v1/groups/g", nil)
		req.SetPathValue("id", "g")
		f.loop.GroupsHandler().ServeHTTP(rec, req)
		var d host.GroupDetail
		if err := json.Unmarshal(rec.Body.Bytes(), &d); err != nil || rec.Code != 200 {
			t.Fatalf("describe: %d %s", rec.Code, rec.Body)
		}
		if !strings.Contains(d.LastAssignorError, "trap") && !strings.Contains(d.LastAssignorError, "unreachable") {
			t.Fatalf("describe does not show the assignor failure: %+v", d)
		}
		if d.Streams == nil || d.Streams.AssignmentEpoch >= d.Streams.Epoch || len(d.Streams.Members) != 1 ||
			countTasks(d.Streams.Members[0].TargetAssignment.ActiveTasks) != 0 {
			t.Fatalf("group's target moved without an assignor result: %+v", d.Streams)
		}
	})
}

// TestAppendFailureRollsBack: when the store append fails, the batch is
// rolled back in core and its requests are answered NOT_COORDINATOR; the
// group does not exist afterwards.
func TestAppendFailureRollsBack(t *testing.T) {
	f := newLoopFixture(t, t.TempDir(), "sticky", nil)
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
	f := newLoopFixture(t, dir, "sticky", nil)
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
	g := newLoopFixture(t, dir, "sticky", nil)
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
