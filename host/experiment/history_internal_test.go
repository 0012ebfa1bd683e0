package experiment

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/metrics"
	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/plugin"
)

var rewrite = flag.Bool("rewrite", false, "rewrite testdata/history-inputs.golden.json")

// historyRun is a fixed run of group at epoch: subs subtopologies of
// tasks tasks each (the first stateful), members members on processes
// processes, the first owners of them running every task round-robin
// (later members just joined).
func historyRun(group string, epoch int32, subs, tasks, members, processes, owners int) core.AssignorRun {
	in := core.AssignInput{Configs: core.AssignConfigs{NumStandbyReplicas: 1, AcceptableRecoveryLag: 100}}
	for s := 0; s < subs; s++ {
		in.Subtopologies = append(in.Subtopologies, core.AssignSubtopology{ID: fmt.Sprintf("sub-%c", 'a'+s), NumTasks: int32(tasks), Stateful: s == 0})
	}
	for m := 0; m < members; m++ {
		in.Members = append(in.Members, core.AssignMember{MemberID: fmt.Sprintf("%s-m%02d", group, m), ProcessID: fmt.Sprintf("%s-p%d", group, m%processes)})
	}
	i := 0
	for s := int32(0); s < int32(subs); s++ {
		for p := int32(0); p < int32(tasks); p++ {
			m := &in.Members[i%owners]
			t := core.TaskRef{Subtopology: s, Partition: p}
			m.Active = append(m.Active, t)
			if s == 0 {
				m.TaskOffsets = append(m.TaskOffsets, core.TaskOffset{Task: t, Offset: 1000})
				m.TaskEndOffsets = append(m.TaskEndOffsets, core.TaskOffset{Task: t, Offset: 1000})
			}
			i++
		}
	}
	return core.AssignorRun{Group: group, Epoch: epoch, Assignor: "sticky", Input: in}
}

// shifted is a target for req that puts task t on member (t+shift) mod
// members: every member active, some tasks moved, none standby.
func shifted(req *abi.AssignRequest, shift int) *abi.AssignResponse {
	resp := &abi.AssignResponse{Members: make([]abi.MemberAssignment, len(req.Members)), NextProbeMs: -1}
	ts := abi.NewTaskSpace(req.Subtopologies)
	for t := int32(0); t < ts.Total(); t++ {
		m := &resp.Members[(int(t)+shift)%len(req.Members)]
		m.Active = append(m.Active, t)
	}
	return resp
}

// install runs one target of run through the history as the host does:
// the events before it give its reasons, the primary's result is
// measured, core installs it at run's epoch and the batch commits.
func install(a *Runtime, run core.AssignorRun, shift int, before []core.Event) {
	a.Observe(before)
	reasons := a.Reasons(run.Group)
	req, _ := assign.ToABI(run)
	t := a.Primary(run, req, shifted(req, shift), time.Duration(1500+shift)*time.Microsecond)
	out := []core.Event{{Kind: core.EventTargetAssigned, Group: run.Group, Epoch: run.Epoch}}
	a.Installed(run.Group, t, reasons, out)
	a.Observe(out)
}

// historyScenario records a fixed history: four targets of "orders"
// (the history keeps the last three) with reasons of every shape, a
// probe, moved tasks, cold hand-overs and more moves than an entry
// lists; one target of "payments" placing new tasks; one computed target
// core discarded.
func historyScenario(a *Runtime) {
	joined := func(g, m string) core.Event { return core.Event{Kind: core.EventMemberJoined, Group: g, Member: m} }
	install(a, historyRun("orders", 1, 2, 8, 3, 3, 2), 1, []core.Event{joined("orders", "orders-m00"), joined("orders", "orders-m01")})
	install(a, historyRun("orders", 2, 2, 8, 4, 2, 3), 2, []core.Event{
		joined("orders", "orders-m03"),
		{Kind: core.EventMemberFenced, Group: "orders", Member: "orders-m02", Reason: core.ReasonSessionTimeout},
		{Kind: core.EventEpochBumped, Group: "orders", Reason: core.ReasonTopologyChanged},
	})
	probe := historyRun("orders", 3, 2, 8, 4, 2, 4)
	probe.Probe = true
	install(a, probe, 0, []core.Event{{Kind: core.EventProbe, Group: "orders"}, {Kind: core.EventWarmupPromoted, Group: "orders", Member: "orders-m01"}})
	install(a, historyRun("orders", 4, 3, 64, 6, 6, 5), 3, []core.Event{
		{Kind: core.EventMemberLeft, Group: "orders", Member: "orders-m04"},
		{Kind: core.EventGroupConverted, Group: "orders", Reason: core.ReasonOnlineToStreams},
	})
	payments := historyRun("payments", 9, 1, 4, 2, 2, 1)
	payments.Input.Members[0].Active = payments.Input.Members[0].Active[:2] // two new tasks
	install(a, payments, 1, nil)
	discarded := historyRun("payments", 10, 1, 4, 2, 1, 1)
	req, _ := assign.ToABI(discarded)
	a.Installed("payments", a.Primary(discarded, req, shifted(req, 0), time.Millisecond), nil,
		[]core.Event{{Kind: core.EventTargetAssigned, Group: "payments", Epoch: 10}})
	a.Observe([]core.Event{{Kind: core.EventAssignorResultDiscarded, Group: "payments"}})
}

