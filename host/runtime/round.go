package runtime

import (
	"fmt"
	goruntime "runtime"
	"slices"
	"time"
)

// sealed is a round whose stepping is over: its records wait for their
// append, then for the Commit that makes the round final.
type sealed struct {
	recs []Record
	// err: the round holds a record the log refuses (it is never
	// appended), or its append failed.
	err error
	// writing: the appender took the round; done: its append is over (a
	// round without records is done when sealed).
	writing, done bool
	// durable is what Sealer.Seal returned, until it is called.
	durable func()
	// owners: the Record.Owner of its records; any: it holds a record of
	// no owner, or err (its state changes may reach any key).
	owners map[string]bool
	any    bool
	// bytes: the size of its records.
	bytes int
	// round numbers the round taken from the queue it was stepped in: a
	// round sealed in parts counts as one in the pipeline.
	round uint64
}

// taints reports whether the round may hold a change of key's state.
func (r *sealed) taints(key string) bool { return r.any || r.owners[key] }

// roundTaint is what the records of a round (or of the part of a round
// stepped so far) changed: the owners of its records, and whether one
// has none.
type roundTaint struct {
	owners map[string]bool
	any    bool
	bytes  int
}

func (t *roundTaint) add(recs []Record) {
	for _, r := range recs {
		t.bytes += len(r.Key) + len(r.Value)
		if r.Owner == "" {
			t.any = true
			continue
		}
		if t.owners == nil {
			t.owners = map[string]bool{}
		}
		t.owners[r.Owner] = true
	}
}

// work runs p on a worker: it settles the appends that ended, steps one
// round if the pipeline has room, and releases the partition. It reports
// whether the turn released a response since its last step (yield.go).
// A worker that released a response yields its core before it settles
// rounds that became durable meanwhile (yield.go); with nothing to
// settle it releases the partition first, unless the partition has more
// to do at once (release). Run inline by a request's
// submitter (Event.Inline), it settles nothing itself: the round steps the request before the commits
// when it may (stepsFirst), and the commits of the rounds that became
// durable go to the pool with the partition (handOff), so the request's
// answer waits for neither.
func (p *partition) work(worker bool) (yield bool) {
	if worker {
		p.settle()
	}
	p.mu.Lock()
	var evs []Event
	if p.canStepLocked() {
		var only func(string) bool
		if p.pipelineFullLocked() {
			only = p.independentLocked
		}
		evs = p.takeLocked(only)
	}
	sh := p.shard
	p.mu.Unlock()
	if len(evs) > 0 {
		p.round(sh, evs)
		if worker && p.settleable() {
			p.yieldIfReleased() // before the commits: the answer's goroutine needs none of them
		}
	}
	if !worker {
		return p.handOff()
	}
	return p.release(true)
}

// handOff ends an inline owner's turn (work): if a round became durable
// or an append failed meanwhile, the partition goes to the pool, still
// owned, and a worker settles it; else it is released as by a worker.
func (p *partition) handOff() (yield bool) {
	p.mu.Lock()
	if p.settleableLocked() {
		yield, p.released = p.released, false
		p.rt.ready <- p // capacity Partitions: never blocks
		p.mu.Unlock()
		return yield
	}
	p.mu.Unlock()
	return p.release(false)
}

// idleLocked reports whether ev, submitted to a partition with nothing
// queued and nobody stepping it, can be stepped as a round of its own
// right away (solo): no round is in flight (so nothing it could read
// waits for an append, and nothing to settle first), no failed append
// waits for its rollback, no unload is under way, and ev is not a Read
// (which commits first).
func (p *partition) idleLocked(ev Event) bool {
	return !ev.Read && len(p.inflight) == 0 && p.failed == nil && !p.unloading && p.stopping == nil
}

