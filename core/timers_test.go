package core

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// TestTimerKeyOrder: timers due at the same time fire in the order of
// their keys' text, so compareKeys must order keys exactly as their text
// does — including groups and members that contain '-' or are prefixes of
// one another, where comparing the fields one by one would not.
func TestTimerKeyOrder(t *testing.T) {
	parts := []string{"", "a", "a-", "a-b", "ab", "-", "b", "g-1", "g", "m-", "mem-0001"}
	rng := rand.New(rand.NewPCG(1, 2))
	key := func() TimerKey {
		return TimerKey{keyName(rng.IntN(len(keyNames))), parts[rng.IntN(len(parts))], parts[rng.IntN(len(parts))]}
	}
	for range 20000 {
		a, b := key(), key()
		if !keyNames[a.name].member {
			a.member = ""
		}
		if !keyNames[b.name].member {
			b.member = ""
		}
		if got, want := compareKeys(a, b), strings.Compare(a.String(), b.String()); got != want {
			t.Fatalf("compareKeys(%q, %q) = %d, want %d", a, b, got, want)
		}
	}
	if got := sessionTimerKey("g", "m").String(); got != "session-timeout-g-m" {
		t.Fatalf("session timer key %q, want Kafka's session-timeout-g-m", got)
	}
}
