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

// TestSimulateCoreEngineWasm: with --engine core the HA plugin's wasm
// build, run through the plugin host on the assignor runs core asks for,
// gives the same targets as its native build, and the report says it ran
// on core.
func TestSimulateCoreEngineWasm(t *testing.T) {
	wasm := plugintest.GoPluginPath(t, "plugins/assignor-ha/wasm")
	j := filepath.Join(t.TempDir(), "r.json")
	code, out, errs := runSimulate(t, "--engine", "core", "--scenario", "../../testdata/sim/rolling-restart.yaml",
		"--assignor", "ha", "--plugin", wasm, "--json", j)
	if code != 0 || out != "" {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	data, err := os.ReadFile(j)
	if err != nil {
		t.Fatal(err)
	}
	var r sim.Report
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	native, plugin := r.Assignors[0], r.Assignors[1]
	nj, _ := json.Marshal(native.Rebalances)
	pj, _ := json.Marshal(plugin.Rebalances)
	if r.Engine != "core" || !strings.HasPrefix(plugin.Version, "wasm sha256:") ||
		native.Totals != plugin.Totals || !bytes.Equal(nj, pj) || native.Totals.Rebalances == 0 {
		t.Errorf("engine %q: wasm %+v differs from native %+v", r.Engine, plugin.Totals, native.Totals)
	}
}

// TestSimulateEngineFlag: --engine takes core (the default) or model; core runs the
// migration roll (what it refuses is TestCoreEngineRefuses's, host/sim).
func TestSimulateEngineFlag(t *testing.T) {
	code, out, errs := runSimulate(t, "--engine", "core", "--scenario", "../../testdata/sim/leave.yaml", "--assignor", "sticky")
	if code != 0 || !strings.Contains(out, "builtin:sticky  1 ") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	if code, _, errs := runSimulate(t, "--engine", "other", "--scenario", "../../testdata/sim/leave.yaml", "--assignor", "sticky"); code != 2 || !strings.Contains(errs, "usage:") {
		t.Fatalf("--engine other: exit %d\n%s", code, errs)
	}
	// Without --engine the replay is on core; --engine model is the model's.
	for _, c := range []struct {
		args   []string
		engine string
	}{{nil, `"engine": "core"`}, {[]string{"--engine", "model"}, ""}} {
		args := append([]string{"--scenario", "../../testdata/sim/leave.yaml", "--assignor", "sticky", "--json", "-"}, c.args...)
		code, out, errs := runSimulate(t, args...)
		if code != 0 || (c.engine != "" && !strings.Contains(out, c.engine)) || (c.engine == "" && strings.Contains(out, `"engine"`)) {
			t.Fatalf("%v: exit %d, want engine %q\n%s%s", c.args, code, c.engine, out, errs)
		}
	}
	// The migration roll (classic members, a coordhost restart) runs on core.
	code, out, errs = runSimulate(t, "--engine", "core", "--scenario", "../../testdata/scenarios/migration-roll.yaml", "--assignor", "sticky")
	if code != 0 || !strings.Contains(out, "builtin:sticky  25 ") {
		t.Fatalf("migration roll on core: exit %d\n%s%s", code, out, errs)
	}
}