// solo steps ev on its submitter's goroutine as a round of its own, the
// partition idle (idleLocked) and owned by the caller: what work and
// round do for a round of one event with nothing in flight — the step,
// its quota charge, then a commit at once if it wrote no record, else
// the seal that appends it — without going through the queue, the
// settling of appends (there are none) or the checks for other keys'
// events in the round (there are none). A steady heartbeat at an idle
// partition, the commonest request, takes this path. Events queued
// meanwhile are handed to the pool by release, as after any round.
func (p *partition) solo(sh Shard, ev Event) {
	p.rounds++
	t0 := p.rt.cfg.Now()
	p.looked = t0
	out, err := p.step(sh, t0.UnixMilli(), ev.Input)
	at := t0                          // the latest reading of the clock, for release's timer check
	if ev.Key != "" && p.quota.on() { // quota.go; the event's Charge with its step
		t1 := p.since(t0)
		p.quota.step(ev.Key, t0, t1.Sub(t0)+ev.Charge, p.delaysOthers(ev.Key))
		at = t1
	}
	switch {
	case err != nil:
		sh.Rollback(err) // nothing in flight: only ev's changes
		p.commit(sh)     // what the rollback answered goes now
	case len(out) == 0:
		p.commit(sh)
	default:
		p.seal(sh, out, nil, false)
	}
	p.releaseAt(false, at)
}

// since returns the time on Config.Now at the end of a step that began
// at t0: with the real clock, t0 plus the monotonic time since, one
// clock read where time.Now takes two.
func (p *partition) since(t0 time.Time) time.Time {
	if p.rt.realClock {
		return t0.Add(time.Since(t0))
	}
	return p.rt.cfg.Now()
}

// canStepLocked reports whether the owner may step a new round: events
// are queued, no failed append waits for its rollback, the queue's head
// does not wait for the rounds in flight, and the pipeline has room or a
// queued event's key holds nothing in flight.
func (p *partition) canStepLocked() bool {
	if len(p.queue) == 0 || p.stopping != nil {
		return false
	}
	if len(p.inflight) == 0 {
		p.barrier = false
		return p.failed == nil
	}
	if p.barrier || p.failed != nil {
		return false
	}
	if !p.pipelineFullLocked() {
		return true
	}
	if p.depth == 1 || p.unloading {
		return false
	}
	return slices.ContainsFunc(p.queue, func(ev Event) bool { return p.independentLocked(ev.Key) })
}

// pipelineFullLocked reports whether Pipeline rounds wait for appends
// (rounds without records need none and do not count; the parts of a
// round sealed in parts count as one).
func (p *partition) pipelineFullLocked() bool {
	appends, last := 0, uint64(0)
	for _, r := range p.inflight {
		if (!r.done || r.err != nil) && (appends == 0 || r.round != last) {
			appends++
			last = r.round
		}
	}
	return appends >= p.depth
}

// stalledLocked reports whether, with nobody stepping the partition,
// its queued events wait for an append (the pipeline is full and none of
// their keys is independent) while an event of key would not: the next
// round is then key's event alone (work takes the independent events
// only), which its submitter can step as well as a worker.
func (p *partition) stalledLocked(key string) bool {
	return p.depth > 1 && !p.unloading && p.pipelineFullLocked() && p.independentLocked(key)
}

// independentLocked reports whether key's state is untouched by every
// round in flight: an event of key then depends on no record not yet
// durable, unless it writes one itself.
func (p *partition) independentLocked(key string) bool {
	if key == "" {
		return false
	}
	for _, r := range p.inflight {
		if r.taints(key) {
			return false
		}
	}
	return true
}

// settleableLocked reports whether settle has something to do.
func (p *partition) settleableLocked() bool {
	return p.failed != nil || len(p.inflight) > 0 && p.inflight[0].done
}

func (p *partition) settleable() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.settleableLocked()
}

// inFlight reports whether sealed rounds wait for their commit.
func (p *partition) inFlight() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.inflight) > 0
}

