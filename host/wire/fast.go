package wire

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The listener's own poller (poll_linux.go) serves a connection's
// heartbeats on its goroutine while the connection's goroutine is
// parked: between requests, with nothing read and unserved and nothing
// sent ahead. A request arriving at an idle process then wakes one
// thread, which reads, steps and answers it, instead of waking the
// connection's goroutine through Go's poller and scheduler
// (docs/BENCHMARKS.md, "One goroutine with its own epoll"). Only what
// needs no wait is served there: a heartbeat (fastKey) whose request
// budget is free and whose group is not over its quota, stepped at once
// (Config.Begin) and answered in one write. Anything else goes back to
// the connection's goroutine, in order: the frames not served as bytes
// it reads first (pollConn.handBack), and a started request's wait, the
// rest of an answer the socket had no room for, or a throttle's mute as
// a handoff it finishes first.

// PollerMode is when a listener's connections use the process's poller
// (kafka.poller).
type PollerMode uint8

const (
	// PollerOff: every request on its connection's goroutine.
	PollerOff PollerMode = iota
	// PollerAuto: while the process serves pollerOn heartbeats a second
	// or more and the poller's one goroutine keeps up.
	PollerAuto
	// PollerOn: always, but while the poller does not keep up.
	PollerOn
)

// ParsePollerMode parses kafka.poller's value.
func ParsePollerMode(s string) (PollerMode, error) {
	switch s {
	case "off":
		return PollerOff, nil
	case "auto":
		return PollerAuto, nil
	case "on":
		return PollerOn, nil
	}
	return PollerOff, fmt.Errorf("kafka.poller: %q is not off, auto or on", s)
}

// PollerStats are the process's poller's counts since the process
// started (the metrics' coordhost_kafka_poller_*).
type PollerStats struct {
	Engaged     bool  // connections move into the poller now
	Served      int64 // requests answered on the poller's goroutine
	HandedBack  int64 // times a parked connection went back to its goroutine
	Engagements int64 // times the poller engaged
	Saturations int64 // times it stopped serving for not keeping up
	// RequestCPU is the CPU time a request it answered cost the
	// poller's thread, over its recent time slices.
	RequestCPU time.Duration
}

// pollStats are the counts of ReadPollerStats, kept across pollers.
var pollStats struct {
	served, handedBack, engagements, saturations atomic.Int64
}

// ReadPollerStats returns the process's poller's counts.
func ReadPollerStats() PollerStats {
	engaged, cost := pollerState()
	return PollerStats{
		Engaged:     engaged,
		RequestCPU:  cost,
		Served:      pollStats.served.Load(),
		HandedBack:  pollStats.handedBack.Load(),
		Engagements: pollStats.engagements.Load(),
		Saturations: pollStats.saturations.Load(),
	}
}

// fastBuffer is a parked connection's read buffer: heartbeats are a few
// hundred bytes; a larger frame is handed back and read by the
// connection's goroutine.
const fastBuffer = 4 << 10

// handoff is what the poller's goroutine left the connection's goroutine
// to finish, before anything else.
type handoff struct {
	err error // closes the connection

	// An answer to wait for (Begin's Wait) and write, of a request
	// started at start.
	req     *Request
	wait    Wait
	start   time.Time
	group   string
	release func()

	unwritten []byte        // the rest of an answer
	mute      time.Duration // a throttle's, after the answer
}

func (h *handoff) set() bool {
	return h.err != nil || h.wait != nil || h.unwritten != nil || h.mute > 0
}

// fastKey reports whether key is a request a parked connection's
// heartbeats are served as.
func fastKey(key int16) bool {
	switch kmsg.Key(key) {
	case kmsg.StreamsGroupHeartbeat, kmsg.ConsumerGroupHeartbeat, kmsg.Heartbeat:
		return true
	}
	return false
}

// finishHandoff finishes c.hand on c's goroutine.
func (c *conn) finishHandoff(ctx context.Context) error {
	h := c.hand
	c.hand = handoff{}
	switch {
	case h.err != nil:
		return h.err
	case h.wait != nil:
		resp, err := h.wait(ctx)
		if c.s.cfg.Observer != nil {
			c.s.cfg.Observer.Served(h.req.Key, time.Since(h.start), err)
		}
		h.release()
		if err != nil || resp == nil {
			return err
		}
		return c.writeAnswer(ctx, h.req, resp, h.group)
	case h.unwritten != nil:
		c.extendWrite(time.Now())
		if _, err := c.rw.Write(h.unwritten); err != nil {
			return err
		}
	}
	c.mute(ctx, h.mute)
	return nil
}
