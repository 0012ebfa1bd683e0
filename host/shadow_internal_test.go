package host

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/plugin/plugintest"
	"github.com/coordhost/coordhost/host/shadowproc"
)

// TestShadowsFromGroupConfig: streams.assignor.shadow and the split keys
// are read per group-id glob from the config file, as docs/AB-TESTING.md
// writes them (the shadows as a YAML list); no shadows by default.
func TestShadowsFromGroupConfig(t *testing.T) {
	l := loopWithGroupsYAML(t, "groups:\n  overrides:\n    - match: \"orders-*\"\n      streams.assignor.shadow: [ha, candidate]\n"+
		"      streams.assignor.candidate.name: ha\n      streams.assignor.candidate.percent: 25\n")
	if got := l.groupConfig("orders-1").StreamsAssignorShadow; !reflect.DeepEqual(got, []string{"ha", "candidate"}) {
		t.Errorf("orders-1: %q, want [ha candidate]", got)
	}
	if g := l.groupConfig("orders-1"); g.StreamsAssignorCandidate != "ha" || g.StreamsAssignorCandidatePercent != 25 {
		t.Errorf("orders-1 split: %q at %d %%, want ha at 25 %%", g.StreamsAssignorCandidate, g.StreamsAssignorCandidatePercent)
	}
	if got := l.groupConfig("payments").StreamsAssignorShadow; len(got) != 0 {
		t.Errorf("payments: %q, want none", got)
	}
	if _, err := config.ParseDynamic("streams.assignor.shadow", "ha"); err == nil {
		t.Error("streams.assignor.shadow accepted at run time; it is config-file only")
	}
}

// loopWithGroupsYAML is a bare Loop whose per-group settings come from a
// config file holding yaml.
func loopWithGroupsYAML(t *testing.T, yaml string) *Loop {
	t.Helper()
	file := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load([]string{"--config", file}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return &Loop{d: LoopDeps{Groups: cfg.Groups}, dyn: map[string]map[string]string{}}
}

// TestShadowQueueDropsWhenBehind: a shadow that is behind never blocks the
// caller: runs beyond its queue (and the one it computes) are dropped and
// counted; a native shadow that panics or answers garbage is a counted
// failure, nothing else.
func TestShadowQueueDropsWhenBehind(t *testing.T) {
	release, started := make(chan struct{}), make(chan struct{}, 1)
	asg := NewAssignors(context.Background(), t.TempDir(), "sticky", plugin.Config{}, nil)
	if err := asg.AddNative(map[string]NativeAssignor{
		"slow": func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
			select {
			case started <- struct{}{}:
			default:
			}
			<-release
			return BuiltinAssignors["sticky"].Native(req)
		},
		"panics": func(*abi.AssignRequest) (*abi.AssignResponse, error) { panic("boom") },
		"garbage": func(*abi.AssignRequest) (*abi.AssignResponse, error) {
			return &abi.AssignResponse{}, nil // no member entries
		},
	}); err != nil {
		t.Fatal(err)
	}
	l := &Loop{d: LoopDeps{Assignors: asg}, log: slog.New(slog.DiscardHandler)}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.ab = newAB(l)
	defer func() { l.cancel(); l.wg.Wait() }()
	run := benchRun()
	const sent = 30
	l.ab.shadow(run, []string{"slow"}, time.Minute)
	<-started // the shadow computes the first run; the queue is empty
	done := make(chan struct{})
	go func() {
		for i := 1; i < sent; i++ {
			l.ab.shadow(run, []string{"slow", "sticky"}, time.Minute) // sticky is the primary: skipped
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("handing runs to a shadow that is behind blocked")
	}
	close(release)
	l.ab.shadow(run, []string{"panics", "garbage"}, time.Minute)
	want := map[string]assignorStats{ // runs, failures, dropped
		"slow":    {Runs: shadowQueueLen + 1, Dropped: sent - shadowQueueLen - 1},
		"panics":  {Runs: 1, Failures: 1},
		"garbage": {Runs: 1, Failures: 1},
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := map[string]assignorStats{}
		for _, s := range l.ab.totals() {
			got[s.Assignor] = assignorStats{Runs: s.Runs, Failures: s.Failures, Dropped: s.Dropped}
		}
		ok := len(got) == len(want)
		for n, w := range want {
			ok = ok && got[n] == w
		}
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("shadow totals %+v, want %+v", got, want)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestShadowProcessCrashLeavesPrimary: the shadow process killed while a
// wasm shadow spins in it (a module cannot crash it by design, so the
// test kills it) fails that shadow run, counted as a crash and logged;
// the primary's runs meanwhile return the same result without error,
// and the next shadow run starts another process, which the loop's stop
// kills.
func TestShadowProcessCrashLeavesPrimary(t *testing.T) {
	if !shadowproc.Supported {
		t.Skip("the shadow process runs on Linux only")
	}
	ctx := context.Background()
	asg := NewAssignors(ctx, t.TempDir(), "sticky", plugin.Config{Deadline: 10 * time.Second}, nil)
	defer asg.Close(ctx)
	if err := asg.Load(ctx, "loop", plugintest.CPluginPath(t, "testdata/plugins/c/hostile.c", "HOSTILE_LOOP")); err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	var logMu sync.Mutex
	l := &Loop{d: LoopDeps{Assignors: asg}, log: slog.New(slog.NewTextHandler(lockedWriter{&logMu, logs}, nil))}
	l.ctx, l.cancel = context.WithCancel(ctx)
	l.ab = newAB(l)
	defer func() { l.cancel(); l.wg.Wait() }()
	run := benchRun()
	want, _, err := l.runAssignor(run, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	l.ab.shadow(run, []string{"loop"}, time.Minute)
	waitFor(t, func() bool { return l.ab.shadowProcess().PID() != 0 })
	pid := l.ab.shadowProcess().PID()
	time.Sleep(300 * time.Millisecond) // the module loads and spins
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		got, _, err := l.runAssignor(run, time.Minute)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("primary run %d beside the crash: %v, result differs: %v", i, err, !reflect.DeepEqual(got, want))
		}
	}
	waitFor(t, func() bool {
		for _, s := range l.ab.totals() {
			if s.Assignor == "loop" {
				return s.Runs == 1 && s.Failures == 1 && s.Crashes == 1
			}
		}
		return false
	})
	logMu.Lock()
	logged := strings.Contains(logs.String(), "shadow process killed")
	logMu.Unlock()
	if !logged {
		t.Error("the crash was not logged")
	}
	l.ab.shadow(run, []string{"loop"}, time.Minute)
	waitFor(t, func() bool { p := l.ab.shadowProcess().PID(); return p != 0 && p != pid })
	pid = l.ab.shadowProcess().PID()
	l.cancel() // the loop stops: the shadow process is killed and reaped
	l.wg.Wait()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the shadow process %d outlived the loop: %v", pid, err)
	}
}

// waitFor polls cond for up to 10 seconds.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
	}
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (lw lockedWriter) Write(b []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return lw.w.Write(b)
}
