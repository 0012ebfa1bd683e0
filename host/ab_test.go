package host_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/admin"
	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/experiment"
	"github.com/coordhost/coordhost/host/loop"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/plugin/plugintest"
	"github.com/coordhost/coordhost/host/store"
	"github.com/coordhost/coordhost/internal/testtool"
)

// abFixture is a loop over a real core whose per-group settings come from
// the configuration (as in a server): streams.assignor.shadow is shadows
// for every group, assignments are immediate.
type abFixture struct {
	*loopFixture
	metrics *admin.Metrics
	members map[string]*abMember
}

type abMember struct {
	epoch  int32
	active []kmsg.TaskIDs
}

func newABFixture(t *testing.T, historyTargets int, shadows []string, pc plugin.Config, flags ...string) *abFixture {
	t.Helper()
	cfg, err := config.Load(append([]string{
		"--groups.defaults.streams.initial.rebalance.delay.ms=0", "--groups.defaults.streams.assignment.interval.ms=0",
		"--groups.defaults.streams.assignor.shadow=" + strings.Join(shadows, ","),
	}, flags...), nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	c, err := core.New(host.CoreConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	c.Step(time.Now().UnixMilli(), core.Topics{Topics: []core.TopicMetadata{{Name: "in", ID: [16]byte{1}, Partitions: 4}}})
	c.Commit()
	st, err := store.Open(filepath.Join(t.TempDir(), "coordhost.db"))
	if err != nil {
		t.Fatal(err)
	}
	logs := &testtool.LogBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	asg := assign.New(context.Background(), t.TempDir(), "sticky", pc, log)
	m := admin.NewMetrics()
	l, err := loop.New(loop.Deps{Core: c, Store: st, Assignors: asg, Metrics: m, Log: log, Groups: cfg.Groups, HistoryTargets: historyTargets})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = l.Shutdown(ctx)
		_ = st.Close()
	})
	return &abFixture{loopFixture: &loopFixture{loop: l, core: c, store: st, asg: asg, logs: logs}, metrics: m, members: map[string]*abMember{}}
}

// get serves path on the loop's admin handler and decodes the JSON answer.
func (f *abFixture) get(t *testing.T, path, id string, v any) int {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", path, nil)
	if id != "" {
		req.SetPathValue("id", id)
	}
	f.loop.GroupsHandler().ServeHTTP(rec, req)
	if rec.Code == 200 {
		if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
			t.Fatalf("GET %s: %v: %s", path, err, rec.Body)
		}
	}
	return rec.Code
}

func (f *abFixture) history(t *testing.T) experiment.GroupHistory {
	t.Helper()
	var h experiment.GroupHistory
	if code := f.get(t, "/v1/groups/g/history", "g", &h); code != 200 {
		t.Fatalf("GET /v1/groups/g/history: %d", code)
	}
	return h
}

// step applies one scripted change to group "g" ("join m", "leave m"),
// waits for the history to record the target it causes, then heartbeats
// every member until each owns its target. It returns the group's target
// assignment as JSON, member by member.
func (f *abFixture) step(t *testing.T, what string) string {
	t.Helper()
	var h experiment.GroupHistory
	f.get(t, "/v1/groups/g/history", "g", &h) // 404 before the first join
	last := func() int32 {
		if len(h.Targets) == 0 {
			return -1
		}
		return h.Targets[len(h.Targets)-1].Epoch
	}
	before := last()
	op, id, _ := strings.Cut(what, " ")
	switch op {
	case "join":
		f.members[id] = &abMember{}
		f.beat(t, id)
	case "leave":
		f.heartbeat(t, "g", id, -1, f.members[id].active)
		delete(f.members, id)
	}
	deadline := time.Now().Add(10 * time.Second)
	for f.get(t, "/v1/groups/g/history", "g", &h) != 200 || last() == before {
		if time.Now().After(deadline) {
			t.Fatalf("%s: no new target in the history after 10 s; log:\n%s", what, f.logs)
		}
		f.beatAll(t) // core computes a due target on a member's heartbeat
		time.Sleep(10 * time.Millisecond)
	}
	for {
		d := f.describe(t)
		if d.Streams != nil && d.Streams.AssignmentEpoch == d.Streams.Epoch && settled(d.Streams) {
			b, err := json.Marshal(targetsOf(d.Streams))
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: members did not reach the target in 10 s: %+v", what, d.Streams)
		}
		f.beatAll(t)
		time.Sleep(10 * time.Millisecond)
	}
}

// beatAll heartbeats every member, in id order.
func (f *abFixture) beatAll(t *testing.T) {
	t.Helper()
	ids := make([]string, 0, len(f.members))
	for id := range f.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		f.beat(t, id)
	}
}

// beat heartbeats member id with what it owns and adopts its answer.
func (f *abFixture) beat(t *testing.T, id string) {
	t.Helper()
	m := f.members[id]
	resp := f.heartbeat(t, "g", id, m.epoch, m.active)
	if resp.ErrorCode != 0 {
		t.Fatalf("heartbeat of %s: %v", id, kerr.ErrorForCode(resp.ErrorCode))
	}
	m.epoch = resp.MemberEpoch
	if resp.ActiveTasks != nil {
		m.active = resp.ActiveTasks
	}
}

