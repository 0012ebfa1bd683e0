package host

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"testing"
	"time"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/plugin/plugintest"
)

// benchRun is a fixed assignor run: 3 subtopologies of 32 tasks (two
// stateful), 12 members on 6 processes, of which the first 10 own tasks
// round-robin (the last two just joined) and report offsets for them.
func benchRun() core.AssignorRun {
	in := core.AssignInput{Configs: core.AssignConfigs{NumStandbyReplicas: 1, NumWarmupReplicas: 2, AcceptableRecoveryLag: 100}}
	for s := 0; s < 3; s++ {
		in.Subtopologies = append(in.Subtopologies, core.AssignSubtopology{ID: fmt.Sprint(s), NumTasks: 32, Stateful: s < 2})
	}
	for m := 0; m < 12; m++ {
		in.Members = append(in.Members, core.AssignMember{MemberID: fmt.Sprintf("m%02d", m), ProcessID: fmt.Sprintf("p%d", m/2)})
	}
	i := 0
	for s := int32(0); s < 3; s++ {
		for p := int32(0); p < 32; p++ {
			m := &in.Members[i%10]
			t := core.TaskRef{Subtopology: s, Partition: p}
			m.Active = append(m.Active, t)
			m.TaskOffsets = append(m.TaskOffsets, core.TaskOffset{Task: t, Offset: 1000})
			m.TaskEndOffsets = append(m.TaskEndOffsets, core.TaskOffset{Task: t, Offset: 1000})
			i++
		}
	}
	return core.AssignorRun{Group: "bench", Epoch: 7, Assignor: "sticky", Input: in}
}

// BenchmarkPrimaryWithShadow measures the primary's assignment latency
// (the native sticky build, measured with abi/metrics as in production)
// at GOMAXPROCS=2 with no shadow and with a CPU-bound wasm shadow (a
// module that spins until its 50 ms deadline) handed every run; compare
// shadow=off and shadow=on with benchstat (docs/BENCHMARKS.md).
func BenchmarkPrimaryWithShadow(b *testing.B) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	spin := plugintest.CPluginPath(b, "testdata/plugins/c/hostile.c", "HOSTILE_LOOP")
	ctx := context.Background()
	asg := NewAssignors(ctx, b.TempDir(), "sticky", plugin.Config{Deadline: 50 * time.Millisecond}, nil)
	defer asg.Close(ctx)
	if err := asg.Load(ctx, "spin", spin); err != nil {
		b.Fatal(err)
	}
	run := benchRun()
	for _, shadows := range [][]string{nil, {"spin"}} {
		name := "shadow=off"
		if shadows != nil {
			name = "shadow=on"
		}
		b.Run(name, func(b *testing.B) {
			l := &Loop{d: LoopDeps{Assignors: asg}, log: slog.New(slog.DiscardHandler)}
			l.ctx, l.cancel = context.WithCancel(ctx)
			l.ab = newAB(l)
			defer func() { l.cancel(); l.wg.Wait() }()
			l.ab.shadow(run, shadows, time.Minute) // the shadow is busy before the clock starts
			time.Sleep(10 * time.Millisecond)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				l.ab.shadow(run, shadows, time.Minute)
				if _, rec, err := l.runAssignor(run, time.Minute); err != nil || rec == nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			for _, s := range l.ab.report().Assignors {
				if s.Assignor == "spin" && (s.Runs != s.Failures || s.Runs+s.Dropped < int64(b.N-shadowQueueLen)) {
					b.Fatalf("the shadow was not handed every run, or did not spin until its deadline: %+v", s)
				}
			}
		})
	}
}
