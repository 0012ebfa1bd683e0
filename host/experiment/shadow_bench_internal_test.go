package experiment

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/plugin/plugintest"
	"github.com/coordhost/coordhost/host/shadowproc"
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

// newShadowFixture is a Runtime running shadows with asg; stop ends its
// goroutines (and the shadow process) and waits for them, as the loop's
// stop does.
func newShadowFixture(asg *assign.Registry, log *slog.Logger) (a *Runtime, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	wg := &sync.WaitGroup{}
	a = New(ctx, wg, Config{Log: log, Assignors: asg})
	return a, func() { cancel(); wg.Wait() }
}

// runPrimary computes run's target with the registry as the host's
// assignor workers do (the plugin fallback included) and measures it: the
// primary's run beside the shadows.
func runPrimary(a *Runtime, run core.AssignorRun, timeout time.Duration) (core.AssignResult, *Target, error) {
	req, ts := assign.ToABI(run)
	ctx, cancel := context.WithTimeout(a.ctx, timeout)
	defer cancel()
	start := time.Now()
	resp, _, err := a.asg.RunWithFallback(ctx, run.Assignor, req)
	took := time.Since(start)
	if err == nil && resp == nil {
		err = errors.New("assignor returned no response")
	}
	var res core.AssignResult
	if err == nil {
		res, err = assign.FromABI(ts, resp, len(run.Input.Members))
	}
	if err != nil {
		a.PrimaryFailed(run, err)
		return core.AssignResult{}, nil, err
	}
	return res, a.Primary(run, req, resp, took), nil
}

// BenchmarkPrimaryWithShadow measures the primary's assignment latency
// (the native sticky build, measured with abi/metrics as in production)
// at GOMAXPROCS=2 with a CPU-bound wasm shadow (a module that spins until
// its 20 ms deadline) handed every run, against the same without it: the
// shadow in the shadow process (shadow=process, Linux only), and for
// comparison in the same run inside coordhost's process (the non-Linux
// path, shadow=inprocess). On a shared machine the load moves more than
// the effect, so the two are interleaved in blocks of 20 runs: "off"
// blocks hold the only shadow slot (no shadow computes; the block waits
// for a running one to end first), "on" blocks start once the shadow
// spins. It reports the mean latency of each and their ratio (on/off);
// compare runs with benchstat (docs/BENCHMARKS.md).
func BenchmarkPrimaryWithShadow(b *testing.B) {
	for _, where := range []string{"process", "inprocess"} {
		b.Run("shadow="+where, func(b *testing.B) {
			if where == "process" && !shadowproc.Supported {
				b.Skip("the shadow process runs on Linux only")
			}
			benchPrimaryWithShadow(b, where == "inprocess")
		})
	}
}

func benchPrimaryWithShadow(b *testing.B, inProcess bool) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	spin := plugintest.CPluginPath(b, "testdata/plugins/c/hostile.c", "HOSTILE_LOOP")
	ctx := context.Background()
	asg := assign.New(ctx, b.TempDir(), "sticky", plugin.Config{Deadline: 20 * time.Millisecond}, nil)
	defer asg.Close(ctx)
	if err := asg.Load(ctx, "spin", spin); err != nil {
		b.Fatal(err)
	}
	run, shadows := benchRun(), []string{"spin"}
	a, stop := newShadowFixture(asg, slog.New(slog.DiscardHandler))
	defer stop()
	if inProcess {
		a.procOnce.Do(func() {}) // no shadow process: plugin shadows run here
	}
	a.Shadow(run, shadows, time.Minute) // start the shadow process and load the module before timing
	for len(a.totals()) == 0 {
		time.Sleep(time.Millisecond)
	}
	var took [2]time.Duration // off, on
	var runs [2]int
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; {
		for on := 0; on < 2; on++ {
			b.StopTimer()
			if on == 0 {
				a.slots <- struct{}{} // no shadow starts; a running one ends first
			} else {
				<-a.slots
				a.Shadow(run, shadows, time.Minute)
				for len(a.slots) == 0 { // until the shadow spins
					runtime.Gosched()
				}
			}
			b.StartTimer()
			for k := 0; k < 20 && i < b.N; k, i = k+1, i+1 {
				a.Shadow(run, shadows, time.Minute)
				start := time.Now()
				if _, rec, err := runPrimary(a, run, time.Minute); err != nil || rec == nil {
					b.Fatal(err)
				}
				took[on] += time.Since(start)
				runs[on]++
			}
		}
	}
	b.StopTimer()
	if runs[0] == 0 || runs[1] == 0 {
		return
	}
	off, on := float64(took[0])/float64(runs[0]), float64(took[1])/float64(runs[1])
	b.ReportMetric(off, "ns/run-off")
	b.ReportMetric(on, "ns/run-on")
	b.ReportMetric(on/off, "on/off")
	for _, s := range a.Report().Assignors {
		if s.Assignor == "spin" && (s.Runs != s.Failures || s.Runs == 0 || s.Crashes != 0) {
			b.Fatalf("the shadow did not spin until its deadline: %+v", s)
		}
	}
	if p := a.shadowProcess(); inProcess != (p == nil) || !inProcess && p.PID() == 0 {
		b.Fatalf("the shadow ran in the wrong place (in process: %v)", inProcess)
	}
}