// fixedClock starts at a fixed instant and moves on 1.25 s a reading.
func fixedClock() func() time.Time {
	t := time.Date(2026, 12, 3, 17, 0, 0, 123456789, time.UTC)
	return func() time.Time { t = t.Add(1250 * time.Millisecond); return t }
}

// TestHistoryServedJSON: GET /v1/groups/{id}/history serves a fixed
// history as the bytes in testdata/history-inputs.golden.json (encoded as
// the admin routes encode), whatever the history keeps in memory; without
// the assignor's inputs (kept only with admin.history.inputs) the bytes
// are those of testdata/history.golden.json, the fields served before
// them unchanged, and a history that does not keep inputs serves those.
func TestHistoryServedJSON(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	asg := assign.New(ctx, t.TempDir(), "sticky", plugin.Config{}, nil)
	a := New(ctx, &sync.WaitGroup{}, Config{Log: slog.New(slog.DiscardHandler), Assignors: asg, HistoryTargets: 3, HistoryInputs: true, Now: fixedClock()})
	historyScenario(a)
	plain := New(ctx, &sync.WaitGroup{}, Config{Log: slog.New(slog.DiscardHandler), Assignors: asg, HistoryTargets: 3, Now: fixedClock()})
	historyScenario(plain)
	var got, withoutInputs, plainGot bytes.Buffer
	inputs := 0
	for _, g := range []string{"orders", "payments", "unknown"} {
		h := a.History(g)
		for _, buf := range []*bytes.Buffer{&got, &withoutInputs} {
			enc := json.NewEncoder(buf)
			enc.SetIndent("", "  ")
			if err := enc.Encode(h); err != nil {
				t.Fatal(err)
			}
			for i := range h.Targets {
				if h.Targets[i].Inputs != nil {
					inputs++
				}
				h.Targets[i].Inputs = nil
			}
		}
	}
	if inputs == 0 {
		t.Fatal("no served target has the assignor's inputs")
	}
	for _, g := range []string{"orders", "payments", "unknown"} {
		enc := json.NewEncoder(&plainGot)
		enc.SetIndent("", "  ")
		if err := enc.Encode(plain.History(g)); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(plainGot.Bytes(), withoutInputs.Bytes()) {
		t.Fatalf("a history without admin.history.inputs serves:\n%s\nwant:\n%s", plainGot.Bytes(), withoutInputs.Bytes())
	}
	golden := filepath.Join("testdata", "history-inputs.golden.json")
	if *rewrite {
		if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for file, got := range map[string][]byte{golden: got.Bytes(), filepath.Join("testdata", "history.golden.json"): withoutInputs.Bytes()} {
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("served history differs from %s:\n%s", file, got)
		}
	}
}

// BenchmarkHistoryBytes reports the live heap the rebalance history holds
// per recorded rebalance: 1,000 groups of 10 members on 10 processes, one
// topic of 10 partitions in two subtopologies (one stateful), each group
// through 20 targets (the default history length) that move tasks
// between members. Only the history is measured, not the A/B results.
// Compare B/rebalance between commits (docs/BENCHMARKS.md).
func BenchmarkHistoryBytes(b *testing.B) {
	const groups, targets = 1000, DefaultHistoryTargets
	type made struct {
		run  core.AssignorRun
		req  *abi.AssignRequest
		resp *abi.AssignResponse
	}
	inputs := make([]made, 0, groups*targets) // built before the first reading: not counted
	for g := 0; g < groups; g++ {
		for k := 0; k < targets; k++ {
			run := historyRun(fmt.Sprintf("app-%d", g), int32(k+1), 2, 5, 10, 10, 10)
			req, _ := assign.ToABI(run)
			inputs = append(inputs, made{run, req, shifted(req, k%3)})
		}
	}
	reasons := []core.Event{{Kind: core.EventMemberJoined, Member: "m"}, {Kind: core.EventEpochBumped, Reason: core.ReasonTopologyChanged}}
	var perRebalance float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h := newTargetHistory(targets, slog.New(slog.DiscardHandler))
		before := liveHeap()
		for _, in := range inputs {
			for j := range reasons {
				reasons[j].Group = in.run.Group
			}
			h.observe(reasons)
			rep, err := metrics.Measure(in.req, in.resp, metrics.Options{ComputeTime: time.Millisecond})
			if err != nil {
				b.Fatal(err)
			}
			out := []core.Event{{Kind: core.EventTargetAssigned, Group: in.run.Group, Epoch: in.run.Epoch}}
			h.computed(in.run.Group, newTarget(in.run, in.req, in.resp, "native", rep, time.Unix(1764780000, 0)), h.take(in.run.Group), out)
			h.observe(out)
		}
		perRebalance = float64(liveHeap()-before) / float64(len(inputs))
		runtime.KeepAlive(h)
	}
	b.ReportMetric(perRebalance, "B/rebalance")
}

// liveHeap is the live heap after a collection.
func liveHeap() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
