package wire

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// muteFor is how long the connection is not read after answering req with
// resp: the response's throttle_time_ms when the group coordinator set it
// (a group over its quota), as a Kafka broker mutes the channel of a
// client over its quota; 0 otherwise. A data plane's throttle passes
// through unchanged (the broker mutes its own connection).
func (c *conn) muteFor(req *Request, resp kmsg.Response) time.Duration {
	if req == nil {
		return 0
	}
	e, ok := c.s.cfg.Table.Lookup(req.Key)
	if !ok || e.Route != RouteGroup && e.Route != RouteSplit {
		return 0
	}
	t, ok := resp.(kmsg.ThrottleResponse)
	if !ok {
		return 0
	}
	ms, _ := t.Throttle()
	return time.Duration(max(ms, 0)) * time.Millisecond
}

// mute waits d before the connection's next request is read; the
// response is already written. It ends early when the server stops.
func (c *conn) mute(ctx context.Context, d time.Duration) {
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	var drain <-chan struct{}
	if c.s.drain != nil {
		drain = c.s.drain.Done()
	}
	select {
	case <-t.C:
	case <-ctx.Done():
	case <-drain:
	}
}
