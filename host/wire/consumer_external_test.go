package wire

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestServesConsumerGroups: an external data plane serves consumer groups
// only when it advertises both KIP-848 APIs and finalizes group.version at
// level 1 or more.
func TestServesConsumerGroups(t *testing.T) {
	both := map[int16]VersionRange{68: {0, 1}, 69: {0, 1}, 12: {0, 4}}
	onlyHeartbeat := map[int16]VersionRange{68: {0, 1}}
	level := func(n int16) *Features {
		return &Features{Finalized: []kmsg.ApiVersionsResponseFinalizedFeature{
			{Name: "metadata.version", MinVersionLevel: 27, MaxVersionLevel: 27},
			{Name: "group.version", MinVersionLevel: n, MaxVersionLevel: n},
		}}
	}
	noGroupVersion := &Features{Finalized: []kmsg.ApiVersionsResponseFinalizedFeature{{Name: "metadata.version", MinVersionLevel: 27, MaxVersionLevel: 27}}}
	for _, c := range []struct {
		name     string
		versions map[int16]VersionRange
		f        *Features
		want     bool
	}{
		{"both APIs, group.version 1", both, level(1), true},
		{"both APIs, group.version 0", both, level(0), false},
		{"both APIs, group.version not finalized", both, noGroupVersion, false},
		{"both APIs, no features", both, nil, false},
		{"describe missing", onlyHeartbeat, level(1), false},
		{"no APIs", map[int16]VersionRange{}, level(1), false},
	} {
		if got := ServesConsumerGroups(c.versions, c.f); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