// release ends the owner's turn: it settles what ended meanwhile, then
// completes a stepped unload once nothing is in flight, or arms the timer
// and hands the partition back to the pool if it can step, or lets it go.
// A worker that released a response yields first when the partition has
// more to do at once (yieldsBeforeReleaseLocked, yield.go). It reports
// whether the owner released a response since it last yielded (yield.go).
func (p *partition) release(worker bool) (yield bool) {
	return p.releaseAt(worker, time.Time{})
}

// releaseAt is release with at, the owner's latest reading of the clock
// (zero: none), for the timer check (timerClock).
func (p *partition) releaseAt(worker bool, at time.Time) (yield bool) {
	for {
		p.mu.Lock()
		if p.settleableLocked() {
			p.mu.Unlock()
			p.settle()
			continue
		}
		if p.stopping != nil && len(p.inflight) == 0 {
			yield, p.released = p.released, false
			p.mu.Unlock()
			p.unload()
			return yield
		}
		if worker && p.released && p.yieldsBeforeReleaseLocked() {
			p.released = false
			p.mu.Unlock()
			goruntime.Gosched()
			continue
		}
		yield, p.released = p.released, false
		p.armTimerLocked(p.shard, at)
		if p.canStepLocked() {
			p.rt.ready <- p // still owned; capacity Partitions: never blocks
		} else {
			p.scheduled = false
		}
		p.mu.Unlock()
		return yield
	}
}

// settle commits, in order, the rounds at the head of the pipeline whose
// appends succeeded; after a failed one it rolls back every round not
// committed, the one being stepped too. Only p's owner calls it. It
// reports a rollback.
func (p *partition) settle() bool {
	p.mu.Lock()
	n := p.durablePrefixLocked()
	err := p.failed
	sh := p.shard
	hooks := p.durableLocked(n)
	if err != nil {
		p.inflight, p.failed = nil, nil // the appender has stopped
	} else {
		p.inflight = slices.Delete(p.inflight, 0, n)
	}
	p.mu.Unlock()
	for _, f := range hooks {
		f()
	}
	p.released = p.released || len(hooks) > 0
	for range n {
		sh.Commit()
	}
	if err != nil {
		sh.Rollback(err)
	}
	return err != nil
}

// durablePrefixLocked returns how many rounds at the head of the
// pipeline are durable.
func (p *partition) durablePrefixLocked() int {
	n := 0
	for n < len(p.inflight) && p.inflight[n].done && p.inflight[n].err == nil {
		n++
	}
	return n
}

// durableLocked takes the durable hooks not yet called of the first n
// rounds of the pipeline (removed already if settle took them).
func (p *partition) durableLocked(n int) []func() {
	var hooks []func()
	for _, r := range p.inflight[:n] {
		if r.durable != nil {
			hooks = append(hooks, r.durable)
			r.durable = nil
		}
	}
	return hooks
}

