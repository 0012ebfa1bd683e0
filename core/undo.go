package core

// The undo log implements Kafka's timeline-snapshot semantics cheaply: every
// mutation of durable state made while applying a record pushes a closure
// that reverts it, and every timer change the timer's previous state.
// Commit forgets the log; Rollback runs it backwards. Cost is O(changes),
// independent of group size.
//
// Several batches may be uncommitted at once (the host steps the next batch
// while the last one's append is in flight, as Kafka's CoordinatorRuntime
// does): Seal ends a batch, CommitSealed makes the oldest sealed batch final,
// and Rollback reverts every batch not committed. marks and parkedMarks hold
// where each sealed batch ends in undo and batchParked; sealed counts the
// batches ever sealed and committed how many of them are final, so a batch's
// number tells whether it is committed.

// undoEntry is one entry of the undo log: fn; or (fn nil, g set) a
// streams group's member or target to put back; or a timer to put back.
// The commonest changes — a heartbeat resetting its member's session
// timer, a member stored or removed, a target set — so need no closure
// allocated (onUndoTimer, putMember, removeMember, setTarget): a mass
// expiry makes several of them for every member it fences.
type undoEntry struct {
	fn    func()
	timer timerUndo
	g     *streamsGroup
	what  undoWhat
	// undoMember: old goes back in place of m (either may be nil).
	m, old *streamsMember
	// undoTarget: member's target goes back to target, or away (!had).
	member string
	target tasksTuple
	had    bool
}

// undoWhat says what an entry with a group puts back.
type undoWhat uint8

const (
	undoMember undoWhat = iota
	undoTarget
)

// timerUndo is what puts a timer back: its state before, if it had one.
type timerUndo struct {
	key TimerKey
	old timerState
	had bool
}

func (u *undoEntry) run(c *Coordinator) {
	switch {
	case u.fn != nil:
		u.fn()
	case u.g != nil && u.what == undoMember:
		u.g.swapMember(u.m, u.old)
		u.g.updateState()
	case u.g != nil:
		if u.had {
			u.g.target[u.member] = u.target
		} else {
			delete(u.g.target, u.member)
		}
		u.g.indexWarmupTarget(u.member)
	default:
		c.restoreTimer(u.timer.key, u.timer.old, u.timer.had)
	}
}

// onUndo registers fn to run if the current batch is rolled back.
func (c *Coordinator) onUndo(fn func()) {
	if c.replaying {
		return
	}
	c.undo = append(c.undo, undoEntry{fn: fn})
}

// onUndoTimer registers putting the timer with key back to old (or
// removing it, !had) if the current batch is rolled back.
func (c *Coordinator) onUndoTimer(key TimerKey, old timerState, had bool) {
	if c.replaying {
		return
	}
	c.undo = append(c.undo, undoEntry{timer: timerUndo{key, old, had}})
}

// runUndo runs the undo log backwards down to entry n and drops what ran.
func (c *Coordinator) runUndo(n int) {
	for i := len(c.undo) - 1; i >= n; i-- {
		c.undo[i].run(c)
	}
	clear(c.undo[n:])
	c.undo = c.undo[:n]
}

// Commit tells the Coordinator that every record returned since the last
// Commit or Rollback is durable, sealed or not. Responses returned with them
// may now be released.
func (c *Coordinator) Commit() {
	clear(c.undo)
	c.undo = c.undo[:0]
	c.batchParked = c.batchParked[:0]
	c.marks, c.parkedMarks = c.marks[:0], c.parkedMarks[:0]
	c.sealed++
	c.committed = c.sealed
}

// Seal ends the current batch: the records returned since the last Seal,
// Commit or Rollback are one batch that CommitSealed makes final on its
// own. Later calls build the next batch on top of its state.
func (c *Coordinator) Seal() {
	c.marks = append(c.marks, len(c.undo))
	c.parkedMarks = append(c.parkedMarks, len(c.batchParked))
	c.sealed++
}

// CommitSealed tells the Coordinator that the oldest sealed batch not yet
// committed is durable; the batches after it stay uncommitted. Without a
// sealed batch it does nothing.
func (c *Coordinator) CommitSealed() {
	if len(c.marks) == 0 {
		return
	}
	n, k := c.marks[0], c.parkedMarks[0]
	rest := copy(c.undo, c.undo[n:])
	clear(c.undo[rest:])
	c.undo = c.undo[:rest]
	c.batchParked = c.batchParked[:copy(c.batchParked, c.batchParked[k:])]
	c.marks = c.marks[:copy(c.marks, c.marks[1:])]
	c.parkedMarks = c.parkedMarks[:copy(c.parkedMarks, c.parkedMarks[1:])]
	for i := range c.marks {
		c.marks[i] -= n
		c.parkedMarks[i] -= k
	}
	c.committed++
}

// dropParked forgets a parked request answered before its batch ended.
func (c *Coordinator) dropParked(id RequestID) {
	for i, p := range c.batchParked {
		if p != id {
			continue
		}
		c.batchParked = append(c.batchParked[:i:i], c.batchParked[i+1:]...)
		for j, m := range c.parkedMarks {
			if m > i {
				c.parkedMarks[j]--
			}
		}
		return
	}
}

// Rollback reverts every record applied and timer changed since the last
// Commit, in every batch not committed, after the host failed to append
// them. The host fails the responses it holds for them. The returned Output
// lists parked requests that were dropped (Failed) and timer changes and
// assignor runs needed to resume from the durable state.
func (c *Coordinator) Rollback() Output {
	c.runUndo(0)
	c.marks, c.parkedMarks = c.marks[:0], c.parkedMarks[:0]
	c.sealed++
	c.committed = c.sealed
	var out Output
	out.Failed = append(out.Failed, c.batchParked...)
	c.batchParked = c.batchParked[:0]
	c.out = &out
	c.afterRollback()
	c.out = nil
	return out
}