func settled(g *kmsg.StreamsGroupDescribeResponseGroup) bool {
	for _, m := range g.Members {
		a, _ := json.Marshal(m.Assignment)
		b, _ := json.Marshal(m.TargetAssignment)
		if string(a) != string(b) {
			return false
		}
	}
	return true
}

func targetsOf(g *kmsg.StreamsGroupDescribeResponseGroup) []string {
	var out []string
	for _, m := range g.Members {
		b, _ := json.Marshal(m.TargetAssignment)
		out = append(out, fmt.Sprintf("%s@%d %s", m.MemberID, m.MemberEpoch, b))
	}
	return out
}

// TestRebalanceHistory drives a real core group through the loop (two
// joins, a leave) and reads GET /v1/groups/{id}/history: each installed
// target with core's reason for it, the assignor and version, the
// assignment metrics and the tasks that changed process; the history
// keeps admin.history.targets entries, and each target is logged.
func TestRebalanceHistory(t *testing.T) {
	f := newABFixture(t, 2, nil, plugin.Config{})
	f.step(t, "join m1")
	h := f.history(t)
	first := h.Targets[0]
	if len(h.Targets) != 1 || first.Assignor != "sticky" || first.Version != "native" ||
		len(first.Reasons) != 1 || first.Reasons[0] != (experiment.Reason{Kind: "member-joined", Member: "m1"}) {
		t.Fatalf("first target: %+v", h)
	}
	if first.Metrics.Members != 1 || first.Metrics.Tasks != 4 || first.Metrics.Movement.New != 4 || len(first.Moves) != 4 ||
		first.Moves[0] != (experiment.Move{Task: "0_0", To: "p-m1"}) {
		t.Fatalf("first target's metrics or moves: %+v", first)
	}
	f.step(t, "join m2")
	h = f.history(t)
	second := h.Targets[1]
	if second.Reasons[0] != (experiment.Reason{Kind: "member-joined", Member: "m2"}) || second.Metrics.Movement.MovedProcess != 2 ||
		second.Metrics.Balance.ActivePerProcess.Spread != 0 || len(second.Moves) != 2 {
		t.Fatalf("second target: %+v", second)
	}
	for _, mv := range second.Moves {
		if mv.From != "p-m1" || mv.To != "p-m2" {
			t.Fatalf("second target moves %+v, want p-m1 -> p-m2", second.Moves)
		}
	}
	f.step(t, "leave m1")
	h = f.history(t)
	if h.Limit != 2 || len(h.Targets) != 2 || h.Targets[0].Epoch != second.Epoch {
		t.Fatalf("history keeps %d targets (limit %d), want the last 2: %+v", len(h.Targets), h.Limit, h.Targets)
	}
	last := h.Targets[1]
	if last.Reasons[0] != (experiment.Reason{Kind: "member-left", Member: "m1"}) || last.Metrics.Movement.MovedProcess != 0 ||
		last.Metrics.Movement.New != 2 || len(last.Moves) != 2 || last.Moves[0].From != "" || last.Moves[0].To != "p-m2" {
		t.Fatalf("target after m1 left: %+v", last)
	}
	f.wantLog(t, "new target assignment", "reasons=member-joined:m2", "reasons=member-left:m1", "assignor=sticky", "moved_process=2")
	if code := f.get(t, "/v1/groups/nope/history", "nope", &experiment.GroupHistory{}); code != 404 {
		t.Fatalf("history of an unknown group: %d, want 404", code)
	}
}

// abScript is the recorded run both sides of the comparison replay.
var abScript = []string{"join m1", "join m2", "join m3", "leave m1", "join m4"}

// TestShadowRunsDoNotChangePrimary replays one scripted run of a real
// core group without shadows and then with the native ha build and a
// hostile wasm module as shadows (a trap, an endless loop cut by the
// deadline, a memory bomb, garbage output): the targets installed at
// each step are byte-identical, the shadows' figures sit beside the
// primary's at /v1/ab, their failures are counted per assignor on
// /metrics, and the group never sees them.
func TestShadowRunsDoNotChangePrimary(t *testing.T) {
	run := func(f *abFixture) []string {
		var out []string
		for _, s := range abScript {
			out = append(out, s+": "+f.step(t, s))
		}
		return out
	}
	want := run(newABFixture(t, 0, nil, plugin.Config{}))
	pc := plugin.Config{Deadline: 150 * time.Millisecond, MemoryLimitPages: 256}
	for _, variant := range []string{"TRAP_ASSIGN", "LOOP", "MEMORY_BOMB", "GARBAGE"} {
		t.Run(variant, func(t *testing.T) {
			wasm := plugintest.CPluginPath(t, "testdata/plugins/c/hostile.c", "HOSTILE_"+variant)
			f := newABFixture(t, 0, []string{"ha", "hostile", "sticky"}, pc)
			if err := f.asg.Load(context.Background(), "hostile", wasm); err != nil {
				t.Fatal(err)
			}
			got := run(f)
			for i := range want {
				if got[i] != want[i] {
					t.Fatalf("with shadows the target differs at step %d:\n got %s\nwant %s", i, got[i], want[i])
				}
			}
			f.wantShadows(t, len(abScript))
		})
	}
}

