package authz

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// CutOver keeps coordhost from running a group beside the cluster's own
// group coordinator. Groups the cluster's coordinator has live members in
// when coordhost starts are pending: their member requests (JoinGroup,
// SyncGroup, Heartbeat, ConsumerGroupHeartbeat, StreamsGroupHeartbeat)
// are answered COORDINATOR_NOT_AVAILABLE, which clients retry after
// looking the coordinator up again, until the cluster's group is empty;
// from then on coordhost serves the group (docs/RELIABILITY.md, "Cut-over
// from a cluster's own group coordinator"). The cluster is asked again at
// most once per interval, over coordhost's own connection.
type CutOver struct {
	ask      Asker
	log      *slog.Logger
	interval time.Duration
	now      func() time.Time

	mu      sync.Mutex
	pending map[string]string // group -> its state on the cluster
	asked   time.Time
	listing bool
}

// CutOverInterval bounds how often the cluster's groups are listed while
// a group is pending.
const CutOverInterval = time.Second

// NewCutOver lists the cluster's groups (ListGroups on every broker) and
// holds those with live members; an error means the cluster could not be
// asked, and coordhost must not start (it could not tell which groups
// the cluster still runs).
func NewCutOver(ctx context.Context, ask Asker, log *slog.Logger, interval time.Duration, now func() time.Time) (*CutOver, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if now == nil {
		now = time.Now
	}
	live, err := liveGroups(ctx, ask)
	if err != nil {
		return nil, fmt.Errorf("listing the cluster's groups, to hold those its own coordinator still runs: %w", err)
	}
	c := &CutOver{ask: ask, log: log, interval: interval, now: now, pending: live, asked: now()}
	for g, state := range live {
		log.Warn("the cluster's own group coordinator has live members in this group: coordhost answers its members COORDINATOR_NOT_AVAILABLE until the cluster's group is empty",
			"group", g, "state", state)
	}
	return c, nil
}

// liveGroups lists the cluster's groups that are neither Empty nor Dead.
func liveGroups(ctx context.Context, ask Asker) (map[string]string, error) {
	req := kmsg.NewPtrListGroupsRequest()
	resp, err := ask(ctx, req)
	if err != nil {
		return nil, err
	}
	lr := resp.(*kmsg.ListGroupsResponse)
	if err := kerr.ErrorForCode(lr.ErrorCode); err != nil {
		return nil, err
	}
	live := map[string]string{}
	for _, g := range lr.Groups {
		switch strings.ToLower(g.GroupState) {
		case "empty", "dead":
		default:
			live[g.Group] = g.GroupState
		}
	}
	return live, nil
}

// Pending says whether group's member requests are still refused,
// listing the cluster's groups again when the last list is older than
// the interval (one list at a time; other callers answer from the last
// one). A list that fails keeps the groups pending.
func (c *CutOver) Pending(ctx context.Context, group string) bool {
	c.mu.Lock()
	_, ok := c.pending[group]
	due := ok && !c.listing && c.now().Sub(c.asked) >= c.interval
	if due {
		c.listing, c.asked = true, c.now()
	}
	c.mu.Unlock()
	if !due {
		return ok
	}
	live, err := liveGroups(ctx, c.ask)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.listing = false
	if err != nil {
		c.log.Warn("listing the cluster's groups for the cut-over failed; the groups stay held", "err", err)
		return true
	}
	for g := range c.pending {
		if _, still := live[g]; !still {
			delete(c.pending, g)
			c.log.Info("the cluster's own group is empty: coordhost serves it from now on", "group", g)
		}
	}
	_, ok = c.pending[group]
	return ok
}

// memberGroup is the group of a member request the cut-over holds ("",
// false for other requests).
func memberGroup(body kmsg.Request) (string, bool) {
	switch b := body.(type) {
	case *kmsg.JoinGroupRequest:
		return b.Group, true
	case *kmsg.SyncGroupRequest:
		return b.Group, true
	case *kmsg.HeartbeatRequest:
		return b.Group, true
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return b.Group, true
	case *kmsg.StreamsGroupHeartbeatRequest:
		return b.Group, true
	}
	return "", false
}
