package sim

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// RestoreQuota is a Kafka client quota (consumer_byte_rate) on a process's
// restore consumer, and what the fetches it throttles cost. The process
// then restores through fetches paced as Kafka 4.4's broker paces them,
// not at a rate in records per second.
type RestoreQuota struct {
	// BytesPerS is the quota (consumer_byte_rate).
	BytesPerS int64 `json:"bytes_per_s"`
	// FetchMaxBytes bounds one fetch response (the restore consumer's
	// fetch.max.bytes and max.partition.fetch.bytes); a response carries
	// at least one record, as Kafka's does.
	FetchMaxBytes int64 `json:"fetch_max_bytes"`
	// RecordBytes is what one changelog offset costs a fetch response (its
	// share of its batch as the broker stores it, markers included), past
	// the head.
	RecordBytes int64 `json:"record_bytes"`
	// HeadRecords and HeadBytes: the first HeadRecords offsets of each
	// changelog cost HeadBytes in all (state written another way, such as
	// compressed batches).
	HeadRecords int64 `json:"head_records,omitempty"`
	HeadBytes   int64 `json:"head_bytes,omitempty"`
	// RoundTripMs is the time from one fetch to the next when the response
	// was not throttled (default 5).
	RoundTripMs int64 `json:"round_trip_ms,omitempty"`
}

// Kafka's quota sensor: quota.window.num samples of
// quota.window.size.seconds (their defaults).
const (
	quotaSamples  = 11
	quotaWindowMs = 1000
	defaultRTTMs  = 5
	// maxQuotaBytes bounds the quota's byte figures.
	maxQuotaBytes = 1 << 40
)

func (q *RestoreQuota) validate(field string) error {
	switch {
	case q.BytesPerS <= 0 || q.BytesPerS > maxQuotaBytes:
		return fmt.Errorf("%s.bytes_per_s: %d must be in (0, 2^40]", field, q.BytesPerS)
	case q.FetchMaxBytes <= 0 || q.FetchMaxBytes > maxQuotaBytes:
		return fmt.Errorf("%s.fetch_max_bytes: %d must be in (0, 2^40]", field, q.FetchMaxBytes)
	case q.RecordBytes <= 0 || q.RecordBytes > maxRecordBytes:
		return fmt.Errorf("%s.record_bytes: %d must be in (0, %d]", field, q.RecordBytes, maxRecordBytes)
	case q.HeadRecords < 0 || q.HeadRecords > maxRecords:
		return fmt.Errorf("%s.head_records: %d must be in [0, 2^50]", field, q.HeadRecords)
	case q.HeadBytes < 0 || q.HeadBytes > maxQuotaBytes:
		return fmt.Errorf("%s.head_bytes: %d must be in [0, 2^40]", field, q.HeadBytes)
	case (q.HeadRecords > 0) != (q.HeadBytes > 0):
		return fmt.Errorf("%s: head_records and head_bytes go together", field)
	case q.RoundTripMs < 0 || q.RoundTripMs > 60000:
		return fmt.Errorf("%s.round_trip_ms: %d must be in [0, 60000]", field, q.RoundTripMs)
	}
	return nil
}

var errQuotaNeedsShared = errors.New("restore_quota needs state.shared_restore (one restore consumer per process)")

// cum is the bytes of a changelog's offsets [0, x).
func (q *RestoreQuota) cum(x int64) int64 {
	if q.HeadRecords > 0 && x <= q.HeadRecords { // HeadBytes*x/HeadRecords, exactly: at most HeadBytes
		hi, lo := bits.Mul64(uint64(q.HeadBytes), uint64(x))
		v, _ := bits.Div64(hi, lo, uint64(q.HeadRecords))
		return int64(v)
	}
	return satAdd(q.HeadBytes, satMul(x-q.HeadRecords, q.RecordBytes))
}

