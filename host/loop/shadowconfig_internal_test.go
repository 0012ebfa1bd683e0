package loop

import (
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/coordhost/coordhost/host/config"
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
	return &Loop{d: Deps{Groups: cfg.Groups}, dyn: map[string]map[string]string{}}
}
