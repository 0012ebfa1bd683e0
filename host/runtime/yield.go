package runtime

import (
	goruntime "runtime"
	"slices"
	"time"
)

// DefaultYieldTime is Config.YieldTime's default.
const DefaultYieldTime = 50 * time.Microsecond

// roundKeys are the keys of a round's events, built the first time the
// round looks for waiting events.
type roundKeys map[string]bool

// joinWaiting adds to the round being stepped (evs, whose events from
// next on are still to step) the first queued event of each key the
// round holds none of, stepped next: a group whose event arrived while
// the round ran then waits for the step in progress, not for the rest of
// a flooded group's events in the round. It takes only the events queued
// before a Tick (a timer's event runs after the events queued before it
// fired, and before those queued after), none once an unload is queued,
// none of a key over its quota (ranked last anyway), no event without a
// key, only keys that hold nothing in flight while the pipeline is full
// (as takeLocked), and keeps the round within MaxBatch events. The events it takes
// leave the queue; each key's order is kept, since the round held no
// event of their keys.
func (p *partition) joinWaiting(evs []Event, next int, keys roundKeys) ([]Event, roundKeys) {
	p.mu.Lock()
	defer p.mu.Unlock()
	room := p.rt.cfg.MaxBatch - len(evs)
	if p.unloading || len(p.queue) == 0 || room <= 0 {
		return evs, keys
	}
	if keys == nil {
		keys = make(roundKeys, len(evs))
		for _, ev := range evs {
			keys[ev.Key] = true
		}
	}
	var throttled func(string) bool
	full := p.pipelineFullLocked()
	var joined []Event
	kept := p.queue[:0]
	for i, ev := range p.queue {
		if _, tick := ev.Input.(Tick); tick || len(joined) == room {
			kept = append(kept, p.queue[i:]...)
			break
		}
		if ev.Key == "" || keys[ev.Key] {
			kept = append(kept, ev)
			continue
		}
		if throttled == nil {
			throttled = p.quota.overAt(p.rt.cfg.Now)
		}
		keys[ev.Key] = true // its later events stay queued, in order
		if held(ev, throttled) || full && !p.independentLocked(ev.Key) {
			kept = append(kept, ev)
			continue
		}
		joined = append(joined, ev)
	}
	if len(joined) == 0 {
		return evs, keys
	}
	clear(p.queue[len(kept):])
	p.queue = kept
	p.countLocked(joined, -1)
	return slices.Insert(evs, next, joined...), keys
}

// yieldIfReleased lets the goroutines waiting for a core run before the
// owner's next step, if the owner released a response since it last
// yielded. A response goes to its request's goroutine through a channel,
// and Go runs the goroutine it wakes next on the waker's core, but only
// once the waker blocks or is preempted: an owner stepping a flooded
// group's events, or a worker taking turn after turn of a flooded
// partition (it blocks only when no partition waits), kept a released
// heartbeat waiting for the rest of its round, or for Go's 10 ms
// preemption, while the other cores ran other work. The owner yields
// before its next step in the round, and a worker after its turn
// (Runtime.worker); the steps, their order and the rounds are the same.
func (p *partition) yieldIfReleased() {
	if p.released {
		p.released = false
		goruntime.Gosched()
	}
}

// tickYield is a Tick's Yield: the owner yields its core, at most once
// every YieldTime of the Tick's step. A group's request does not wait in
// the queue until its goroutine has run to queue it, and a goroutine
// woken meanwhile (a client's timer, a connection's read) runs next on
// the owner's core, but only once the owner blocks or is preempted
// (10 ms), unless another core is idle and takes it: while a slice of a
// mass expiry ran on a core, with the other busy (a collector's mark
// worker takes one of two), a heartbeat was queued only after the whole
// slice, and Waiting never saw it. Neither a round between its steps
// (joinWaiting) nor a Tick writing the parts of an assignor's result
// yields so: between a flood's steps, or its result's parts, the yield
// handed the core to the flood's own goroutines (an in-process client
// building its next join ran up to Go's 10 ms preemption), and the
// canary on the flood's partition came out worse.
func (p *partition) tickYield() {
	if now := p.rt.cfg.Now(); now.Sub(p.looked) >= p.rt.cfg.YieldTime {
		goruntime.Gosched()
		p.looked = now
	}
}

// yieldsBeforeReleaseLocked reports whether a worker that released a
// response in its turn yields its core before it ends the turn (release),
// rather than after (Runtime.worker): when the partition has more to do
// at once — it can step again, so the turn hands it to the pool, or its
// shard's next deadline is due, so the turn arms a timer that is due. A
// response goes to its goroutine through a channel, and Go runs the
// goroutine it wakes next on the waker's core, but a goroutine readied
// after it on that core runs first: a worker parked on the pool, woken
// by the hand-off, or the goroutine of a due timer (time.AfterFunc),
// which the scheduler starts at the worker's yield, before the answered
// goroutine, and which queues the Tick and wakes a worker for it. In a
// mass expiry the answered heartbeat then waited for the next slice's
// first Tick yield (55-90 µs). With nothing more to do at once the
// partition is let go first, as before: yielding while still owning an
// idle partition would queue a request that its own goroutine could
// step.
func (p *partition) yieldsBeforeReleaseLocked() bool {
	return p.canStepLocked() || p.dueLocked()
}

// dueLocked reports whether the shard's next deadline has passed: its
// bound first (DeadlineBounder), which is no later than the deadline and
// costs the shard no work.
func (p *partition) dueLocked() bool {
	now := p.now()
	if b, ok := p.shard.(DeadlineBounder); ok {
		if lb, ok := b.DeadlineBound(); !ok || lb > now {
			return false
		}
	}
	at, ok := p.shard.NextDeadline()
	return ok && at <= now
}
