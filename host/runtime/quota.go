package runtime

import (
	"sync"
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
// throttled for the time that brings its rate back to the share.
type quota struct {
	share float64 // of QuotaWindow, 0 < share ≤ 1; 0: no quota
	max   time.Duration
	mu    sync.Mutex
	start time.Time // of the current window
	cur   map[string]time.Duration
	prev  map[string]time.Duration
}

func newQuota(percent float64, maxThrottle time.Duration) *quota {
	if percent <= 0 || percent >= 100 {
		return &quota{}
	}
	return &quota{share: percent / 100, max: maxThrottle, cur: map[string]time.Duration{}, prev: map[string]time.Duration{}}
}

// roll starts a new window when now has left the current one; memory is
// bounded by the keys stepped in two windows.
func (q *quota) roll(now time.Time) {
	switch d := now.Sub(q.start); {
	case d < QuotaWindow:
	case d < 2*QuotaWindow:
		q.prev, q.cur = q.cur, make(map[string]time.Duration, len(q.cur))
		q.start = q.start.Add(QuotaWindow)
	default:
		clear(q.prev)
		q.cur = make(map[string]time.Duration)
		q.start = now
	}
}

// record charges d of step time, ending at now, to key.
func (q *quota) record(key string, now time.Time, d time.Duration) {
	if q == nil || q.share == 0 || key == "" {
		return
	}
	q.mu.Lock()
	q.roll(now)
	q.cur[key] += d
	q.mu.Unlock()
}

// throttle returns how long key's client should wait before its next
// request: 0 while key used at most its share over the last window
// (the previous window weighted by how much of it the last window still
// covers), else the time after which that use is its share — at most max.
func (q *quota) throttle(key string, now time.Time) time.Duration {
	if q == nil || q.share == 0 || key == "" {
		return 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	q.roll(now)
	elapsed := now.Sub(q.start)
	overlap := float64(QuotaWindow-elapsed) / float64(QuotaWindow)
	used := float64(q.cur[key]) + overlap*float64(q.prev[key])
	over := used - q.share*float64(QuotaWindow)
	if over <= 0 {
		return 0
	}
	return min(time.Duration(over/q.share), q.max)
}

// overAt returns whether a key is over its share at now, each key
// looked up once (a round's take asks for every queued event).
func (q *quota) overAt(clock func() time.Time) func(key string) bool {
	if q == nil || q.share == 0 {
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
// over the last QuotaWindow; at most Config.MaxThrottle.
func (r *Runtime) Throttle(p int, key string) time.Duration {
	if p < 0 || p >= len(r.parts) {
		return 0
	}
	return r.parts[p].quota.throttle(key, r.cfg.Now())
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
