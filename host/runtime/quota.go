package runtime

import (
	"sync"
	"sync/atomic"
	"time"
)

// QuotaWindow is the window over which a key's step time is measured
// against Config.QuotaPercent.
const QuotaWindow = time.Second

// DefaultQuotaPercent is Config.QuotaPercent's default.
const DefaultQuotaPercent = 5

// DefaultMaxThrottle is Config.MaxThrottle's default.
const DefaultMaxThrottle = time.Second

// quota measures the step time each key used in its partition over the
// current and the previous QuotaWindow (Kafka's request quota, by step
// time instead of request-handler time). A key over its share is
// throttled for the time that brings its rate back to the share — but
// only if, in those windows, one of its steps delayed other work: an
// event of another key waited in its partition, or another partition
// waited for a worker, while it was stepped. The quota is
// work-conserving: a key alone on an idle runtime is never throttled,
// however much of its partition it uses (a large group's ordinary
// heartbeats harm no one then).
type quota struct {
	share float64 // of QuotaWindow, 0 < share ≤ 1; 0: no quota
	max   time.Duration
	mu    sync.Mutex
	start time.Time // of the current window
	cur   map[string]use
	prev  map[string]use
	// delayedCur and delayedPrev: some key's step delayed other work in
	// the current and the previous window; mayThrottle is their or, read
	// without mu, so that while no key held anyone up (every key's
	// throttle is then 0) a throttle costs no lock or clock read.
	delayedCur, delayedPrev bool
	mayThrottle             atomic.Bool
}

// use is what a key used of its partition in one window: the time
// charged to it, and whether one of its steps delayed other work.
type use struct {
	spent   time.Duration
	delayed bool
}

func newQuota(percent float64, maxThrottle time.Duration) *quota {
	if percent <= 0 || percent >= 100 {
		return &quota{}
	}
	return &quota{share: percent / 100, max: maxThrottle, cur: map[string]use{}, prev: map[string]use{}}
}

// on reports whether the quota is measured at all.
func (q *quota) on() bool { return q != nil && q.share > 0 }

// roll starts a new window when now has left the current one; memory is
// bounded by the keys stepped in two windows.
func (q *quota) roll(now time.Time) {
	switch d := now.Sub(q.start); {
	case d < QuotaWindow:
	case d < 2*QuotaWindow:
		q.prev, q.cur = q.cur, make(map[string]use, len(q.cur))
		q.start = q.start.Add(QuotaWindow)
		q.delayedPrev, q.delayedCur = q.delayedCur, false
		q.mayThrottle.Store(q.delayedPrev)
	default:
		clear(q.prev)
		q.cur = make(map[string]use)
		q.start = now
		q.delayedPrev, q.delayedCur = false, false
		q.mayThrottle.Store(false)
	}
}

// record charges d of time, ending at now, to key: time its work took
// on or off the partition's workers. Only step (delayed) says whether
// the key held others up.
func (q *quota) record(key string, now time.Time, d time.Duration) {
	q.step(key, now, d, false)
}

// chargeAppend charges took, the time appending recs cost, to the keys
// that own them, each its records' share of their bytes; the share of
// records of no owner is charged to nobody. Like record, it never by
// itself makes a key delay anyone: a key whose own appends are slow is
// throttled only once one of its steps held others up.
func (q *quota) chargeAppend(recs []Record, now time.Time, took time.Duration) {
	if !q.on() || took <= 0 {
		return
	}
	total, owned := 0, map[string]int{}
	for _, r := range recs {
		n := len(r.Key) + len(r.Value)
		total += n
		if r.Owner != "" {
			owned[r.Owner] += n
		}
	}
	for key, n := range owned {
		q.record(key, now, time.Duration(float64(took)*float64(n)/float64(max(total, 1))))
	}
}

// step charges d of step time, ending at now, to key; delayed: other
// work waited meanwhile (partition.delaysOthers).
func (q *quota) step(key string, now time.Time, d time.Duration, delayed bool) {
	if !q.on() || key == "" {
		return
	}
	q.mu.Lock()
	q.roll(now)
	u := q.cur[key]
	u.spent += d
	u.delayed = u.delayed || delayed
	q.cur[key] = u
	if delayed && !q.delayedCur {
		q.delayedCur = true
		q.mayThrottle.Store(true)
	}
	q.mu.Unlock()
}

