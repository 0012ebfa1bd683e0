package runtime

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestQuotaAccounting: a key's step time is compared with its share of
// the window; the previous window counts for the part the last window
// still covers; the throttle is the time that brings the key back to its
// share, capped.
func TestQuotaAccounting(t *testing.T) {
	t0 := time.Unix(1000, 0)
	q := newQuota(5, 10*time.Second) // 50 ms of a 1 s window
	q.step("g", t0, 40*time.Millisecond, true)
	q.step("h", t0, 500*time.Millisecond, true)
	if d := q.throttle("g", t0.Add(10*time.Millisecond)); d != 0 {
		t.Fatalf("40 ms of a 50 ms share: throttled %v", d)
	}
	q.record("g", t0.Add(20*time.Millisecond), 20*time.Millisecond) // a charge off the partition
	// 60 ms used: 10 ms over a 5 % share is 200 ms of throttle.
	if d := q.throttle("g", t0.Add(30*time.Millisecond)); d != 200*time.Millisecond {
		t.Fatalf("60 ms used: throttle %v, want 200ms", d)
	}
	if d := q.throttle("other", t0.Add(30*time.Millisecond)); d != 0 {
		t.Fatalf("a key that used nothing: throttled %v", d)
	}
	// Half into the next window, half of the previous window's 60 ms
	// counts: 30 ms, under the share.
	if d := q.throttle("g", t0.Add(1500*time.Millisecond)); d != 0 {
		t.Fatalf("next window: throttled %v", d)
	}
	// "h" used 500 ms: (500-50)/0.05 = 9 s; a quarter into the next
	// window 375 ms count: (375-50)/0.05 = 6.5 s.
	if d := q.throttle("h", t0.Add(1250*time.Millisecond)); d != 6500*time.Millisecond {
		t.Fatalf("previous window weighted: throttle %v, want 6.5s", d)
	}
	// Two windows later nothing is remembered.
	if d := q.throttle("h", t0.Add(3*time.Second)); d != 0 || len(q.cur)+len(q.prev) != 0 {
		t.Fatalf("after two windows: throttle %v, %d keys kept", d, len(q.cur)+len(q.prev))
	}
}

func TestQuotaThrottleCapped(t *testing.T) {
	t0 := time.Unix(1000, 0)
	q := newQuota(5, 250*time.Millisecond)
	q.step("g", t0, 900*time.Millisecond, true)
	if d := q.throttle("g", t0); d != 250*time.Millisecond {
		t.Fatalf("throttle %v, want the 250ms cap", d)
	}
	off := newQuota(-1, time.Second)
	off.step("g", t0, time.Hour, true)
	if d := off.throttle("g", t0); d != 0 {
		t.Fatalf("no quota: throttled %v", d)
	}
}

// takeFlooded queues evs on a partition where key "flood" is over its
// quota and takes a round: the partition and the round's inputs.
func takeFlooded(evs []Event) (*partition, []any) {
	now := time.Unix(1000, 0)
	rt := &Runtime{cfg: Config{MaxBatch: 16, MaxPerKey: 8, Now: func() time.Time { return now }}}
	p := &partition{rt: rt, queued: map[string]int{}, quota: newQuota(5, time.Second)}
	p.quota.step("flood", now, 200*time.Millisecond, true)
	for _, ev := range evs {
		p.queue = append(p.queue, ev)
		p.countLocked([]Event{ev}, 1)
	}
	var got []any
	for _, ev := range p.takeLocked(nil) {
		got = append(got, ev.Input)
	}
	return p, got
}

// TestThrottledKeyTakenLast: a round takes one event of a key over its
// quota, after the other keys' events; the rest stay queued in order.
func TestThrottledKeyTakenLast(t *testing.T) {
	p, got := takeFlooded([]Event{
		{Input: "f1", Key: "flood"}, {Input: "f2", Key: "flood"}, {Input: "c1", Key: "canary"},
		{Input: "f3", Key: "flood"}, {Input: "c2", Key: "canary"},
	})
	if len(got) != 3 || got[0] != "c1" || got[1] != "c2" || got[2] != "f1" {
		t.Fatalf("round %v, want [c1 c2 f1]", got)
	}
	if len(p.queue) != 2 || p.queue[0].Input != "f2" || p.queue[1].Input != "f3" || p.queued["flood"] != 2 {
		t.Fatalf("left queued %v (counts %v)", p.queue, p.queued)
	}
}

