package cluster

import (
	"sync"
	"time"
)

// Clock is the monotonic clock a Lease reads. time.Now readings carry
// a monotonic component, so differences between them ignore wall-clock
// steps; tests inject a fake.
type Clock interface {
	Now() time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

// Lease is how long this node may still answer for the partitions the
// ownership group gave it. It is renewed with the time a heartbeat of
// the group was sent when the broker accepted it: the broker restarted
// the member's session timer on receiving it, which was no earlier than
// the send, so the broker cannot expire the member (and hand its
// partitions to another node) before sentAt + session timeout. The lease
// ends margin before that, which covers the time between a Valid check
// and the answer or forward it allows, and clock rate differences.
type Lease struct {
	clock Clock
	ttl   time.Duration // session timeout - margin

	mu      sync.Mutex
	renewed time.Time // send time of the last accepted heartbeat
	held    bool
	// floor: a heartbeat sent before it renews nothing (the last renewal,
	// or the moment the lease was dropped).
	floor time.Time
}

// NewLease returns an expired lease that Renew extends to
// session - margin past each renewal.
func NewLease(clock Clock, session, margin time.Duration) *Lease {
	if clock == nil {
		clock = systemClock{}
	}
	return &Lease{clock: clock, ttl: session - margin}
}

// Renew records that a heartbeat sent at sentAt (a reading of the
// lease's clock taken before the send) was accepted. An older sentAt
// than the last renewal changes nothing.
func (l *Lease) Renew(sentAt time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.floor.IsZero() || sentAt.After(l.floor) {
		l.renewed, l.floor, l.held = sentAt, sentAt, true
	}
}

// Drop ends the lease at once (the member left or lost the group); only
// a heartbeat sent afterwards renews it.
func (l *Lease) Drop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held, l.floor = false, l.clock.Now()
}

// Remaining returns how long the lease still holds (0 or less: expired).
func (l *Lease) Remaining() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.held {
		return 0
	}
	return l.ttl - l.clock.Now().Sub(l.renewed)
}

// Valid reports whether the lease holds now.
func (l *Lease) Valid() bool { return l.Remaining() > 0 }
