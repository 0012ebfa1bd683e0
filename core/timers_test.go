package core

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
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

// TestLoadedTimers: Loaded arms a session timer for every loaded member
// and orders the heap once at its end, so the timers come due in
// (deadline, key) order as if each had been pushed; a Rollback of
// Loaded's batch leaves no timer behind, as the undo of each would.
func TestLoadedTimers(t *testing.T) {
	h := newCHarness(t, consumerTestConfig())
	for g := range 3 {
		for m := range 9 {
			h.hb(joinReq("g"+strconv.Itoa(g), "m"+strconv.Itoa(8-m), "a"))
		}
	}
	load := func() *Coordinator {
		c, err := New(consumerTestConfig())
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range h.log {
			if err := c.Replay(rec); err != nil {
				t.Fatal(err)
			}
		}
		short := int32(10000) // the last group's timers are due first
		c.setConsumerGroupConfig("g2", ConsumerGroupOverrides{SessionTimeoutMs: &short})
		c.Loaded(1000)
		return c
	}
	c := load()
	want := c.TimerKeys()
	if len(want) < 27 {
		t.Fatalf("timers after Loaded: %v, want one a member at least", want)
	}
	var due []string
	for len(c.timers) > 0 {
		tm, _ := c.peekTimer()
		due = append(due, fmt.Sprintf("%s@%d", tm.key, tm.deadline))
		c.cancelTimer(tm.key)
	}
	slices.SortFunc(want, func(a, b string) int { // by deadline, then key
		da, db := a[strings.LastIndexByte(a, '@'):], b[strings.LastIndexByte(b, '@'):]
		return cmp.Or(cmp.Compare(len(da), len(db)), cmp.Compare(da, db), cmp.Compare(a, b))
	})
	if !slices.Equal(due, want) {
		t.Fatalf("timers came due as\n%v\nwant\n%v", due, want)
	}
	c = load()
	c.Rollback()
	if keys := c.TimerKeys(); len(keys) != 0 {
		t.Fatalf("timers after Loaded's rollback: %v", keys)
	}
	if d, ok := c.NextDeadline(); ok {
		t.Fatalf("a deadline (%d) after Loaded's rollback", d)
	}
}

// TestRollbackRestoresTimers: a batch that moves a member's session
// timer (a steady heartbeat) and then cancels it, rolled back, leaves
// the timer at its committed deadline, first to come due as before.
func TestRollbackRestoresTimers(t *testing.T) {
	h := newCHarness(t, consumerTestConfig())
	resp := h.hb(joinReq("g", "m", "a"))
	key := consumerSessionKey("g", "m")
	committed, ok := h.c.timerDeadline(key)
	if !ok {
		t.Fatal("no session timer after the join")
	}
	h.now += 1000
	h.c.consumerGroupHeartbeat(h.now, 99, ClientInfo{ClientID: "cli"}, ackReq("g", "m", resp.MemberEpoch, resp.Assignment.Topics))
	if moved, _ := h.c.timerDeadline(key); moved != committed+1000 {
		t.Fatalf("the heartbeat moved the session deadline from %d to %d, want %d", committed, moved, committed+1000)
	}
	h.c.begin(h.now)
	h.c.cancelTimer(key)
	h.c.end()
	if h.c.hasTimer(key) {
		t.Fatal("the session timer survived its cancel")
	}
	h.c.Rollback()
	if d, ok := h.c.timerDeadline(key); !ok || d != committed {
		t.Fatalf("after the rollback the session deadline is %d (%v), want %d", d, ok, committed)
	}
	if next, _ := h.c.NextDeadline(); next > committed {
		t.Fatalf("the next deadline is %d, after the session timer's %d", next, committed)
	}
}
