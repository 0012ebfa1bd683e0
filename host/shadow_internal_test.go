package host

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/coordhost/coordhost/host/config"
)

// TestShadowsFromGroupConfig: streams.assignor.shadow is read per group-id
// glob from the config file, as docs/AB-TESTING.md writes it (a YAML list),
// and is empty by default.
func TestShadowsFromGroupConfig(t *testing.T) {
	l := loopWithGroupsYAML(t, "groups:\n  overrides:\n    - match: \"orders-*\"\n      streams.assignor.shadow: [ha, candidate]\n")
	if got := l.groupConfig("orders-1").StreamsAssignorShadow; !reflect.DeepEqual(got, []string{"ha", "candidate"}) {
		t.Errorf("orders-1: %q, want [ha candidate]", got)
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
