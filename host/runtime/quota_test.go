package runtime

import (
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
	q.record("g", t0, 40*time.Millisecond)
	q.record("h", t0, 500*time.Millisecond)
	if d := q.throttle("g", t0.Add(10*time.Millisecond)); d != 0 {
		t.Fatalf("40 ms of a 50 ms share: throttled %v", d)
	}
	q.record("g", t0.Add(20*time.Millisecond), 20*time.Millisecond)
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
	q.record("g", t0, 900*time.Millisecond)
	if d := q.throttle("g", t0); d != 250*time.Millisecond {
		t.Fatalf("throttle %v, want the 250ms cap", d)
	}
	off := newQuota(-1, time.Second)
	off.record("g", t0, time.Hour)
	if d := off.throttle("g", t0); d != 0 {
		t.Fatalf("no quota: throttled %v", d)
	}
}

// TestThrottledKeyTakenLast: a round takes one event of a key over its
// quota, after the other keys' events; the rest stay queued in order.
func TestThrottledKeyTakenLast(t *testing.T) {
	now := time.Unix(1000, 0)
	rt := &Runtime{cfg: Config{MaxBatch: 16, MaxPerKey: 8, Now: func() time.Time { return now }}}
	p := &partition{rt: rt, queued: map[string]int{}, quota: newQuota(5, time.Second)}
	p.quota.record("flood", now, 200*time.Millisecond)
	for _, ev := range []Event{
		{Input: "f1", Key: "flood"}, {Input: "f2", Key: "flood"}, {Input: "c1", Key: "canary"},
		{Input: "f3", Key: "flood"}, {Input: "c2", Key: "canary"},
	} {
		p.queue = append(p.queue, ev)
		p.countLocked([]Event{ev}, 1)
	}
	var got []any
	for _, ev := range p.takeLocked(nil) {
		got = append(got, ev.Input)
	}
	if len(got) != 3 || got[0] != "c1" || got[1] != "c2" || got[2] != "f1" {
		t.Fatalf("round %v, want [c1 c2 f1]", got)
	}
	if len(p.queue) != 2 || p.queue[0].Input != "f2" || p.queue[1].Input != "f3" || p.queued["flood"] != 2 {
		t.Fatalf("left queued %v (counts %v)", p.queue, p.queued)
	}
}
