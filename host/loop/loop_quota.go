package loop

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/runtime"
)

// throttle sets throttle_time_ms on resp, a response for group on
// partition p, when the group used more than its quota of the partition's
// step time (runtime.Runtime.Throttle); the listener then stops reading
// the client's connection for that time (wire/throttle.go), as Kafka
// does for a client over its quota.
func (l *Loop) throttle(p int, group string, resp kmsg.Response) {
	if resp == nil {
		return
	}
	d := l.rt.Throttle(p, group)
	if d <= 0 {
		return
	}
	if t, ok := resp.(interface {
		kmsg.ThrottleResponse
		kmsg.SetThrottleResponse
	}); ok {
		cur, _ := t.Throttle()
		t.SetThrottle(max(cur, int32(d.Milliseconds())))
	}
}

// GroupThrottle is how long group's requests should wait, its
// throttle_time_ms (runtime.Runtime.Throttle): the listener holds its
// requests unread that long (wire.GroupQuota).
func (l *Loop) GroupThrottle(group string) time.Duration {
	return l.rt.Throttle(l.rt.PartitionFor(group), group)
}

// ChargeGroup counts d, the listener's time on one of group's requests
// (reading it, encoding and writing its answer), towards the group's
// quota on its partition (wire.GroupQuota), as Kafka's request quota
// counts a request's network thread time.
func (l *Loop) ChargeGroup(group string, d time.Duration) {
	l.rt.Charge(l.rt.PartitionFor(group), group, d)
}

// chargeAppend counts took, the time partition p's append of recs took
// (its share of the store's transaction), towards the quotas of the
// groups whose records they are, each by its records' share of the
// bytes: a group's writes weigh on the one committer every partition
// shares, so they are its work too.
func (l *Loop) chargeAppend(p int, recs []runtime.Record, took time.Duration) {
	if l.d.GroupQuotaPercent <= 0 || took <= 0 {
		return
	}
	total, by := 0, map[string]int{}
	for _, r := range recs {
		n := len(r.Key) + len(r.Value)
		total += n
		if r.Owner != "" {
			by[r.Owner] += n
		}
	}
	for g, n := range by {
		l.rt.Charge(p, g, time.Duration(float64(took)*float64(n)/float64(max(total, 1))))
	}
}