// round steps evs, a round taken from the queue, on top of the rounds in
// flight, and seals it. While the round has written no record, each event
// that wrote none ends a round of its own: committed at once if nothing is
// in flight, else right after the rounds in flight (as Kafka completes an
// event without records at the last written offset), so its response
// does not wait for the events stepped after it and their append; and if
// no round in flight holds a record of its key, its response is released
// at once (it depends on nothing not yet durable). An event whose key
// neither the round so far nor a round in flight wrote a record of is
// stepped after sealing the records before it (the parts of a round
// count as one round in the pipeline), so it can be answered at once
// too when it writes nothing, rather than after other groups' append
// (a canary's heartbeat behind a mass expiry's slice). A Read
// waits for every round before it: the round ends before the Read, which
// goes back to the head of the queue until the pipeline is empty. A round
// whose stepping time or record bytes pass RoundTime or MaxRoundBytes
// while another key's event waits in the queue ends after the event that
// passed them; its other events go back to the head of the queue, and
// the next round ranks them with the waiting ones. Before that, once a
// step ends YieldTime after the round began (or last looked), an event
// of a key the round holds none of that waits in the queue joins the
// round and is stepped next (yield.go). A Tick's timers look through
// Tick.Waiting, after yielding the owner's core (Tick.Yield, tickYield).
func (p *partition) round(sh Shard, evs []Event) {
	var recs []Record
	var cur roundTaint
	start := p.rt.cfg.Now()
	p.looked = start // when the round last looked for other keys' events
	var keys roundKeys
	var later behind // who waits behind each step, while the quota is on
	if p.quota.on() {
		later = newBehind(evs)
	}
	p.rounds++
	early := false
	deferred := false // the last step went before settling (stepsFirst)
	for i := 0; i < len(evs); i++ {
		ev := evs[i]
		if u, ok := ev.Input.(unload); ok {
			stopping := u // not &u: u would be allocated for every event
			p.seal(sh, recs, nil, false)
			p.mu.Lock()
			p.stopping = &stopping
			p.mu.Unlock()
			p.rejectLater(evs[i+1:])
			return
		}
		if !deferred && p.stepsFirst(ev, cur) {
			// The rounds that became durable are committed after ev, not
			// before: ev, an event of a group nothing in flight or in the
			// round so far touches (a canary's heartbeat joining a mass
			// expiry's slice), needs nothing of that commit, which for a
			// slice of 64 fenced members took 0.1-0.3 ms. At most one step
			// goes first in a row.
			deferred = true
		} else {
			deferred = false
			if p.settleable() && p.settle() {
				recs, cur = nil, roundTaint{}
			}
		}
		if ev.Read && (len(recs) > 0 || p.inFlight()) {
			p.seal(sh, recs, nil, false)
			p.putBack(evs[i:], true)
			return
		}
		if ev.Read {
			p.commit(sh)
		}
		clean := false // ev's state is untouched by anything not yet durable
		if len(recs) > 0 && p.untainted(ev, cur) {
			// The round so far wrote records of other keys only: it is
			// sealed here, so that ev, if it writes nothing, ends a round
			// of its own that depends on nothing in flight and is
			// answered at once, not after those records' append.
			p.seal(sh, recs, nil, false)
			recs, cur, clean = nil, roundTaint{}, true
		}
		p.yieldIfReleased() // yield.go
		t0 := p.rt.cfg.Now()
		out, err := p.step(sh, t0.UnixMilli(), ev.Input)
		t1 := p.since(t0)
		if ev.Key != "" && p.quota.on() { // quota.go
			p.quota.step(ev.Key, t0, t1.Sub(t0), later.other(i, ev.Key) || p.delaysOthers(ev.Key))
		}
		if _, tick := ev.Input.(Tick); tick || t1.Sub(p.looked) >= p.rt.cfg.YieldTime {
			n := len(evs)
			evs, keys = p.joinWaiting(evs, i+1, keys) // yield.go
			p.looked = t1
			if len(evs) != n && p.quota.on() {
				later = newBehind(evs)
			}
		}
		switch {
		case err != nil && p.inFlight():
			// The rounds in flight may still commit: this one is rolled
			// back after them, and the events after it wait until then.
			p.seal(sh, nil, err, false)
			p.putBack(evs[i+1:], true)
			return
		case err != nil:
			sh.Rollback(err)
			recs, cur = nil, roundTaint{}
		default:
			// A round sealed just before ev holds no record of its key,
			// so a clean ev needs no second look at the rounds in flight.
			early = len(recs) == 0 && len(out) == 0 && (clean || p.untainted(ev, cur))
			if len(recs) == 0 {
				recs = out // the step's array, not a copy: a Tick's slice of a mass expiry is hundreds of records
			} else {
				recs = append(recs, out...)
			}
			cur.add(out)
			if len(recs) == 0 && i < len(evs)-1 {
				p.seal(sh, nil, nil, early)
			}
		}
		if i < len(evs)-1 && (cur.bytes >= p.rt.cfg.MaxRoundBytes || p.rt.cfg.Now().Sub(start) >= p.rt.cfg.RoundTime) && p.othersQueued(ev.Key) {
			p.seal(sh, recs, nil, false)
			p.putBack(evs[i+1:], false)
			return
		}
	}
	p.seal(sh, recs, nil, early && len(recs) == 0)
}

