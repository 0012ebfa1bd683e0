package plugin_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/abitest"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/plugin/plugintest"
	"github.com/coordhost/coordhost/internal/testtool"
)

const hostileSrc = "testdata/plugins/c/hostile.c"

func logger() (*slog.Logger, *testtool.LogBuffer) {
	buf := &testtool.LogBuffer{}
	return slog.New(slog.NewTextHandler(buf, nil)), buf
}

// roundRobin is the fallback assignor of these tests.
func roundRobin(req *abi.AssignRequest) (*abi.AssignResponse, error) {
	resp := &abi.AssignResponse{Members: make([]abi.MemberAssignment, len(req.Members)), NextProbeMs: -1}
	for t := int32(0); t < req.NumTasks(); t++ {
		m := &resp.Members[int(t)%len(req.Members)]
		m.Active = append(m.Active, t)
	}
	return resp, nil
}

func smallReq() *abi.AssignRequest {
	return abitest.Generate(abitest.Shape{Members: 3, Processes: 2, Subtopologies: 2, Partitions: 4, Seed: 42})
}

func TestCAssignorPassesConformanceKit(t *testing.T) {
	wasm := plugintest.CPlugin(t, "testdata/plugins/c/assignor.c")
	p, err := plugin.Load(context.Background(), wasm, plugin.Config{Name: "c-assignor"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	results := abitest.Run(func(req *abi.AssignRequest) (*abi.AssignResponse, error) {
		return p.Assign(context.Background(), req)
	}, abitest.Cases(testing.Short()))
	for _, r := range results {
		if r.Err != nil {
			t.Errorf("%s: %v", r.Case, r.Err)
		} else {
			t.Logf("%s: %v", r.Case, r.Figures)
		}
	}
	if m := p.Metrics(); m.Errors[plugin.KindTrap] != 0 || m.InstancesCreated > 2 {
		t.Errorf("metrics %+v", m)
	}
}

// TestHostileFixtures loads each hostile module through host/plugin and
// checks containment: a typed error of the right kind, the error metric for
// that kind, the instance discarded (the next call runs on a fresh one), a
// log line, and the fallback assignor's result returned.
func TestHostileFixtures(t *testing.T) {
	cases := []struct {
		variant string
		kind    plugin.Kind
		cfg     plugin.Config
		inErr   string
	}{
		{"TRAP_INIT", plugin.KindInit, plugin.Config{}, "unreachable"},
		{"TRAP_ASSIGN", plugin.KindTrap, plugin.Config{}, "unreachable"},
		{"LOOP", plugin.KindDeadline, plugin.Config{Deadline: 150 * time.Millisecond}, "deadline"},
		{"MEMORY_BOMB", plugin.KindMemory, plugin.Config{MemoryLimitPages: 256}, "16 MiB"},
		{"GARBAGE", plugin.KindBadOutput, plugin.Config{}, "decode"},
		{"UNKNOWN_MEMBER", plugin.KindInvalidAssignment, plugin.Config{}, "4 member entries for 3 members"},
		{"UNKNOWN_TASK", plugin.KindInvalidAssignment, plugin.Config{}, "unknown active task 7"},
		{"TASK_TWICE", plugin.KindInvalidAssignment, plugin.Config{}, "task 0 is active on both"},
	}
	for _, c := range cases {
		t.Run(c.variant, func(t *testing.T) {
			wasm := plugintest.CPlugin(t, hostileSrc, "HOSTILE_"+c.variant)
			log, logs := logger()
			cfg := c.cfg
			cfg.Name, cfg.Logger = strings.ToLower(c.variant), log
			p, err := plugin.Load(context.Background(), wasm, cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(context.Background())
			req := smallReq()
			want, _ := roundRobin(req)
			for call := 1; call <= 2; call++ {
				out, err := p.AssignWithFallback(context.Background(), req, roundRobin)
				if err != nil {
					t.Fatalf("call %d: fallback failed: %v", call, err)
				}
				if !out.UsedFallback || fmt.Sprint(out.Response) != fmt.Sprint(want) {
					t.Fatalf("call %d: fallback result not returned: %+v", call, out)
				}
				var pe *plugin.Error
				if !errors.As(out.PluginErr, &pe) || pe.Kind != c.kind || !strings.Contains(pe.Error(), c.inErr) {
					t.Fatalf("call %d: plugin error %v, want kind %s containing %q", call, out.PluginErr, c.kind, c.inErr)
				}
				m := p.Metrics()
				if m.Errors[c.kind] != uint64(call) || m.Fallbacks != uint64(call) || m.Calls != uint64(call) {
					t.Fatalf("call %d: metrics %+v", call, m)
				}
				if c.kind == plugin.KindInit {
					if m.InstancesCreated != 0 {
						t.Fatalf("an instance whose _initialize trapped was kept: %+v", m)
					}
				} else if m.InstancesCreated != uint64(call) || m.InstancesDiscarded != uint64(call) {
					t.Fatalf("call %d: instance not discarded and replaced: %+v", call, m)
				}
			}
			text := logs.String()
			for _, w := range []string{"plugin call failed; instance discarded", "kind=" + string(c.kind),
				"plugin assignor failed; the fallback assignor answers", "plugin=" + cfg.Name} {
				if !strings.Contains(text, w) {
					t.Errorf("log lacks %q:\n%s", w, text)
				}
			}
		})
	}
}

func TestWrongABIVersionRefusedBeforeRunning(t *testing.T) {
	bad := plugintest.CPlugin(t, hostileSrc, "HOSTILE_WRONG_VERSION")
	_, err := plugin.Load(context.Background(), bad, plugin.Config{Name: "v2"})
	if plugin.KindOf(err) != plugin.KindABIVersion || !strings.Contains(err.Error(), "plugin speaks ABI v2; this host serves ABI v1") {
		t.Fatalf("got %v", err)
	}
	// A run-time reload to it is refused; the old version keeps serving.
	log, logs := logger()
	p, err := plugin.Load(context.Background(), plugintest.CPlugin(t, hostileSrc), plugin.Config{Name: "ok", Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	if err := p.Reload(context.Background(), bad); plugin.KindOf(err) != plugin.KindABIVersion {
		t.Fatalf("reload: %v", err)
	}
	if m := p.Metrics(); m.Errors[plugin.KindABIVersion] != 1 || m.Reloads != 0 {
		t.Fatalf("metrics %+v", m)
	}
	if !strings.Contains(logs.String(), "plugin reload refused") {
		t.Fatalf("log: %s", logs.String())
	}
	if _, err := p.Assign(context.Background(), smallReq()); err != nil {
		t.Fatalf("old version stopped serving: %v", err)
	}
	if _, err := plugin.Load(context.Background(), []byte("\x00asm\x01\x00\x00\x00"), plugin.Config{}); plugin.KindOf(err) != plugin.KindABIVersion {
		t.Fatalf("empty module: %v", err)
	}
	if _, err := plugin.Load(context.Background(), []byte("not wasm"), plugin.Config{}); plugin.KindOf(err) != plugin.KindLoad {
		t.Fatalf("garbage: %v", err)
	}
}

// TestSandboxGrantsNothing: the guest opens no file, sees wazero's fixed
// fake clock, and draws the same "random" bytes in every instance.
func TestSandboxGrantsNothing(t *testing.T) {
	p, err := plugin.Load(context.Background(), plugintest.CPlugin(t, hostileSrc, "HOSTILE_SANDBOX"), plugin.Config{Name: "sandbox"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	var reports []string
	for i := 0; i < 2; i++ {
		_, err := p.Assign(context.Background(), smallReq())
		var pe *plugin.Error
		if !errors.As(err, &pe) || pe.Status != abi.StatusAssignError {
			t.Fatalf("got %v", err)
		}
		reports = append(reports, pe.Err.Error())
	}
	var files int
	var clock int64
	var rnd string
	if _, err := fmt.Sscanf(reports[0], "files=%d clock=%d rand=%s", &files, &clock, &rnd); err != nil {
		t.Fatalf("report %q: %v", reports[0], err)
	}
	if files != 0 {
		t.Errorf("guest opened %d files", files)
	}
	if now := time.Now().Unix(); clock > now-86400 && clock < now+86400 {
		t.Errorf("guest saw the real wall clock: %d", clock)
	}
	if reports[0] != reports[1] {
		t.Errorf("two fresh instances saw different clocks or random bytes: %q vs %q", reports[0], reports[1])
	}
}

func TestPoolBoundsInstances(t *testing.T) {
	p, err := plugin.Load(context.Background(), plugintest.CPlugin(t, "testdata/plugins/c/assignor.c"), plugin.Config{PoolSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	req := smallReq()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 8; i++ {
				if _, err := p.Assign(context.Background(), req); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if m := p.Metrics(); m.Calls != 64 || m.InstancesCreated > 2 || m.InstancesCreated == 0 || m.LatencyCount != 64 {
		t.Fatalf("metrics %+v", m)
	}
}

func TestCallerContextCancelsWaitingCall(t *testing.T) {
	p, err := plugin.Load(context.Background(), plugintest.CPlugin(t, hostileSrc, "HOSTILE_LOOP"),
		plugin.Config{PoolSize: 1, Deadline: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if _, err := p.Assign(ctx, smallReq()); plugin.KindOf(err) != plugin.KindDeadline {
		t.Fatalf("got %v", err)
	}
}

// TestGoGuestMemoryBomb: a Go guest that allocates without bound dies of
// the Go runtime's out-of-memory (a trap) at the memory limit; the host
// reports it as a memory-limit failure and discards the instance.
func TestGoGuestMemoryBomb(t *testing.T) {
	p, err := plugin.Load(context.Background(), plugintest.GoPlugin(t, "testdata/plugins/gobomb"),
		plugin.Config{Name: "gobomb", MemoryLimitPages: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	out, err := p.AssignWithFallback(context.Background(), smallReq(), roundRobin)
	if err != nil || !out.UsedFallback || plugin.KindOf(out.PluginErr) != plugin.KindMemory {
		t.Fatalf("got %+v, %v", out, err)
	}
	if m := p.Metrics(); m.Errors[plugin.KindMemory] != 1 || m.InstancesDiscarded != 1 {
		t.Fatalf("metrics %+v", m)
	}
}

// TestGoGuestPanicBecomesStatus: a Go guest built with abi/guest whose
// handler panics answers with the PANIC status and the panic text; the host
// still discards the instance.
func TestGoGuestPanicBecomesStatus(t *testing.T) {
	p, err := plugin.Load(context.Background(), plugintest.GoPlugin(t, "testdata/plugins/gopanic"), plugin.Config{Name: "gopanic"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	_, err = p.Assign(context.Background(), smallReq())
	var pe *plugin.Error
	if !errors.As(err, &pe) || pe.Kind != plugin.KindStatus || pe.Status != abi.StatusPanic ||
		!strings.Contains(pe.Error(), "deliberate panic with app-42") {
		t.Fatalf("got %v", err)
	}
	if m := p.Metrics(); m.InstancesDiscarded != 1 || m.Errors[plugin.KindStatus] != 1 {
		t.Fatalf("metrics %+v", m)
	}
}

// TestCompilationCacheDir: compiled code is written to the cache directory,
// where a later process (another Load with the same directory) finds it.
func TestCompilationCacheDir(t *testing.T) {
	dir := t.TempDir()
	wasm := plugintest.CPlugin(t, "testdata/plugins/c/assignor.c")
	p, err := plugin.Load(context.Background(), wasm, plugin.Config{CacheDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	var files int
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files++
		}
		return nil
	})
	if files == 0 {
		t.Fatal("nothing was written to the compilation cache directory")
	}
	if _, err := p.Assign(context.Background(), smallReq()); err != nil {
		t.Fatal(err)
	}
}

// TestProbe: a module exporting coordhost_probe answers a ProbeRequest;
// one without it is refused with KindUnsupported.
func TestProbe(t *testing.T) {
	ctx := context.Background()
	p, err := plugin.Load(ctx, plugintest.CPlugin(t, hostileSrc, "HOSTILE_PROBE"), plugin.Config{Name: "probe"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	req := &abi.ProbeRequest{NowMs: 1000, Group: *smallReq(), Target: make([]abi.MemberAssignment, 3)}
	resp, err := p.Probe(ctx, req)
	if err != nil || !resp.Rebalance || resp.NextProbeMs != 5000 {
		t.Fatalf("got %+v, %v", resp, err)
	}
	if k, err := p.Kinds(ctx); err != nil || k != abi.KindAssign|abi.KindProbe {
		t.Fatalf("kinds %d, %v", k, err)
	}
	q, err := plugin.Load(ctx, plugintest.CPlugin(t, hostileSrc), plugin.Config{Name: "no-probe"})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close(ctx)
	if _, err := q.Probe(ctx, req); plugin.KindOf(err) != plugin.KindUnsupported {
		t.Fatalf("got %v", err)
	}
}

// TestRecycleLargeInstances: an instance whose linear memory passed the
// recycling size after a successful call is retired, not reused.
func TestRecycleLargeInstances(t *testing.T) {
	p, err := plugin.Load(context.Background(), plugintest.CPlugin(t, "testdata/plugins/c/assignor.c"),
		plugin.Config{RecycleAboveBytes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	for i := 0; i < 3; i++ {
		if _, err := p.Assign(context.Background(), smallReq()); err != nil {
			t.Fatal(err)
		}
	}
	if m := p.Metrics(); m.InstancesCreated != 3 || m.InstancesRecycled != 3 || m.InstancesDiscarded != 0 || len(m.Errors) != 0 {
		t.Fatalf("metrics %+v", m)
	}
}

// TestPartitionAssignorOnlyModule: a module whose only operation is
// coordhost_assign_partitions loads, reports that kind, and its status
// reaches the caller; the task operations answer KindUnsupported.
func TestPartitionAssignorOnlyModule(t *testing.T) {
	ctx := context.Background()
	p, err := plugin.Load(ctx, plugintest.CPlugin(t, "testdata/plugins/c/partitions_only.c"), plugin.Config{Name: "parts"})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(ctx)
	if k, err := p.Kinds(ctx); err != nil || k != abi.KindAssignPartitions {
		t.Fatalf("kinds %d, %v", k, err)
	}
	req := &abi.PartitionAssignRequest{Members: []abi.ConsumerMember{{ID: "m"}}}
	_, err = p.AssignPartitions(ctx, req)
	var perr *plugin.Error
	if !errors.As(err, &perr) || perr.Status != abi.StatusUnsupported || !strings.Contains(err.Error(), "no assignor here") {
		t.Fatalf("got %v", err)
	}
	if _, err := p.Assign(ctx, smallReq()); plugin.KindOf(err) != plugin.KindUnsupported {
		t.Fatalf("assign: got %v", err)
	}
}
