package core

// The undo log implements Kafka's timeline-snapshot semantics cheaply: every
// mutation of durable state made while applying a record, and every timer
// change, pushes a closure that reverts it. Commit forgets the log; Rollback
// runs it backwards. Cost is O(changes), independent of group size.

// onUndo registers fn to run if the current batch is rolled back.
func (c *Coordinator) onUndo(fn func()) {
	if c.replaying {
		return
	}
	c.undo = append(c.undo, fn)
}

// Commit tells the Coordinator that every record returned since the last
// Commit or Rollback is durable. Responses returned with them may now be
// released.
func (c *Coordinator) Commit() {
	c.undo = c.undo[:0]
	c.batchParked = c.batchParked[:0]
}

// Rollback reverts every record applied and timer changed since the last
// Commit, after the host failed to append them. The host fails the
// responses it holds for them. The returned Output lists parked requests
// that were dropped (Failed) and timer changes and assignor runs needed to
// resume from the durable state.
func (c *Coordinator) Rollback() Output {
	for i := len(c.undo) - 1; i >= 0; i-- {
		c.undo[i]()
	}
	c.undo = c.undo[:0]
	var out Output
	out.Failed = append(out.Failed, c.batchParked...)
	c.batchParked = c.batchParked[:0]
	c.out = &out
	c.afterRollback()
	c.out = nil
	return out
}
