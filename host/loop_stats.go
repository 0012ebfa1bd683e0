package host

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/admin"
)

// loopStats are the event loop's counters, exported on /metrics.
type loopStats struct {
	requests, heartbeats, commits    atomic.Int64
	appends, records, appendFailures atomic.Int64
	appendNanos                      atomic.Int64
	runs, runErrors, runNanos        atomic.Int64
	replayed                         atomic.Int64
}

func (l *Loop) registerMetrics(m *admin.Metrics) {
	g := func(name, help string, v *atomic.Int64) {
		m.Gauge(name, help, func() float64 { return float64(v.Load()) })
	}
	g("coordhost_group_requests_total", "Group-coordination requests handled by the event loop.", &l.stats.requests)
	g("coordhost_group_heartbeats_total", "Heartbeat and StreamsGroupHeartbeat requests.", &l.stats.heartbeats)
	g("coordhost_offset_commits_forwarded_total", "Offset commits allowed by core and stored in the data plane.", &l.stats.commits)
	g("coordhost_store_appends_total", "Store appends (one per event-loop round with records).", &l.stats.appends)
	g("coordhost_store_records_appended_total", "Records appended to the store.", &l.stats.records)
	g("coordhost_store_append_failures_total", "Failed store appends (batch rolled back).", &l.stats.appendFailures)
	g("coordhost_store_append_nanoseconds_total", "Time spent in store appends (fsync included).", &l.stats.appendNanos)
	g("coordhost_assignor_runs_total", "Assignor runs dispatched to the worker pool.", &l.stats.runs)
	g("coordhost_assignor_run_errors_total", "Assignor runs that failed (group kept its last target).", &l.stats.runErrors)
	g("coordhost_assignor_run_nanoseconds_total", "Time spent in assignor runs.", &l.stats.runNanos)
	if l.d.Assignors != nil {
		m.Gauge("coordhost_assignor_plugin_failures_total", "Plugin assignor failures answered by the fallback.", func() float64 {
			var n int64
			for _, pi := range l.d.Assignors.Info() {
				n += pi.Failures
			}
			return float64(n)
		})
	}
}

// history keeps the recent rebalance reasons of each group (for
// /v1/groups/{id}); it is soft state, not replayed.
type history struct {
	mu    sync.Mutex
	byGrp map[string][]string
	limit int
}

// maxHistoryGroups bounds how many groups' events are kept.
const maxHistoryGroups = 10000

func newHistory() *history { return &history{byGrp: map[string][]string{}, limit: 20} }

func (h *history) note(group, what string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	line := time.Now().UTC().Format(time.RFC3339Nano) + " " + what
	if _, known := h.byGrp[group]; !known && len(h.byGrp) >= maxHistoryGroups {
		for g := range h.byGrp { // forget some other group: bounded memory under group-id churn
			delete(h.byGrp, g)
			break
		}
	}
	s := append(h.byGrp[group], line)
	if len(s) > h.limit {
		s = s[len(s)-h.limit:]
	}
	h.byGrp[group] = s
}

func (h *history) get(group string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.byGrp[group]...)
}

