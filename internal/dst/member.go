package dst

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
)

// hbMember is what the streams and the consumer-group clients share: a
// member that heartbeats with its epoch and the set (of K: tasks or
// partitions) it owns, and misbehaves the same ways — it revokes late
// (lateBy heartbeats after an assignment took something away), retries a
// failed request as it was (lastReq, of type R), has its stale resends
// accepted, and vanishes without leaving.
type hbMember[K comparable, R any] struct {
	name, group string
	incarnation int
	memberID    string
	joined      bool
	epoch       int32
	owned       map[K]bool
	lateDrop    map[K]int
	lateBy      int
	lastReq     *R
	waiting     bool // a request is in flight
	retry       bool // the last request failed: send it again as it was
	gone        bool // vanished without leaving
	// staleSeen: the coordinator accepted a stale resend of this member's
	// heartbeat, so it may believe the member owns less than it does.
	staleSeen bool
}

func (m *hbMember[K, R]) reset() {
	m.joined, m.epoch, m.staleSeen, m.owned, m.lateDrop = false, 0, false, map[K]bool{}, nil
}

// wake reports whether the member acts now: not while a request of it is
// in flight; a vanished member comes back one time in four, as a new
// member. A member that acts has a member id.
func (m *hbMember[K, R]) wake(s *sim) bool {
	if m.waiting {
		return false
	}
	if m.gone {
		if s.rng.IntN(4) > 0 {
			return false
		}
		m.gone, m.retry, m.lastReq = false, false, nil
		m.reset()
		m.memberID = ""
	}
	if m.memberID == "" {
		m.incarnation++
		m.memberID = fmt.Sprintf("%s-%d", m.name, m.incarnation)
	}
	return true
}

// takeRetry returns the failed request to send again, if any.
func (m *hbMember[K, R]) takeRetry() *R {
	if !m.retry || m.lastReq == nil {
		return nil
	}
	m.retry = false
	return m.lastReq
}

// leaving: a member that sent a leave heartbeat has closed what it owned;
// it comes back later as a new member.
func (m *hbMember[K, R]) leaving() {
	m.reset()
	m.gone = true
}

// wrap makes one heartbeat of member (the member id it was sent with) a
// call. A call the member waits for is applied (apply) when its response
// comes and is still the member's own; a failed one is sent again.
func (m *hbMember[K, R]) wrap(what, member string, wait bool, run func(*core.Coordinator, int64, core.RequestID) core.Output,
	check, apply func(kmsg.Response)) *call {
	incarnation := m.incarnation
	mine := func() bool { return wait && m.memberID == member && m.incarnation == incarnation && !m.gone }
	if wait {
		m.waiting = true
	}
	return guardedCall(m.group, what, run, check, mine,
		func(msg kmsg.Response) {
			m.waiting = false
			apply(msg)
		},
		func() { m.waiting, m.retry = false, true })
}

// accepted notes a response the coordinator gave to one of member's
// heartbeats: a stale resend (one the member did not wait for) that
// succeeded sets staleSeen.
func (m *hbMember[K, R]) accepted(wait bool, member string, code int16, epoch int32) {
	if !wait && code == 0 && epoch >= 0 && member == m.memberID {
		m.staleSeen = true
	}
}

// adoptResponse applies a heartbeat response: fencing loses everything
// (the member rejoins), a success sets the epoch and, when next is not
// nil (nil: unchanged), the new assignment.
func (m *hbMember[K, R]) adoptResponse(code int16, epoch int32, next map[K]bool) {
	switch code {
	case 0:
	case 110, 25: // FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID: drop everything, rejoin
		m.reset()
		return
	default:
		return
	}
	if epoch < 0 {
		return
	}
	m.joined, m.epoch = true, epoch
	if next == nil {
		return
	}
	if m.owned == nil {
		m.owned = map[K]bool{}
	}
	if m.lateDrop == nil {
		m.lateDrop = map[K]int{}
	}
	adopt(m.owned, m.lateDrop, next, m.lateBy)
}

// adopt installs a new assignment next over owned: what next no longer
// holds is dropped at once, or by a late revoker lateBy heartbeats later
// (lateDrop counts them down).
func adopt[K comparable](owned map[K]bool, lateDrop map[K]int, next map[K]bool, lateBy int) {
	for k := range owned {
		if !next[k] {
			if lateBy == 0 {
				delete(owned, k)
			} else if _, ok := lateDrop[k]; !ok {
				lateDrop[k] = lateBy
			}
		}
	}
	for k := range next {
		owned[k] = true
		delete(lateDrop, k)
	}
}

// countDown is one heartbeat of a late revoker: what it has revoked late
// enough is dropped.
func countDown[K comparable](owned map[K]bool, lateDrop map[K]int) {
	for k := range lateDrop {
		if lateDrop[k]--; lateDrop[k] <= 0 {
			delete(lateDrop, k)
			delete(owned, k)
		}
	}
}
