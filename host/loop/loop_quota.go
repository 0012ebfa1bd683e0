package loop

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
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
