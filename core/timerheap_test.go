package core

import (
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// The heap hands entries back in (deadline, key) order whatever the order
// of pushes, after init as after pushes.
func TestTimerHeapOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var want []timerEntry
	var h timerHeap
	for i := 0; i < 500; i++ {
		e := timerEntry{deadline: int64(r.IntN(20)), key: sessionTimerKey("g"+strconv.Itoa(r.IntN(7)), "m"+strconv.Itoa(i))}
		want = append(want, e)
		h.push(e)
	}
	built := slices.Clone(want)
	timerHeap(built).init()
	slices.SortFunc(want, func(a, b timerEntry) int {
		if a.deadline != b.deadline {
			return int(a.deadline - b.deadline)
		}
		return compareKeys(a.key, b.key)
	})
	for name, hp := range map[string]*timerHeap{"pushed": &h, "init": (*timerHeap)(&built)} {
		for i, w := range want {
			if (*hp)[0] != w {
				t.Fatalf("%s: entry %d = %+v, want %+v", name, i, (*hp)[0], w)
			}
			hp.pop()
		}
		if len(*hp) != 0 {
			t.Fatalf("%s: %d entries left", name, len(*hp))
		}
	}
}

// timerTestKind is a timer kind only TestTimersMovedLater arms; its
// handler records what fired.
const timerTestKind timerKind = 200

var firedTestTimers []TimerKey

func init() {
	registerTimerKind(timerTestKind, func(_ *Coordinator, t timer) { firedTestTimers = append(firedTestTimers, t.key) })
}

// TestTimersMovedLater: timers moved later keep their old heap entry
// (a steady heartbeat re-arming its session timer pushes nothing), yet
// every timer fires at its current deadline, in (deadline, key) order,
// and NextDeadline is always the earliest current deadline — against a
// model of the timer map under random arms (earlier and later),
// cancellations and ticks.
func TestTimersMovedLater(t *testing.T) {
	c, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	model := map[TimerKey]int64{}
	now := int64(0)
	for step := range 20000 {
		key := TimerKey{keyStreamsSession, "g", "m" + strconv.Itoa(r.IntN(40))}
		c.begin(now)
		switch op := r.IntN(10); {
		case op < 7:
			d := now + int64(r.IntN(60))
			c.setTimer(timer{key: key, deadline: d, group: key.group, member: key.member, kind: timerTestKind})
			model[key] = d
		case op < 8:
			c.cancelTimer(key)
			delete(model, key)
		default:
			now += int64(r.IntN(8))
		}
		c.end()
		c.Commit()
		// DeadlineBound, asked before anything moves the heap's entries,
		// is set when a timer is and no later than the earliest.
		if bound, ok := c.DeadlineBound(); ok != (len(model) > 0) || ok && bound > slices.Min(slices.Collect(maps.Values(model))) {
			t.Fatalf("step %d: DeadlineBound %d %v, timers %v", step, bound, ok, model)
		}
		var want []timerEntry
		for k, d := range model {
			if d <= now {
				want = append(want, timerEntry{d, k})
				delete(model, k)
			}
		}
		slices.SortFunc(want, func(a, b timerEntry) int {
			if a.deadline != b.deadline {
				return int(a.deadline - b.deadline)
			}
			return compareKeys(a.key, b.key)
		})
		firedTestTimers = nil
		c.tick(now)
		c.Commit()
		if len(firedTestTimers) != len(want) {
			t.Fatalf("step %d at %d: fired %v, want %v", step, now, firedTestTimers, want)
		}
		for i, w := range want {
			if firedTestTimers[i] != w.key {
				t.Fatalf("step %d at %d: fired %v, want %v", step, now, firedTestTimers, want)
			}
		}
		next, ok := c.NextDeadline()
		min, any := int64(0), false
		for _, d := range model {
			if !any || d < min {
				min, any = d, true
			}
		}
		if ok != any || next != min {
			t.Fatalf("step %d: NextDeadline %d %v, want %d %v", step, next, ok, min, any)
		}
	}
	// A timer re-armed later again and again adds no heap entry.
	key := sessionTimerKey("g", "steady")
	before := len(c.timerHeap)
	for i := range 10000 {
		c.begin(now + int64(i))
		c.setTimer(timer{key: key, deadline: now + int64(i) + 45000, group: "g", member: "steady", kind: timerTestKind})
		c.end()
		c.Commit()
		if n := len(c.timerHeap); n > before+1 {
			t.Fatalf("%d heap entries after %d re-arms of one timer, %d before", n, i+1, before)
		}
	}
}
