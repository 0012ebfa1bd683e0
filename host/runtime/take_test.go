package runtime

import (
	"fmt"
	"slices"
	"testing"
)

// TestTickAfterQueuedEvents: a Tick queued behind events is stepped after
// them, as Kafka enqueues a timer's event behind the requests already
// queued. Three members' second JoinGroups queued before the Tick of a
// 0 ms initial rebalance delay must all be stepped before it, or the
// join phase completes without them (one generation per late member);
// before this rule the round stepped every event without a key first.
// The Tick is a round of its own, so that its Tick.Waiting sees the
// events queued after it (they wait in the queue, not in its round).
func TestTickAfterQueuedEvents(t *testing.T) {
	p := &partition{rt: &Runtime{cfg: Config{MaxBatch: 16, MaxPerKey: 8}}, queued: map[string]int{}}
	names := func(evs []Event) []string {
		out := []string{}
		for _, ev := range evs {
			if _, ok := ev.Input.(Tick); ok {
				out = append(out, "tick")
				continue
			}
			out = append(out, fmt.Sprint(ev.Input))
		}
		return out
	}
	for _, ev := range []Event{
		{Input: "join-b", Key: "g"}, {Input: "join-c", Key: "g"}, {Input: "other"},
		{Input: Tick{}},
		{Input: "join-d", Key: "g"}, {Input: "later"},
	} {
		p.queue = append(p.queue, ev)
		p.countLocked([]Event{ev}, 1)
	}
	rounds := [][]string{}
	for len(p.queue) > 0 {
		round := p.takeLocked(nil)
		rounds = append(rounds, names(round))
		if _, tick := round[0].Input.(Tick); tick && !p.groupWaiting() {
			t.Errorf("stepping the Tick, its Waiting does not see join-d queued after it")
		}
	}
	want := [][]string{{"other", "join-b", "join-c"}, {"tick"}, {"later", "join-d"}}
	if !slices.EqualFunc(rounds, want, slices.Equal) {
		t.Fatalf("rounds %q, want %q", rounds, want)
	}
	if len(p.queued) != 0 {
		t.Fatalf("queued counts left: %v", p.queued)
	}
}
