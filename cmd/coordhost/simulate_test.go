package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/host/plugin/plugintest"
	"github.com/coordhost/coordhost/host/sim"
)

func runSimulate(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = simulateCommand(args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestSimulateWasmMatchesNative: the ha plugin's wasm build, loaded through
// the plugin host, gives the same figures as its native build on the
// rolling restart, and two runs write byte-identical files. The wasm goes
// in with --plugin, after the --assignor, and runs in that order.
func TestSimulateWasmMatchesNative(t *testing.T) {
	wasm := plugintest.GoPluginPath(t, "plugins/assignor-ha/wasm")
	dir := t.TempDir()
	var jsons, htmls [][]byte
	for i := range 2 {
		j, h := filepath.Join(dir, "r.json"), filepath.Join(dir, "r.html")
		code, out, errs := runSimulate(t, "--scenario", "../../testdata/sim/rolling-restart.yaml",
			"--assignor", "ha", "--plugin", wasm, "--json", j, "--html", h)
		if code != 0 || out != "" {
			t.Fatalf("run %d: exit %d\n%s%s", i, code, out, errs)
		}
		jb, _ := os.ReadFile(j)
		hb, _ := os.ReadFile(h)
		jsons, htmls = append(jsons, jb), append(htmls, hb)
	}
	if !bytes.Equal(jsons[0], jsons[1]) || !bytes.Equal(htmls[0], htmls[1]) || len(htmls[0]) == 0 {
		t.Fatal("two runs wrote different reports")
	}
	var r sim.Report
	if err := json.Unmarshal(jsons[0], &r); err != nil {
		t.Fatal(err)
	}
	native, plugin := r.Assignors[0], r.Assignors[1]
	if native.Name != "builtin:ha" || native.Version != "native" ||
		!strings.HasPrefix(plugin.Version, "wasm sha256:") || plugin.Name == native.Name {
		t.Fatalf("assignors %q %q, %q %q", native.Name, native.Version, plugin.Name, plugin.Version)
	}
	nj, _ := json.Marshal(native.Rebalances)
	pj, _ := json.Marshal(plugin.Rebalances)
	if native.Totals != plugin.Totals || !bytes.Equal(nj, pj) || native.Totals.Rebalances == 0 {
		t.Errorf("wasm %+v differs from native %+v", plugin.Totals, native.Totals)
	}
}

func TestSimulateTableAndErrors(t *testing.T) {
	code, out, errs := runSimulate(t, "--scenario", "../../testdata/sim/leave.yaml", "--assignor", "sticky", "--assignor", "builtin:ha")
	if code != 0 || !strings.Contains(out, `scenario "leave", seed 1`) || !strings.Contains(out, "builtin:sticky") ||
		!strings.Contains(out, "UNAVAILABLE TASK-S") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("duration_s: 10\nsubtopologies: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--scenario", "../../testdata/sim/leave.yaml"}, 2, "usage:"},
		{[]string{"--assignor", "sticky"}, 2, "usage:"},
		{[]string{"--scenario", "../../testdata/sim/leave.yaml", "--assignor", "sticky", "--seed", "x"}, 2, `--seed "x"`},
		{[]string{"--scenario", bad, "--assignor", "sticky"}, 1, "bad.yaml: subtopologies: none"},
		{[]string{"--scenario", "nope.yaml", "--assignor", "sticky"}, 1, "nope.yaml"},
		{[]string{"--scenario", "../../testdata/sim/leave.yaml", "--assignor", "nosuch"}, 1, "nosuch"},
		{[]string{"--scenario", "../../testdata/sim/leave.yaml", "--assignor", "builtin:nosuch"}, 1, "no such built-in"},
		{[]string{"--scenario", "../../testdata/sim/leave.yaml", "--assignor", "sticky", "--assignor", "builtin:sticky"}, 1, "already in the run"},
		{[]string{"--scenario", "../../testdata/sim/leave.yaml", "--plugin", "sticky"}, 2, `"sticky" is not a .wasm file`},
		{[]string{"--scenario", "../../testdata/sim/leave.yaml", "--plugin", "missing.wasm"}, 1, "missing.wasm"},
	} {
		code, out, errs := runSimulate(t, c.args...)
		if code != c.code || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, want %d with %q\n%s%s", c.args, code, c.code, c.want, out, errs)
		}
	}
}

// TestSimulateFleet: several --scenario flags replay a fleet; its JSON's
// totals are the groups' sums, its files are byte-identical run to run,
// and a fleet whose groups share a name is refused.
func TestSimulateFleet(t *testing.T) {
	dir := t.TempDir()
	args := []string{"--scenario", "../../testdata/sim/leave.yaml", "--scenario", "../../testdata/sim/scale-out.yaml",
		"--assignor", "sticky", "--assignor", "ha"}
	var jsons, htmls [][]byte
	for i := range 2 {
		j, h := filepath.Join(dir, "f.json"), filepath.Join(dir, "f.html")
		if code, out, errs := runSimulate(t, append(args, "--json", j, "--html", h)...); code != 0 || out != "" {
			t.Fatalf("run %d: exit %d\n%s%s", i, code, out, errs)
		}
		jb, _ := os.ReadFile(j)
		hb, _ := os.ReadFile(h)
		jsons, htmls = append(jsons, jb), append(htmls, hb)
	}
	if !bytes.Equal(jsons[0], jsons[1]) || !bytes.Equal(htmls[0], htmls[1]) {
		t.Fatal("two runs wrote different fleet reports")
	}
	var f sim.Fleet
	if err := json.Unmarshal(jsons[0], &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Groups) != 2 || f.Groups[0].Scenario != "leave" || f.Groups[1].Scenario != "scale-out" || len(f.Totals) != 2 {
		t.Fatalf("fleet of %d groups, %d totals", len(f.Groups), len(f.Totals))
	}
	for j, ft := range f.Totals {
		sum := f.Groups[0].Assignors[j].UnavailableTaskS + f.Groups[1].Assignors[j].UnavailableTaskS
		if ft.Groups != 2 || ft.UnavailableTaskS != sum || sum == 0 {
			t.Errorf("%s: %+v, groups' unavailable task-s sum to %v", ft.Name, ft, sum)
		}
	}
	code, out, _ := runSimulate(t, args...)
	if code != 0 || !strings.Contains(out, "fleet of 2 groups") || !strings.Contains(out, "FEWEST UNAVAILABLE IN") {
		t.Errorf("table: exit %d\n%s", code, out)
	}
	code, _, errs := runSimulate(t, "--scenario", "../../testdata/sim/leave.yaml", "--scenario", "../../testdata/sim/leave.yaml", "--assignor", "sticky")
	if code != 1 || !strings.Contains(errs, `two groups of the fleet are named "leave"`) {
		t.Errorf("same name twice: exit %d, %s", code, errs)
	}
}