// upTo is how far a copy at offset from gets towards end with at most
// budget bytes: the largest x in [from, end] with cum(x)-cum(from) <= budget.
func (q *RestoreQuota) upTo(from, end, budget int64) int64 {
	lo, hi := from, end
	base := q.cum(from)
	for lo < hi { // cum is monotone: the largest x within the budget
		mid := lo + (hi-lo+1)/2
		if q.cum(mid)-base <= budget {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// quotaSample is one sample of Kafka's SampledStat (4.4): its start, its
// last event and the bytes recorded in it.
type quotaSample struct {
	start, last int64
	value       float64
}

// quotaLink is a process's restore consumer under a RestoreQuota: the
// broker's quota sensor for its client id (Kafka's Rate over a
// WindowedSum: quotaSamples+1 samples kept, each quotaWindowMs) and when
// the consumer fetches next.
type quotaLink struct {
	q       *RestoreQuota
	samples []quotaSample
	cur     int
	nextMs  int64
}

// record adds v at now, as SampledStat.record does: a sample complete
// (quotaWindowMs old) gives way to the next one in the ring.
func (l *quotaLink) record(v float64, now int64) {
	if len(l.samples) == 0 {
		l.samples = append(l.samples, quotaSample{start: now, last: now})
	}
	if now-l.samples[l.cur].start >= quotaWindowMs {
		l.cur = (l.cur + 1) % (quotaSamples + 1)
		if l.cur >= len(l.samples) {
			l.samples = append(l.samples, quotaSample{start: now, last: now})
		} else {
			l.samples[l.cur] = quotaSample{start: now, last: now}
		}
	}
	s := &l.samples[l.cur]
	s.value += v
	s.last = now
}

// purge resets the samples without an event in the last quotaSamples
// windows (SampledStat.purgeObsoleteSamples).
func (l *quotaLink) purge(now int64) {
	for i := range l.samples {
		if now-l.samples[i].last >= quotaSamples*quotaWindowMs {
			l.samples[i] = quotaSample{start: now, last: now}
		}
	}
}

// windowMs is Rate.windowSize: the time since the oldest sample began,
// at least quotaSamples-1 windows plus the current one's part.
func (l *quotaLink) windowMs(now int64) int64 {
	l.purge(now)
	if len(l.samples) == 0 {
		l.samples = append(l.samples, quotaSample{start: now, last: now})
	}
	oldest := l.samples[0].start
	for _, s := range l.samples[1:] {
		oldest = min(oldest, s.start)
	}
	elapsed := now - oldest
	if full := elapsed / quotaWindowMs; full < quotaSamples-1 {
		elapsed += (quotaSamples - 1 - full) * quotaWindowMs
	}
	return max(elapsed, 1)
}

// rate is Rate.measure in bytes per second.
func (l *quotaLink) rate(now int64) float64 {
	l.purge(now)
	var sum float64
	for _, s := range l.samples {
		sum += s.value
	}
	return sum / (float64(l.windowMs(now)) / 1000)
}

// throttleMs records a response of size bytes at now and returns the
// throttle Kafka's ClientQuotaManager gives it: 0 within the quota;
// otherwise round((rate - quota) / quota * window) (QuotaUtils.throttleTime,
// unbounded for the fetch quota), and the response is unrecorded (the
// broker sends an empty, throttled one instead).
func (l *quotaLink) throttleMs(size, now int64) int64 {
	l.record(float64(size), now)
	bound := float64(l.q.BytesPerS)
	v := l.rate(now)
	if v <= bound {
		return 0
	}
	ms := int64(math.Floor((v-bound)/bound*float64(l.windowMs(now)) + 0.5)) // Java's Math.round
	l.record(-float64(size), now)
	return max(ms, 0)
}

// fetch runs the restore consumer of a process whose state is local
// through [now, now+tick): each fetch takes up to FetchMaxBytes of the
// copies of set (equal shares, a copy that needs less leaving the rest to
// the others), and the quota either lets it through (the copies restore
// what it carries; the next fetch one round trip later) or throttles it
// (nothing restored; the next fetch after the throttle). A fetch with
// nothing to carry waits for the next tick.
func (w *world) fetch(l *quotaLink, local []int64, set []int32, now, tick int64) {
	end := now + tick
	rtt := l.q.RoundTripMs
	if rtt == 0 {
		rtt = defaultRTTMs
	}
	set = slices.Clone(set)
	need := func(t int32) int64 { return l.q.cum(w.end[t]) - l.q.cum(max(local[t], 0)) }
	for {
		at := max(l.nextMs, now)
		if at >= end {
			return
		}
		slices.SortFunc(set, func(a, b int32) int {
			if na, nb := need(a), need(b); na != nb {
				return cmp.Compare(na, nb)
			}
			return cmp.Compare(a, b)
		})
		to := make([]int64, len(set))
		budget, size := l.q.FetchMaxBytes, int64(0)
		for i, t := range set {
			from := max(local[t], 0)
			to[i] = l.q.upTo(from, w.end[t], budget/int64(len(set)-i))
			got := l.q.cum(to[i]) - l.q.cum(from)
			budget -= got
			size += got
		}
		if size == 0 { // at least one record, as Kafka returns a first batch larger than the limit
			for i, t := range set {
				if from := max(local[t], 0); from < w.end[t] {
					to[i] = from + 1
					size = l.q.cum(to[i]) - l.q.cum(from)
					break
				}
			}
		}
		if size == 0 {
			l.nextMs = end
			return
		}
		if ms := l.throttleMs(size, at); ms > 0 {
			w.out.Totals.ThrottledFetches++
			w.out.Totals.ThrottleMs = satAdd(w.out.Totals.ThrottleMs, ms)
			l.nextMs = at + ms + rtt
			continue
		}
		for i, t := range set {
			from := max(local[t], 0)
			if to[i] > from {
				local[t] = to[i]
				w.restored(to[i] - from)
			}
		}
		l.nextMs = at + rtt
	}
}
