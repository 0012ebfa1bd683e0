package experiment

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/plugin/plugintest"
	"github.com/coordhost/coordhost/host/shadowproc"
)

// TestShadowQueueDropsWhenBehind: a shadow that is behind never blocks the
// caller: runs beyond its queue (and the one it computes) are dropped and
// counted; a native shadow that panics or answers garbage is a counted
// failure, nothing else.
func TestShadowQueueDropsWhenBehind(t *testing.T) {
	release, started := make(chan struct{}), make(chan struct{}, 1)
	asg := assign.New(context.Background(), t.TempDir(), "sticky", plugin.Config{}, nil)
	if err := asg.AddNative(map[string]assign.Native{
		"slow": func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
			select {
			case started <- struct{}{}:
			default:
			}
			<-release
			return assign.Builtins["sticky"].Native(req)
		},
		"panics": func(*abi.AssignRequest) (*abi.AssignResponse, error) { panic("boom") },
		"garbage": func(*abi.AssignRequest) (*abi.AssignResponse, error) {
			return &abi.AssignResponse{}, nil // no member entries
		},
	}); err != nil {
		t.Fatal(err)
	}
	a, stop := newShadowFixture(asg, slog.New(slog.DiscardHandler))
	defer stop()
	run := benchRun()
	const sent = 30
	a.Shadow(run, []string{"slow"}, time.Minute)
	<-started // the shadow computes the first run; the queue is empty
	done := make(chan struct{})
	go func() {
		for i := 1; i < sent; i++ {
			a.Shadow(run, []string{"slow", "sticky"}, time.Minute) // sticky is the primary: skipped
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("handing runs to a shadow that is behind blocked")
	}
	close(release)
	a.Shadow(run, []string{"panics", "garbage"}, time.Minute)
	want := map[string]assignorStats{ // runs, failures, dropped
		"slow":    {Runs: shadowQueueLen + 1, Dropped: sent - shadowQueueLen - 1},
		"panics":  {Runs: 1, Failures: 1},
		"garbage": {Runs: 1, Failures: 1},
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := map[string]assignorStats{}
		for _, s := range a.totals() {
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
	asg := assign.New(ctx, t.TempDir(), "sticky", plugin.Config{Deadline: 10 * time.Second}, nil)
	defer asg.Close(ctx)
	if err := asg.Load(ctx, "loop", plugintest.CPluginPath(t, "testdata/plugins/c/hostile.c", "HOSTILE_LOOP")); err != nil {
		t.Fatal(err)
	}
	logs := &bytes.Buffer{}
	var logMu sync.Mutex
	a, stop := newShadowFixture(asg, slog.New(slog.NewTextHandler(lockedWriter{&logMu, logs}, nil)))
	defer stop()
	run := benchRun()
	want, _, err := runPrimary(a, run, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	a.Shadow(run, []string{"loop"}, time.Minute)
	waitFor(t, func() bool { return a.shadowProcess().PID() != 0 })
	pid := a.shadowProcess().PID()
	time.Sleep(300 * time.Millisecond) // the module loads and spins
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 20; i++ {
		got, _, err := runPrimary(a, run, time.Minute)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("primary run %d beside the crash: %v, result differs: %v", i, err, !reflect.DeepEqual(got, want))
		}
	}
	waitFor(t, func() bool {
		for _, s := range a.totals() {
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
	a.Shadow(run, []string{"loop"}, time.Minute)
	waitFor(t, func() bool { p := a.shadowProcess().PID(); return p != 0 && p != pid })
	pid = a.shadowProcess().PID()
	stop() // the loop stops: the shadow process is killed and reaped
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
