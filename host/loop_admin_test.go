package host_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/loop"
	"github.com/coordhost/coordhost/host/plugin/plugintest"
)

// TestLoopAdminAPI: /v1/groups lists and describes a live streams group
// (members, epochs, current and target assignment, assignor, recent
// events); /v1/plugins lists the assignors and loads, reloads and unloads
// a plugin only with the admin token; /metrics has the loop's counters.
func TestLoopAdminAPI(t *testing.T) {
	wasm := plugintest.CPluginPath(t, "testdata/plugins/c/assignor.c")
	srv := startLoopHost(t, "", "--admin.token=s3cret", "--plugins.load.dirs="+filepath.Dir(wasm))
	ctx := timeout(t)
	kc := newClient(t, srv.KafkaAddr())
	if err := createTopic(ctx, kc, "adm-in", 2); err != nil {
		t.Fatal(err)
	}
	cl := &coordinator{cl: kc}
	m := newStreamsMember(cl, "adm", "adm-in")
	waitFor(t, 10*time.Second, "member owns 2 tasks", func() error {
		if _, _, err := m.heartbeat(ctx); err != nil {
			return err
		}
		if len(m.partitions()) != 2 {
			return io.ErrUnexpectedEOF
		}
		return nil
	})
	base := "http://" + srv.AdminAddr()
	hc := &http.Client{Timeout: 30 * time.Second}
	call := func(method, path, token, body string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, _ := call("GET", "/v1/groups", "", ""); code != 401 {
		t.Fatalf("/v1/groups without the token: %d, want 401", code)
	}
	code, body := call("GET", "/v1/groups", "s3cret", "")
	if code != 200 || !strings.Contains(body, `"group": "adm"`) || !strings.Contains(body, `"type": "streams"`) {
		t.Fatalf("/v1/groups: %d %s", code, body)
	}
	code, body = call("GET", "/v1/groups/adm", "s3cret", "")
	var d loop.GroupDetail
	if err := json.Unmarshal([]byte(body), &d); err != nil || code != 200 {
		t.Fatalf("/v1/groups/adm: %d %s", code, body)
	}
	if d.Type != "streams" || d.State != "Stable" || d.Assignor != "sticky" || d.Streams == nil || len(d.Streams.Members) != 1 {
		t.Fatalf("describe: %+v", d)
	}
	mem := d.Streams.Members[0]
	if mem.MemberEpoch != d.Streams.Epoch || countTasks(mem.Assignment.ActiveTasks) != 2 || countTasks(mem.TargetAssignment.ActiveTasks) != 2 {
		t.Fatalf("member description: %+v", mem)
	}
	if len(d.RecentEvents) == 0 || !strings.Contains(strings.Join(d.RecentEvents, "\n"), "target assignment") {
		t.Fatalf("recent events: %v", d.RecentEvents)
	}
	if code, _ := call("GET", "/v1/groups/nope", "s3cret", ""); code != 404 {
		t.Fatalf("unknown group: %d", code)
	}
	code, body = call("GET", "/v1/plugins", "s3cret", "")
	if code != 200 || !strings.Contains(body, `"name": "sticky"`) || !strings.Contains(body, `"runtime": "native"`) {
		t.Fatalf("/v1/plugins: %d %s", code, body)
	}
	load := `{"path": "` + wasm + `"}`
	if code, body := call("POST", "/v1/plugins/c", "s3cret", `{"path": "/dev/zero"}`); code != 400 || !strings.Contains(body, "not a file in a plugin directory") {
		t.Fatalf("load from outside the plugin directories: %d %s", code, body)
	}
	if code, _ := call("POST", "/v1/plugins/c", "", load); code != 401 {
		t.Fatalf("load without token: %d, want 401", code)
	}
	if code, body := call("POST", "/v1/plugins/c", "s3cret", load); code != 200 || !strings.Contains(body, `"runtime": "wasm"`) {
		t.Fatalf("load: %d %s", code, body)
	}
	if code, body := call("PUT", "/v1/plugins/c", "s3cret", "{}"); code != 200 {
		t.Fatalf("reload: %d %s", code, body)
	}
	if code, body := call("DELETE", "/v1/plugins/c", "s3cret", ""); code != 200 || strings.Contains(body, `"name": "c"`) {
		t.Fatalf("unload: %d %s", code, body)
	}
	if code, _ := call("DELETE", "/v1/plugins/c", "s3cret", ""); code != 404 {
		t.Fatalf("second unload: %d, want 404", code)
	}
	code, body = call("GET", "/metrics", "s3cret", "")
	if code != 200 || !strings.Contains(body, "coordhost_group_heartbeats_total") || !strings.Contains(body, "coordhost_store_appends_total") {
		t.Fatalf("/metrics lacks loop counters: %s", body)
	}
}

// TestBuiltinWasmAssignor: with assignor-sticky.wasm in plugins.dir (as
// `make plugins` writes it) the sticky assignor runs as a wasm plugin, and
// a streams group is assigned through it.
func TestBuiltinWasmAssignor(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "assignor-sticky.wasm"), plugintest.GoPlugin(t, "plugins/assignor-sticky/wasm"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := startLoopHost(t, "", "--plugins.dir="+dir)
	ctx := timeout(t)
	kc := newClient(t, srv.KafkaAddr())
	if err := createTopic(ctx, kc, "bw-in", 3); err != nil {
		t.Fatal(err)
	}
	m := newStreamsMember(&coordinator{cl: kc}, "bw", "bw-in")
	waitFor(t, 20*time.Second, "member owns 3 tasks", func() error {
		if _, _, err := m.heartbeat(ctx); err != nil {
			return err
		}
		if len(m.partitions()) != 3 {
			return io.ErrUnexpectedEOF
		}
		return nil
	})
	resp, err := http.Get("http://" + srv.AdminAddr() + "/v1/plugins/sticky")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var pi assign.PluginInfo
	if err := json.NewDecoder(resp.Body).Decode(&pi); err != nil {
		t.Fatal(err)
	}
	if pi.Runtime != "wasm" || pi.Metrics == nil || pi.Metrics.Calls < 1 || pi.Failures != 0 {
		t.Fatalf("sticky did not run as wasm: %+v %+v", pi, pi.Metrics)
	}
}

// TestCoreConfigFromGroupDefaults: groups.defaults become core's
// coordinator-wide settings (streams, classic, migration policy).
func TestCoreConfigFromGroupDefaults(t *testing.T) {
	cfg, err := config.Load([]string{"--data.dir=" + t.TempDir(), "--groups.defaults.streams.migration.policy=upgrade",
		"--groups.defaults.group.max.size=7", "--groups.defaults.streams.assignor.name=ha", "--groups.defaults.streams.num.standby.replicas=1"}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cc := host.CoreConfig(cfg)
	if cc.StreamsMigrationPolicy != core.MigrationUpgrade || cc.Classic.MaxSize != 7 || cc.Streams.AssignorName != "ha" ||
		cc.Assignors[0] != "ha" || cc.Streams.NumStandbyReplicas != 1 {
		t.Fatalf("core config: %+v", cc)
	}
	if err := cc.Validate(); err != nil {
		t.Fatal(err)
	}
}
