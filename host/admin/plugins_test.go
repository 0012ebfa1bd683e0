package admin

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/plugin/plugintest"
)

// TestPluginsAPILoadsOnlyFromPluginDirs: POST /v1/plugins/{name} loads a
// module by name from a plugin directory, and refuses "..", paths outside
// the directories (existing or not, alike), devices and oversized files,
// each with its own error.
func TestPluginsAPILoadsOnlyFromPluginDirs(t *testing.T) {
	dir := t.TempDir()
	wasm, err := os.ReadFile(plugintest.CPluginPath(t, "testdata/plugins/c/assignor.c"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "c.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "huge.wasm"), make([]byte, len(wasm)+1), 0o644); err != nil {
		t.Fatal(err)
	}
	asg := assign.New(context.Background(), t.TempDir(), "sticky", plugin.Config{}, slog.New(slog.DiscardHandler))
	defer asg.Close(context.Background())
	h := PluginsHandler(asg, plugin.FilePolicy{Dirs: []string{dir}, MaxBytes: int64(len(wasm))})
	post := func(path string) (int, string) {
		body, _ := json.Marshal(map[string]string{"path": path})
		req := httptest.NewRequest("POST", "/v1/plugins/mine", strings.NewReader(string(body)))
		req.SetPathValue("name", "mine")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String()
	}
	for _, c := range []struct{ path, want string }{
		{"../c.wasm", `\"..\" is not allowed`},
		{dir + "/../" + filepath.Base(dir) + "/c.wasm", `\"..\" is not allowed`},
		{"/dev/zero", "not a file in a plugin directory"},
		{"/etc/passwd", "not a file in a plugin directory"},
		{"sub/c.wasm", "invalid plugin file name"},
		{"huge.wasm", "larger than the limit"},
		{"", "no path"},
	} {
		if code, body := post(c.path); code != http.StatusBadRequest || !strings.Contains(body, c.want) {
			t.Errorf("POST %q: %d %s, want 400 with %q", c.path, code, body, c.want)
		}
	}
	_, a := post("/etc/passwd")
	_, b := post("/no/such/passwd")
	if strings.ReplaceAll(a, "/etc/passwd", "P") != strings.ReplaceAll(b, "/no/such/passwd", "P") {
		t.Errorf("an existing and a missing outside path answer differently:\n%s\n%s", a, b)
	}
	if code, body := post("c.wasm"); code != 200 {
		t.Fatalf("POST c.wasm: %d %s", code, body)
	}
	if info := asg.Info(); !hasPlugin(info, "mine", filepath.Join(dir, "c.wasm")) {
		t.Fatalf("plugin not loaded from the directory: %+v", info)
	}
}

func hasPlugin(info []assign.PluginInfo, name, path string) bool {
	for _, pi := range info {
		if pi.Name == name && pi.Path == path {
			return true
		}
	}
	return false
}