// wantShadows checks /v1/ab and /metrics after runs targets of group "g":
// the primary sticky and the ha shadow measured side by side, the hostile
// shadow failing every run it was handed, the primary never listed as its
// own shadow, and the primary's plugin counters untouched by shadows.
func (f *abFixture) wantShadows(t *testing.T, runs int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var r experiment.ABReport
	for {
		// A fresh value per poll: encoding/json decodes into the pointers a
		// reused slice still holds, so an earlier poll's fields would show
		// through where this answer omits them.
		r = experiment.ABReport{}
		if code := f.get(t, "/v1/ab", "", &r); code != 200 {
			t.Fatalf("GET /v1/ab: %d", code)
		}
		var done int64
		for _, s := range r.Assignors {
			if s.Role == "shadow" {
				done += s.Runs + s.Dropped
			}
		}
		if done >= int64(2*runs) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(r.Groups) != 1 || r.Groups[0].Primary == nil || r.Groups[0].Primary.Assignor != "sticky" || len(r.Groups[0].Shadows) != 2 {
		t.Fatalf("/v1/ab groups: %+v", r.Groups)
	}
	ha, hostile := r.Groups[0].Shadows[0], r.Groups[0].Shadows[1]
	if ha.Assignor != "ha" || ha.Metrics == nil || ha.Error != "" || ha.Metrics.Tasks != 4 || ha.Metrics.Members != 3 {
		t.Fatalf("ha shadow: %+v", ha)
	}
	if hostile.Assignor != "hostile" || hostile.Metrics != nil || hostile.Error == "" || !strings.HasPrefix(hostile.Version, "wasm sha256:") {
		t.Fatalf("hostile shadow: %+v", hostile)
	}
	stats := map[string]int64{}
	for _, s := range r.Assignors {
		stats[s.Assignor+"/"+s.Role+"/runs"] = s.Runs
		stats[s.Assignor+"/"+s.Role+"/failures"] = s.Failures
		stats[s.Assignor+"/"+s.Role+"/dropped"] = s.Dropped
	}
	if stats["sticky/primary/runs"] != int64(runs) || stats["sticky/shadow/runs"] != 0 || stats["hostile/shadow/failures"] != stats["hostile/shadow/runs"] ||
		stats["hostile/shadow/runs"] < 1 || stats["ha/shadow/failures"] != 0 || stats["ha/shadow/runs"]+stats["ha/shadow/dropped"] != int64(runs) {
		t.Fatalf("per-assignor totals: %v", stats)
	}
	if info := f.pluginInfo(t, "hostile"); info.Runs != 0 || info.Failures != 0 {
		t.Fatalf("shadow runs counted as primary runs of the plugin: %+v", info)
	}
	var b strings.Builder
	if _, err := f.metrics.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf(`coordhost_ab_runs_total{assignor="sticky",role="primary"} %d`, runs),
		fmt.Sprintf(`coordhost_ab_failures_total{assignor="hostile",role="shadow"} %d`, stats["hostile/shadow/failures"]),
		`coordhost_ab_tasks_moved_total{assignor="ha",role="shadow"}`,
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(b.String(), `group="`) {
		t.Error("/metrics has per-group A/B series")
	}
}

// TestSplitGroupRunsCandidate: a group in the candidate arm of a split
// (here 100 %) runs the candidate assignor as its primary — core's
// describe and the history name it — and /v1/ab counts it in that arm,
// with "insufficient data" below 20 groups per arm.
func TestSplitGroupRunsCandidate(t *testing.T) {
	f := newABFixture(t, 0, nil, plugin.Config{},
		"--groups.defaults.streams.assignor.candidate.name=ha", "--groups.defaults.streams.assignor.candidate.percent=100")
	f.step(t, "join m1")
	if d := f.describe(t); d.Assignor != "ha" {
		t.Fatalf("group's assignor %q, want the candidate ha", d.Assignor)
	}
	if h := f.history(t); h.Targets[0].Assignor != "ha" {
		t.Fatalf("history: %+v", h.Targets)
	}
	var r experiment.ABReport
	if code := f.get(t, "/v1/ab", "", &r); code != 200 || r.Split == nil || r.Split.Status != "insufficient data" ||
		r.Split.Arms[1].Arm != "candidate" || r.Split.Arms[1].Groups != 1 || r.Split.Arms[0].Groups != 0 || r.Groups[0].Arm != "candidate" {
		t.Fatalf("/v1/ab split: %d %+v", code, r.Split)
	}
}
