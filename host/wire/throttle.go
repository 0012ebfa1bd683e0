package wire

import (
	"context"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// muteFor is how long the connection is not read after answering req with
// resp: the response's throttle_time_ms when the group coordinator set it
// (a group over its quota), as a Kafka broker mutes the channel of a
// client over its quota; 0 otherwise. A data plane's throttle passes
// through unchanged (the broker mutes its own connection).
func (c *conn) muteFor(req *Request, resp kmsg.Response) time.Duration {
	d, _ := c.throttleOf(req, resp)
	return d
}

// throttleFor is muteFor for a request served in full, to call before
// resp is written: on a connection shared by several groups (groupsSeen)
// a group request's throttle is taken out of resp and nothing is muted.
// The connection is other groups' too, and a client mutes a connection
// whose answer carries a throttle (KIP-219), so either mute would hold
// their requests for one group's use.
func (c *conn) throttleFor(req *Request, resp kmsg.Response) time.Duration {
	d, group := c.throttleOf(req, resp)
	if d == 0 || !group || !c.groups.sharedNow() {
		return d
	}
	if t, ok := resp.(kmsg.SetThrottleResponse); ok {
		t.SetThrottle(0)
	}
	return 0
}

// throttleOf returns muteFor's duration and whether req is routed to the
// group coordinator alone (RouteGroup).
func (c *conn) throttleOf(req *Request, resp kmsg.Response) (d time.Duration, group bool) {
	if req == nil {
		return 0, false
	}
	e, ok := c.s.cfg.Table.Lookup(req.Key)
	if !ok || e.Route != RouteGroup && e.Route != RouteSplit {
		return 0, false
	}
	t, ok := resp.(kmsg.ThrottleResponse)
	if !ok {
		return 0, false
	}
	ms, _ := t.Throttle()
	return time.Duration(max(ms, 0)) * time.Millisecond, e.Route == RouteGroup
}

// sharedFor is how long a connection counts as shared by several groups
// after a request of one group followed another group's: as long as the
// group quota looks back (two of runtime.QuotaWindow), so a throttle
// earned while the groups shared it is not applied to it.
const sharedFor = 2 * time.Second

// groupsSeen is what the group requests screen looked at on a connection
// were lately: a connection is shared while requests of two groups
// followed each other on it within sharedFor. Neither a group's hold
// (screen) nor its throttle (muteFor) applies to a shared connection;
// the runtime still takes one event a round of a group over its quota,
// after the others' (docs/HOST.md, "Group quotas").
type groupsSeen struct {
	last    string    // the group of the last group request
	mixedAt time.Time // when a request followed another group's; zero: never
	// known and isShared are sharedNow's answer for the request being
	// served (its screen, gates and throttle ask it up to three times);
	// next forgets it.
	known, isShared bool
}

// next begins a request: sharedNow looks at the clock again.
func (g *groupsSeen) next() { g.known = false }

// note records a request of group, which may alias a read buffer, and
// returns the group as kept: a copy is made only when the group changed.
func (g *groupsSeen) note(group string) string {
	if group == g.last {
		return g.last
	}
	if g.last != "" {
		g.mixedAt = time.Now()
		g.known, g.isShared = true, true // mixed just now
	}
	g.last = strings.Clone(group)
	return g.last
}

// sharedNow is shared as of the request's first question (note counts
// as one): a request's screen, gates and throttle see one answer for the
// price of at most one clock read.
func (g *groupsSeen) sharedNow() bool {
	if !g.known {
		g.known, g.isShared = true, g.shared()
	}
	return g.isShared
}

// shared reports whether requests of two groups followed each other
// within sharedFor.
func (g *groupsSeen) shared() bool {
	return !g.mixedAt.IsZero() && time.Since(g.mixedAt) < sharedFor
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
