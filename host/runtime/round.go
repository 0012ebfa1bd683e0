package runtime

import (
	"fmt"
	"slices"
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
}

// work runs p on a worker: it settles the appends that ended, steps one
// round if the pipeline has room, and releases the partition.
func (p *partition) work() {
	p.settle()
	p.mu.Lock()
	var evs []Event
	if p.canStepLocked() {
		evs = p.takeLocked()
	}
	sh := p.shard
	p.mu.Unlock()
	if len(evs) > 0 {
		p.round(sh, evs)
	}
	p.release()
}

// canStepLocked reports whether the owner may step a new round: events
// are queued, the pipeline has room, no failed append waits for its
// rollback, and the queue's head does not wait for the rounds in flight.
func (p *partition) canStepLocked() bool {
	if len(p.queue) == 0 || p.stopping != nil {
		return false
	}
	if len(p.inflight) == 0 {
		p.barrier = false
		return p.failed == nil
	}
	appends := 0 // rounds without records need none and do not count
	for _, r := range p.inflight {
		if !r.done || r.err != nil {
			appends++
		}
	}
	return !p.barrier && p.failed == nil && appends < p.depth
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
func (p *partition) release() {
	for {
		p.mu.Lock()
		if p.settleableLocked() {
			p.mu.Unlock()
			p.settle()
			continue
		}
		if p.stopping != nil && len(p.inflight) == 0 {
			p.mu.Unlock()
			p.unload()
			return
		}
		p.armTimerLocked(p.shard)
		if p.canStepLocked() {
			p.rt.ready <- p // still owned; capacity Partitions: never blocks
		} else {
			p.scheduled = false
		}
		p.mu.Unlock()
		return
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
// does not wait for the events stepped after it and their append. A Read
// waits for every round before it: the round ends before the Read, which
// goes back to the head of the queue until the pipeline is empty.
func (p *partition) round(sh Shard, evs []Event) {
	var recs []Record
	for i, ev := range evs {
		if u, ok := ev.Input.(unload); ok {
			p.seal(sh, recs, nil)
			p.mu.Lock()
			p.stopping = &u
			p.mu.Unlock()
			p.rejectLater(evs[i+1:])
			return
		}
		if p.settleable() && p.settle() {
			recs = nil
		}
		if ev.Read && (len(recs) > 0 || p.inFlight()) {
			p.seal(sh, recs, nil)
			p.putBack(evs[i:])
			return
		}
		if ev.Read {
			commit(sh)
		}
		out, err := p.step(sh, ev.Input)
		switch {
		case err != nil && p.inFlight():
			// The rounds in flight may still commit: this one is rolled
			// back after them, and the events after it wait until then.
			p.seal(sh, nil, err)
			p.putBack(evs[i+1:])
			return
		case err != nil:
			sh.Rollback(err)
			recs = nil
		default:
			recs = append(recs, out...)
			if len(recs) == 0 && i < len(evs)-1 {
				p.seal(sh, nil, nil)
			}
		}
	}
	p.seal(sh, recs, nil)
}

// putBack returns evs, the rest of a round, to the head of the queue; the
// next round starts once no round is in flight.
func (p *partition) putBack(evs []Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queue = append(slices.Clip(evs), p.queue...)
	p.barrier = true
}

// commit seals the round stepped so far and commits it: nothing of it, or
// before it, waits for an append.
func commit(sh Shard) {
	if s, ok := sh.(Sealer); ok {
		if f := s.Seal(); f != nil {
			f()
		}
	}
	sh.Commit()
}

// seal ends the round being stepped. A round that wrote nothing while
// nothing is in flight is committed at once; any other joins the pipeline
// and is appended after the rounds before it (err: it is never appended
// but rolled back with err once they are committed).
func (p *partition) seal(sh Shard, recs []Record, err error) {
	p.mu.Lock()
	if len(recs) == 0 && err == nil && len(p.inflight) == 0 {
		p.mu.Unlock()
		commit(sh)
		return
	}
	p.mu.Unlock()
	r := &sealed{recs: recs, err: err, done: len(recs) == 0 && err == nil}
	if s, ok := sh.(Sealer); ok {
		r.durable = s.Seal()
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
		var recs []Record
		for _, r := range rs {
			r.writing = true
			recs = append(recs, r.recs...)
		}
		p.mu.Unlock()
		err := rs[0].err
		if err == nil {
			err = p.rt.cfg.Log.Append(p.id, recs)
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
			p.release()
		}
		if err != nil {
			return
		}
	}
}

// nextAppendLocked returns the rounds of the next append: every round
// waiting for one, in order, up to a refused round, which goes alone.
func (p *partition) nextAppendLocked() []*sealed {
	var rs []*sealed
	for _, r := range p.inflight {
		if r.done || r.writing {
			continue
		}
		if r.err != nil {
			if len(rs) == 0 {
				rs = append(rs, r)
			}
			break
		}
		rs = append(rs, r)
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
	if p.timer != nil {
		p.timer.Stop()
	}
	p.mu.Unlock()
	sh.Unload()
	p.rejectLater(rest)
	close(stopping.done)
}

// step hands one input to the shard and validates what it wrote. A record
// the log can never store fails the round (no append is tried), so the
// record never reaches a write shared with other partitions.
func (p *partition) step(sh Shard, in any) ([]Record, error) {
	out := sh.Step(p.now(), in)
	for _, r := range out {
		if err := p.rt.cfg.Log.Validate(r); err != nil {
			return nil, fmt.Errorf("partition %d: %w", p.id, err)
		}
	}
	return out, nil
}
