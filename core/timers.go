package core

import (
	"container/heap"
	"fmt"
	"sort"
)

// Timers are data: a timer is a key, a deadline (epoch ms) and what to do.
// Setting a key that exists replaces it, as in Kafka's timer. Tick(now)
// fires every due timer in (deadline, key) order. Each group kind registers
// its timer kinds' handlers from its own file (registerTimerKind); streams
// kinds are 1–15, classic kinds take 16–31.
type timerKind uint8

// Streams timer kinds.
const (
	timerStreamsSession      timerKind = 1 // session-timeout-<group>-<member>
	timerStreamsRebalance    timerKind = 2 // rebalance-timeout-<group>-<member>
	timerStreamsInitialDelay timerKind = 3 // initial-rebalance-timeout-<group>
	timerStreamsAssignWait   timerKind = 4 // assignor-wait-<group>: release parked heartbeats
	timerStreamsTargetSlice  timerKind = 5 // target-slice-<group>: write the next members' targets (streams_target_slices.go)
	timerStreamsProbe        timerKind = 9 // probing-rebalance-<group>: re-run the assignor (streams_warmup.go)
)

type timer struct {
	key      string
	deadline int64
	group    string
	member   string
	epoch    int32 // the member epoch captured when a rebalance timeout was set
	kind     timerKind
}

var timerKinds = map[timerKind]func(c *Coordinator, t timer){}

// registerTimerKind installs the handler of a timer kind.
func registerTimerKind(k timerKind, fire func(c *Coordinator, t timer)) {
	if _, dup := timerKinds[k]; dup {
		panic(fmt.Sprintf("core: timer kind %d registered twice", k))
	}
	timerKinds[k] = fire
}

// timerHeap orders timer entries by (deadline, key). Entries are lazy: an
// entry whose deadline no longer matches the timer map is stale and skipped,
// so replacing, cancelling and undoing timers never searches the heap.
type timerHeap []timerEntry

type timerEntry struct {
	deadline int64
	key      string
}

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	if h[i].deadline != h[j].deadline {
		return h[i].deadline < h[j].deadline
	}
	return h[i].key < h[j].key
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(timerEntry)) }
func (h *timerHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// live reports whether a heap entry still describes a scheduled timer.
func (c *Coordinator) live(e timerEntry) bool {
	t, ok := c.timers[e.key]
	return ok && t.deadline == e.deadline
}

// indexTimer records t in the heap, rebuilding it when stale entries
// reach half the live ones (a session timer re-armed by every heartbeat
// leaves one stale entry each time; a rebuild every n/2 pushes keeps the
// cost per push constant).
func (c *Coordinator) indexTimer(t timer) {
	heap.Push(&c.timerHeap, timerEntry{t.deadline, t.key})
	if len(c.timerHeap) > len(c.timers)+len(c.timers)/2+64 {
		h := make(timerHeap, 0, len(c.timers)+len(c.timers)/2+65) // room until the next rebuild
		for k, t := range c.timers {
			h = append(h, timerEntry{t.deadline, k})
		}
		heap.Init(&h)
		c.timerHeap = h
	}
}

// peekTimer returns the earliest scheduled timer, dropping stale entries.
func (c *Coordinator) peekTimer() (timer, bool) {
	for len(c.timerHeap) > 0 {
		e := c.timerHeap[0]
		if c.live(e) {
			return c.timers[e.key], true
		}
		heap.Pop(&c.timerHeap)
	}
	return timer{}, false
}

// setTimer schedules t (replacing a timer with the same key), undoably.
func (c *Coordinator) setTimer(t timer) {
	old, had := c.timers[t.key]
	if had {
		// One copy of the key: a timer re-armed on every heartbeat would
		// otherwise keep a fresh key string in each stale heap entry.
		t.key = old.key
		if t.group == old.group {
			t.group = old.group
		}
		if t.member == old.member {
			t.member = old.member
		}
	}
	c.timers[t.key] = t
	c.indexTimer(t)
	c.out.Timers = append(c.out.Timers, TimerChange{Key: t.key, Deadline: t.deadline})
	c.onUndo(func() { c.restoreTimer(t.key, old, had) })
}

// setTimerIfAbsent schedules t unless a timer with its key exists.
func (c *Coordinator) setTimerIfAbsent(t timer) {
	if _, ok := c.timers[t.key]; !ok {
		c.setTimer(t)
	}
}

// cancelTimer removes the timer with key, if any, undoably.
func (c *Coordinator) cancelTimer(key string) {
	old, had := c.timers[key]
	if !had {
		return
	}
	delete(c.timers, key)
	if c.out != nil {
		c.out.Timers = append(c.out.Timers, TimerChange{Key: key, Cancel: true})
	}
	c.onUndo(func() { c.restoreTimer(key, old, had) })
}

func (c *Coordinator) restoreTimer(key string, old timer, had bool) {
	if had {
		c.timers[key] = old
		c.indexTimer(old)
	} else {
		delete(c.timers, key)
	}
}

// timerDeadline returns the deadline of the timer with key, if scheduled.
func (c *Coordinator) timerDeadline(key string) (int64, bool) {
	t, ok := c.timers[key]
	return t.deadline, ok
}

// hasTimer reports whether a timer with key is scheduled.
func (c *Coordinator) hasTimer(key string) bool {
	_, ok := c.timers[key]
	return ok
}

// NextDeadline returns the earliest timer deadline, if any timer is set.
func (c *Coordinator) NextDeadline() (int64, bool) {
	t, ok := c.peekTimer()
	return t.deadline, ok
}

// tick fires every timer whose deadline is <= now, earliest first (ties by
// key), and returns what they produced.
func (c *Coordinator) tick(now int64) Output {
	c.begin(now)
	for {
		t, ok := c.peekTimer()
		if !ok || t.deadline > now {
			break
		}
		c.cancelTimer(t.key)
		timerKinds[t.kind](c, t)
	}
	return c.end()
}

// tickOne fires only the earliest due timer (ties by key), if any, and
// reports whether one fired. A host that answers assignor runs at once can
// call it in a loop, answering runs between timers, to sequence timers
// exactly as Kafka does (each of its timers is a separate write whose
// target assignment is computed inline).
func (c *Coordinator) tickOne(now int64) (Output, bool) {
	c.begin(now)
	t, ok := c.peekTimer()
	if ok && t.deadline <= now {
		c.cancelTimer(t.key)
		timerKinds[t.kind](c, t)
	} else {
		ok = false
	}
	return c.end(), ok
}

// TimerKeys lists scheduled timers as "key@deadline", sorted by key (for
// traces and tests).
func (c *Coordinator) TimerKeys() []string {
	out := make([]string, 0, len(c.timers))
	for _, t := range c.timers {
		out = append(out, fmt.Sprintf("%s@%d", t.key, t.deadline))
	}
	sort.Strings(out)
	return out
}