// throttle returns how long key's client should wait before its next
// request: 0 while key used at most its share over the last window
// (the previous window weighted by how much of it the last window still
// covers) or none of its steps in the two windows delayed other work,
// else the time after which that use is its share — at most max.
func (q *quota) throttle(key string, now time.Time) time.Duration {
	if !q.on() || key == "" {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.roll(now)
	cur, prev := q.cur[key], q.prev[key]
	if !cur.delayed && !prev.delayed {
		return 0
	}
	elapsed := now.Sub(q.start)
	overlap := float64(QuotaWindow-elapsed) / float64(QuotaWindow)
	used := float64(cur.spent) + overlap*float64(prev.spent)
	over := used - q.share*float64(QuotaWindow)
	if over <= 0 {
		return 0
	}
	return min(time.Duration(over/q.share), q.max)
}

// overAt returns whether a key is over its share at now, each key
// looked up once (a round's take asks for every queued event).
func (q *quota) overAt(clock func() time.Time) func(key string) bool {
	if !q.on() {
		return func(string) bool { return false }
	}
	now := clock()
	seen := map[string]bool{}
	return func(key string) bool {
		over, ok := seen[key]
		if !ok {
			over = q.throttle(key, now) > 0
			seen[key] = over
		}
		return over
	}
}

// delaysOthers reports whether stepping an event of key holds other work
// up: an event of another key waits in p's queue, or another partition
// waits for a worker (every worker busy). Asked only while the quota is
// on.
func (p *partition) delaysOthers(key string) bool {
	if len(p.rt.ready) > 0 {
		return true
	}
	if p.keys.Load() == 0 {
		return false // no event waits in p's queue: no lock to take
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queued) > 1 || len(p.queued) == 1 && p.queued[key] == 0
}

// behind tells, for a round's events, whether an event of another key
// comes after the i-th: that event waits for the i-th's step.
type behind struct {
	n         int
	last      string // the key of the last event
	lastOther int    // the index of the last event of another key than last; -1: none
}

func newBehind(evs []Event) behind {
	b := behind{n: len(evs), lastOther: -1}
	if b.n == 0 {
		return b
	}
	b.last = evs[b.n-1].Key
	for i := b.n - 2; i >= 0; i-- {
		if evs[i].Key != b.last {
			b.lastOther = i
			break
		}
	}
	return b
}

// other reports whether an event of another key than key, the i-th's,
// follows the i-th.
func (b behind) other(i int, key string) bool {
	return i < b.n-1 && (key != b.last || i < b.lastOther)
}

// held reports whether ev is held back for its key's quota: its key is
// over it (throttled) and ev is not Spared.
func held(ev Event, throttled func(string) bool) bool {
	return !ev.Spared && throttled(ev.Key)
}

// perKey is how many events of one key a round takes: one of a key over
// its quota, else Config.MaxPerKey.
func (p *partition) perKey(throttled bool) int {
	if throttled {
		return 1
	}
	return p.rt.cfg.MaxPerKey
}

// Throttle returns how long the client of key's request on partition p
// should wait before its next one (Kafka's throttle_time_ms): 0 unless
// key used more than Config.QuotaPercent of the partition's step time
// over the last QuotaWindow and one of its steps then delayed other work
// (quota); at most Config.MaxThrottle.
func (r *Runtime) Throttle(p int, key string) time.Duration {
	if p < 0 || p >= len(r.parts) {
		return 0
	}
	q := r.parts[p].quota
	if !q.on() || !q.mayThrottle.Load() {
		return 0 // no key delayed others in the two windows (quota.throttle)
	}
	return q.throttle(key, r.cfg.Now())
}

// Charge adds d, time spent for key's request off the partition's workers
// (work done on the request's goroutine before it is queued), to key's use
// of partition p's quota.
func (r *Runtime) Charge(p int, key string, d time.Duration) {
	if p < 0 || p >= len(r.parts) {
		return
	}
	r.parts[p].quota.record(key, r.cfg.Now(), d)
}