// TestQuotaWorkConserving: a key over its share is not throttled while
// none of its steps in the last two windows delayed other work; one step
// that did makes it throttled for its whole use, until that step's
// window has passed.
func TestQuotaWorkConserving(t *testing.T) {
	t0 := time.Unix(1000, 0)
	q := newQuota(5, 10*time.Second)
	q.step("big", t0, 400*time.Millisecond, false)
	q.record("big", t0, 100*time.Millisecond) // charged off the partition
	if d := q.throttle("big", t0.Add(time.Millisecond)); d != 0 {
		t.Fatalf("500 ms used, alone: throttled %v", d)
	}
	q.step("big", t0.Add(2*time.Millisecond), time.Millisecond, true)
	if d := q.throttle("big", t0.Add(3*time.Millisecond)); d != 9020*time.Millisecond {
		t.Fatalf("501 ms used, once delaying others: throttle %v, want 9.02s", d)
	}
	// The next window still weighs the delaying window in.
	if d := q.throttle("big", t0.Add(1500*time.Millisecond)); d == 0 {
		t.Fatal("half into the next window: not throttled")
	}
	q.step("big", t0.Add(2100*time.Millisecond), 400*time.Millisecond, false)
	if d := q.throttle("big", t0.Add(2200*time.Millisecond)); d != 0 {
		t.Fatalf("two windows after the delaying step: throttled %v", d)
	}
}

func TestBehind(t *testing.T) {
	keys := func(ks ...string) []Event {
		var evs []Event
		for _, k := range ks {
			evs = append(evs, Event{Key: k})
		}
		return evs
	}
	for _, c := range []struct {
		keys []string
		want []bool // other(i) for each event
	}{
		{nil, nil},
		{[]string{"a"}, []bool{false}},
		{[]string{"a", "a", "a"}, []bool{false, false, false}},
		{[]string{"c", "a", "a"}, []bool{true, false, false}},
		{[]string{"a", "a", "c"}, []bool{true, true, false}},
		{[]string{"a", "c", "a", "a"}, []bool{true, true, false, false}},
		{[]string{"a", "b", "c"}, []bool{true, true, false}},
	} {
		evs := keys(c.keys...)
		b := newBehind(evs)
		for i, ev := range evs {
			if got := b.other(i, ev.Key); got != c.want[i] {
				t.Errorf("%v: other(%d) = %v, want %v", c.keys, i, got, c.want[i])
			}
		}
	}
}

// TestSparedEventNotHeldBack: an event of a key over its quota that is
// Spared (its request's connection is shared with other keys) is taken
// and ranked as if its key were under its quota; the key's other events
// are still held back (one of the key's a round, and that one is taken).
func TestSparedEventNotHeldBack(t *testing.T) {
	p, got := takeFlooded([]Event{
		{Input: "s1", Key: "flood", Spared: true}, {Input: "s2", Key: "flood", Spared: true}, {Input: "c1", Key: "canary"},
		{Input: "f1", Key: "flood"}, {Input: "f2", Key: "flood"},
	})
	if fmt.Sprint(got) != "[c1 s1 s2]" {
		t.Fatalf("round %v, want [c1 s1 s2]", got)
	}
	if len(p.queue) != 2 || p.queue[0].Input != "f1" || p.queue[1].Input != "f2" || p.queued["flood"] != 2 {
		t.Fatalf("left queued %v (counts %v)", p.queue, p.queued)
	}
}

// TestQuotaMayThrottle: mayThrottle, which lets Runtime.Throttle answer 0
// without the lock and the clock, is false only when every key's
// throttle is 0, over random steps, delays and window rolls.
func TestQuotaMayThrottle(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	now := time.Unix(1000, 0)
	q := newQuota(5, time.Second)
	keys := []string{"a", "b", "c"}
	sawOff, sawOn := false, false
	for i := range 20000 {
		switch op := r.IntN(10); {
		case op < 6:
			q.step(keys[r.IntN(len(keys))], now, time.Duration(r.IntN(80))*time.Millisecond, r.IntN(20) == 0)
		case op < 9:
			now = now.Add(time.Duration(r.IntN(300)) * time.Millisecond)
		default:
			now = now.Add(time.Duration(r.IntN(3000)) * time.Millisecond)
		}
		may := q.mayThrottle.Load()
		sawOn, sawOff = sawOn || may, sawOff || !may
		for _, k := range keys {
			if d := q.throttle(k, now); d != 0 && !may {
				t.Fatalf("op %d: mayThrottle false, throttle(%s) %v", i, k, d)
			}
		}
	}
	if !sawOn || !sawOff {
		t.Fatalf("mayThrottle never changed (on %v, off %v)", sawOn, sawOff)
	}
}

// TestRealClockUnlessGiven: a runtime given no clock runs on the real
// one, whose readings one step shares (timerClock); one given a clock,
// even one that returns time.Now(), reads that clock wherever it needs
// the time.
func TestRealClockUnlessGiven(t *testing.T) {
	for _, c := range []struct {
		now  func() time.Time
		real bool
	}{{nil, true}, {func() time.Time { return time.Now() }, false}} {
		rt, err := New(Config{Now: c.now, Log: NewMemLog(), NewShard: func(int) (Shard, error) { return nil, nil }})
		if err != nil {
			t.Fatal(err)
		}
		if rt.realClock != c.real {
			t.Errorf("Config.Now set %v: realClock %v, want %v", c.now != nil, rt.realClock, c.real)
		}
		rt.Close(context.Background())
	}
}
