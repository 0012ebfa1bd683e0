package core

import (
	"slices"
	"testing"
)

// TestAssignmentConfigsAre: the heartbeat's allocation-free comparison
// agrees with comparing the records assignmentConfigs builds, for every
// pair of settings — including tag lists that join to the same prefix.
func TestAssignmentConfigsAre(t *testing.T) {
	var cfgs []StreamsConfig
	for _, standbys := range []int32{0, 1, 2, 10} {
		for _, tags := range [][]string{nil, {"a"}, {"a", "b"}, {"a,b"}, {"ab"}, {"a", ""}, {"zone", "rack"}} {
			cfgs = append(cfgs, StreamsConfig{NumStandbyReplicas: standbys, RackAwareAssignmentTags: tags})
		}
	}
	c, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfgs {
		c.cfg.Streams = a
		kv := c.assignmentConfigs("g")
		for _, b := range cfgs {
			c.cfg.Streams = b
			want := slices.Equal(c.assignmentConfigs("g"), kv)
			if got := assignmentConfigsAre(b, kv); got != want {
				t.Errorf("assignmentConfigsAre(%+v, configs of %+v) = %v, want %v", b, a, got, want)
			}
		}
	}
	if assignmentConfigsAre(cfgs[0], nil) {
		t.Error("no recorded configs matched the settings")
	}
}