// othersQueued reports whether an event of another key than key (events
// without a key count as one key) waits in the queue.
func (p *partition) othersQueued(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.ContainsFunc(p.queue, func(ev Event) bool { return ev.Key != key })
}

// groupWaiting reports whether an event with a key waits in the queue
// (Tick.Waiting).
func (p *partition) groupWaiting() bool { return p.othersQueued("") }

// untainted reports whether ev (not Shared) reads a state that neither
// cur, the round stepped so far, nor any round in flight changed: if it
// writes nothing it depends on no record not yet durable.
func (p *partition) untainted(ev Event, cur roundTaint) bool {
	if ev.Shared || cur.any || cur.owners[ev.Key] {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.independentLocked(ev.Key)
}

// stepsFirst reports whether ev may be stepped before the rounds that
// became durable are settled: no append failed (a rollback is settled
// first), ev is not a Read (it waits for every commit), and ev reads a
// state untouched by anything not yet durable (untainted).
func (p *partition) stepsFirst(ev Event, cur roundTaint) bool {
	if ev.Read || ev.Shared || cur.any || cur.owners[ev.Key] {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed == nil && p.independentLocked(ev.Key)
}

// putBack returns evs, the rest of a round, to the head of the queue;
// with barrier the next round starts once no round is in flight.
func (p *partition) putBack(evs []Event, barrier bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue = append(slices.Clip(evs), p.queue...)
	p.countLocked(evs, 1)
	p.barrier = p.barrier || barrier
}

// commit seals the round stepped so far and commits it: nothing of it, or
// before it, waits for an append.
func (p *partition) commit(sh Shard) {
	if f, ok := sh.(Finisher); ok && !p.rt.cfg.FullRounds {
		if f.Finish() {
			p.released = true
		}
		return
	}
	if s, ok := sh.(Sealer); ok {
		if f := s.Seal(); f != nil {
			f()
			p.released = true
		}
	}
	sh.Commit()
}

// seal ends the round being stepped. A round that wrote nothing while
// nothing is in flight is committed at once; any other joins the pipeline
// and is appended after the rounds before it (err: it is never appended
// but rolled back with err once they are committed). With early (a round
// without records whose events depend on nothing in flight) its durable
// function is called at once; the round is still committed in order.
func (p *partition) seal(sh Shard, recs []Record, err error, early bool) {
	p.mu.Lock()
	if len(recs) == 0 && err == nil && len(p.inflight) == 0 {
		p.mu.Unlock()
		p.commit(sh)
		return
	}
	p.mu.Unlock()
	r := &sealed{recs: recs, err: err, done: len(recs) == 0 && err == nil, round: p.rounds}
	var t roundTaint
	t.add(recs)
	r.owners, r.any, r.bytes = t.owners, t.any || err != nil, t.bytes
	if s, ok := sh.(Sealer); ok {
		r.durable = s.Seal()
	}
	if early && r.durable != nil {
		f := r.durable
		r.durable = nil
		f()
		p.released = true
	}
	p.mu.Lock()
	p.inflight = append(p.inflight, r)
	start := !r.done && !p.appending && p.failed == nil
	p.appending = p.appending || start
	p.mu.Unlock()
	if start {
		p.rt.wg.Add(1)
		go p.appendRounds()
	}
}

// appendRounds is p's appender: it appends the sealed rounds in order —
// the rounds sealed while an append was in flight go in one append (group
// commit), so a response waits for at most the append in flight and one
// more — and marks them done. The append may wait for the disk, so it
// runs on a goroutine of its own and the workers serve other partitions
// meanwhile. When nobody owns the partition it takes it over to commit
// (or roll back) at once. After a failure it appends nothing more: the
// owner rolls back every round not committed.
func (p *partition) appendRounds() {
	defer p.rt.wg.Done()
	for {
		p.mu.Lock()
		rs := p.nextAppendLocked()
		if len(rs) == 0 || p.failed != nil {
			p.appending = false
			p.mu.Unlock()
			return
		}
		recs := rs[0].recs // one round's records as they are, several's in one copy
		if len(rs) > 1 {
			n := 0
			for _, r := range rs {
				n += len(r.recs)
			}
			recs = make([]Record, 0, n)
			for _, r := range rs {
				recs = append(recs, r.recs...)
			}
		}
		for _, r := range rs {
			r.writing = true
		}
		p.mu.Unlock()
		err := rs[0].err
		if err == nil {
			err = p.append(recs)
		}
		p.mu.Lock()
		for _, r := range rs {
			r.writing, r.done, r.err = false, true, err
		}
		var hooks []func()
		if err != nil {
			p.failed, p.appending = err, false
		} else {
			hooks = p.durableLocked(p.durablePrefixLocked())
		}
		own := !p.scheduled
		p.scheduled = true
		p.mu.Unlock()
		for _, f := range hooks {
			f() // the responses go now, even while a worker steps the partition
		}
		if own {
			p.release(false)
		}
		if err != nil {
			return
		}
	}
}

// append appends recs to p's log; a TimedLog's time for them is charged
// to their owners (quota.chargeAppend).
func (p *partition) append(recs []Record) error {
	tl, ok := p.rt.cfg.Log.(TimedLog)
	if !ok || !p.quota.on() {
		return p.rt.cfg.Log.Append(p.id, recs)
	}
	took, err := tl.AppendTimed(p.id, recs)
	if err == nil {
		p.quota.chargeAppend(recs, p.rt.cfg.Now(), took)
	}
	return err
}

// nextAppendLocked returns the rounds of the next append: the rounds
// waiting for one, in order, up to a refused round, which goes alone,
// and up to MaxRoundBytes of records (at least one round).
func (p *partition) nextAppendLocked() []*sealed {
	var rs []*sealed
	bytes := 0
	for _, r := range p.inflight {
		if r.done || r.writing {
			continue
		}
		if r.err != nil || len(rs) > 0 && bytes+r.bytes > p.rt.cfg.MaxRoundBytes {
			if r.err != nil && len(rs) == 0 {
				rs = append(rs, r)
			}
			break
		}
		rs = append(rs, r)
		bytes += r.bytes
	}
	return rs
}

// unload completes a stepped unload once nothing is in flight: the
// shard's Unload, and the events queued meanwhile are rejected.
func (p *partition) unload() {
	p.mu.Lock()
	sh, stopping, rest := p.shard, p.stopping, p.queue
	p.state, p.shard, p.unloading, p.stopping, p.barrier = stateUnloaded, nil, false, nil, false
	p.queue, p.scheduled = nil, false
	clear(p.queued)
	p.keys.Store(0)
	if p.timer != nil {
		p.timer.Stop()
	}
	p.armedAt = 0
	p.mu.Unlock()
	sh.Unload()
	p.rejectLater(rest)
	close(stopping.done)
}

// step hands one input to the shard, at now (the step's start, in
// milliseconds of Config.Now), and validates what it wrote. A record
// the log can never store fails the round (no append is tried), so the
// record never reaches a write shared with other partitions.
func (p *partition) step(sh Shard, now int64, in any) ([]Record, error) {
	out := sh.Step(now, in)
	for _, r := range out {
		if err := p.rt.cfg.Log.Validate(r); err != nil {
			return nil, fmt.Errorf("partition %d: %w", p.id, err)
		}
	}
	return out, nil
}