// noteRecords records epoch changes of durable records as rebalance
// reasons, and logs the group's lifecycle: group-level changes at INFO,
// member-level ones (membership, each member's current assignment) at
// DEBUG, so a rebalance can be followed from coordhost's log alone.
func (l *Loop) noteRecords(recs []core.Record) {
	// A conversion writes one type's tombstone and the other type's
	// metadata in one batch: say so instead of "group deleted".
	streamsNow, classicNow := map[string]bool{}, map[string]bool{}
	for _, r := range recs {
		switch k := r.Key.(type) {
		case core.StreamsGroupMetadataKey:
			streamsNow[k.GroupID] = r.Value != nil
		case core.GroupMetadataKey:
			classicNow[k.GroupID] = r.Value != nil
		}
	}
	for _, r := range recs {
		switch k := r.Key.(type) {
		case core.StreamsGroupMetadataKey:
			if v, ok := r.Value.(core.StreamsGroupMetadataValue); ok {
				l.event(k.GroupID, fmt.Sprintf("group epoch bumped to %d (membership, topology or metadata changed)", v.Epoch))
			} else if r.Value == nil && classicNow[k.GroupID] {
				l.event(k.GroupID, "streams group converted to a classic group")
			} else if r.Value == nil {
				l.event(k.GroupID, "group deleted")
			}
		case core.StreamsGroupTargetAssignmentMetadataKey:
			if v, ok := r.Value.(core.StreamsGroupTargetAssignmentMetadataValue); ok {
				l.event(k.GroupID, fmt.Sprintf("target assignment installed at epoch %d", v.AssignmentEpoch))
			}
		case core.GroupMetadataKey:
			if v, ok := r.Value.(core.GroupMetadataValue); ok {
				l.event(k.GroupID, fmt.Sprintf("classic generation %d stored (%d members, protocol %s)", v.Generation, len(v.Members), deref(v.Protocol)))
			} else if r.Value == nil && streamsNow[k.GroupID] {
				l.event(k.GroupID, "classic group converted to a streams group")
			} else if r.Value == nil {
				l.event(k.GroupID, "group deleted")
			}
		case core.StreamsGroupMemberMetadataKey:
			if !l.log.Enabled(context.Background(), slog.LevelDebug) {
				continue
			}
			if v, ok := r.Value.(core.StreamsGroupMemberMetadataValue); ok {
				l.log.Debug("streams member metadata", "group", k.GroupID, "member", k.MemberID,
					"client", v.ClientID, "process", v.ProcessID, "classic", v.Classic != nil)
			} else if r.Value == nil {
				l.log.Debug("streams member removed", "group", k.GroupID, "member", k.MemberID)
			}
		case core.StreamsGroupCurrentMemberAssignmentKey:
			if !l.log.Enabled(context.Background(), slog.LevelDebug) {
				continue
			}
			if v, ok := r.Value.(core.StreamsGroupCurrentMemberAssignmentValue); ok {
				l.log.Debug("streams member assignment", "group", k.GroupID, "member", k.MemberID,
					"epoch", v.MemberEpoch, "state", v.State, "active", taskList(v.ActiveTasks),
					"standby", taskList(v.StandbyTasks), "warmup", taskList(v.WarmupTasks),
					"revoking", taskList(v.ActiveTasksPendingRevocation))
			}
		}
	}
}

// event notes a group's rebalance reason and logs it.
func (l *Loop) event(group, what string) {
	l.history.note(group, what)
	l.log.Info("group event", "group", group, "event", what)
}

// taskList renders tasks as Kafka Streams prints task ids: "0_1 0_3 1_2".
func taskList(ts []core.TaskIDs) string {
	var b strings.Builder
	for _, t := range ts {
		for _, p := range t.Partitions {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%s_%d", t.SubtopologyID, p)
		}
	}
	return b.String()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// maxConfiguredGroups bounds the set of group ids already configured.
const maxConfiguredGroups = 100000

// configure applies the group's per-group settings (config file layers
// and runtime values) to core the first time c's partition sees group.
// Called inside one of c's partition's events.
func (l *Loop) configure(c *core.Coordinator, group string) {
	s := l.shardOf(c)
	if s.configured[group] || (l.d.Groups == nil && l.d.GroupConfig == nil) {
		return
	}
	l.dynMu.RLock()
	defer l.dynMu.RUnlock()
	s.configure(group)
}

// configure is Loop.configure with dynMu already held.
func (s *shard) configure(group string) {
	l := s.l
	if s.configured[group] || (l.d.Groups == nil && l.d.GroupConfig == nil) {
		return
	}
	if len(s.configured) >= maxConfiguredGroups {
		// Applying a group's settings again is harmless; forgetting keeps
		// memory bounded when clients churn through group ids.
		clear(s.configured)
	}
	s.configured[group] = true
	if l.d.Groups != nil {
		l.applyGroupConfig(s.c, group)
		return
	}
	if o := l.d.GroupConfig(group); o != nil {
		s.c.SetStreamsGroupConfig(group, *o)
	}
}

func equalFold(a, b string) bool { return strings.EqualFold(strings.TrimSpace(a), b) }
