package loop

import (
	"testing"
	"time"
)

// TestAssignorTimeoutFromGroupConfig: the bound on a group's plugin calls
// is its streams.assignor.timeout.ms from the config file's layers, and
// the key's default (30 s) without per-group configuration.
func TestAssignorTimeoutFromGroupConfig(t *testing.T) {
	if got := (&Loop{}).assignorTimeout("g"); got != 30*time.Second {
		t.Fatalf("without per-group configuration: %v, want 30s", got)
	}
	l := loopWithGroupsYAML(t, "groups:\n  defaults:\n    streams.assignor.timeout.ms: 5000\n  overrides:\n    - match: \"slow-*\"\n      streams.assignor.timeout.ms: 120000\n")
	for group, want := range map[string]time.Duration{"orders": 5 * time.Second, "slow-1": 2 * time.Minute} {
		if got := l.assignorTimeout(group); got != want {
			t.Errorf("group %s: %v, want %v", group, got, want)
		}
	}
}
