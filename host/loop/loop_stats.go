package loop

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/core/records"
	"github.com/coordhost/coordhost/host/admin"
)

// loopStats are the event loop's counters, exported on /metrics.
type loopStats struct {
	requests, heartbeats, commits    atomic.Int64
	appends, records, appendFailures atomic.Int64
	appendNanos                      atomic.Int64
	runs, runErrors, runNanos        atomic.Int64
	rebalances, fenced               atomic.Int64
	replayed                         atomic.Int64
}

// countEvent counts the committed events the metrics report.
func (s *loopStats) countEvent(e core.Event) {
	switch e.Kind {
	case core.EventEpochBumped, core.EventRebalanceStarted:
		s.rebalances.Add(1)
	case core.EventMemberFenced:
		s.fenced.Add(1)
	}
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
	m.Gauge("coordhost_store_unhealthy", "1 while store appends fail with a storage error (disk full, read-only, I/O error), 0 once one succeeds.", func() float64 {
		if l.health.unhealthy.Load() {
			return 1
		}
		return 0
	})
	g("coordhost_store_append_nanoseconds_total", "Time spent in store appends (fsync included).", &l.stats.appendNanos)
	g("coordhost_assignor_runs_total", "Assignor runs dispatched to the worker pool.", &l.stats.runs)
	g("coordhost_assignor_run_errors_total", "Assignor runs that failed (group kept its last target).", &l.stats.runErrors)
	g("coordhost_assignor_run_nanoseconds_total", "Time spent in assignor runs.", &l.stats.runNanos)
	g("coordhost_group_rebalances_total", "Streams group epoch bumps and classic rebalances started (committed).", &l.stats.rebalances)
	g("coordhost_group_members_fenced_total", "Members the coordinator removed (timeouts, static replacement, same process).", &l.stats.fenced)
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

// noteCommitted reports a committed batch: core's events say why each
// group changed. Group-level events, and members leaving or being fenced,
// go to the group's history (/v1/groups/{id}) and the log at INFO
// ("group event"); other member events (joins, metadata, reconciliation)
// are logged at DEBUG, as is each member's new assignment from the batch's
// records, so a rebalance can be followed from coordhost's log alone.
func (l *Loop) noteCommitted(b *batch) {
	l.ab.Observe(b.events)
	for _, e := range b.events {
		l.stats.countEvent(e)
		if e.MemberLevel() && e.Kind != core.EventMemberLeft && e.Kind != core.EventMemberFenced {
			l.log.Debug("member event", "group", e.Group, "member", e.Member, "event", string(e.Kind),
				"reason", string(e.Reason), "member_epoch", e.MemberEpoch)
			continue
		}
		l.event(e.Group, describeEvent(e))
	}
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.logAssignments(b.records)
	}
}

// describeEvent renders a history and log line for e.
func describeEvent(e core.Event) string {
	why := ""
	if e.Reason != "" {
		why = " (" + string(e.Reason) + ")"
	}
	switch e.Kind {
	case core.EventEpochBumped:
		return fmt.Sprintf("group epoch bumped to %d%s", e.Epoch, why)
	case core.EventTargetAssigned:
		return fmt.Sprintf("target assignment installed at epoch %d%s", e.Epoch, why)
	case core.EventAssignorResultDiscarded:
		return fmt.Sprintf("assignor result for epoch %d discarded%s", e.Epoch, why)
	case core.EventGenerationStored:
		return fmt.Sprintf("classic generation %d stored%s", e.Epoch, why)
	case core.EventRebalanceStarted:
		return fmt.Sprintf("classic rebalance started (generation %d)", e.Epoch)
	case core.EventGroupDeleted:
		return "group deleted"
	case core.EventGroupCreated:
		return "group created"
	case core.EventGroupConverted:
		switch e.Reason {
		case core.ReasonOfflineToStreams, core.ReasonOnlineToStreams:
			return "classic group converted to a streams group" + why
		case core.ReasonOfflineToClassic, core.ReasonOnlineToClassic:
			return "streams group converted to a classic group" + why
		}
	case core.EventMemberLeft:
		return fmt.Sprintf("member %s left%s", e.Member, why)
	case core.EventMemberFenced:
		return fmt.Sprintf("member %s fenced%s", e.Member, why)
	}
	return e.String()
}

// logAssignments logs, at DEBUG, the member metadata and current
// assignments a committed batch wrote (the detail behind its events).
func (l *Loop) logAssignments(recs []records.Record) {
	for _, r := range recs {
		switch k := r.Key.(type) {
		case records.StreamsGroupMemberMetadataKey:
			if v, ok := r.Value.(records.StreamsGroupMemberMetadataValue); ok {
				l.log.Debug("streams member metadata", "group", k.GroupID, "member", k.MemberID,
					"client", v.ClientID, "process", v.ProcessID, "classic", v.Classic != nil)
			}
		case records.StreamsGroupCurrentMemberAssignmentKey:
			if v, ok := r.Value.(records.StreamsGroupCurrentMemberAssignmentValue); ok {
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
func taskList(ts []records.TaskIDs) string {
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

func equalFold(a, b string) bool { return strings.EqualFold(strings.TrimSpace(a), b) }

// storeHealth follows the store's appends: while the last append that
// tried to write failed with a storage error (disk full, read-only, I/O
// error), the store is unhealthy, /readyz answers 503 and the
// coordhost_store_unhealthy gauge is 1; the next append that succeeds
// makes it healthy again. Its error log is rate-limited to one line a
// second, with the count of failures since the last line.
type storeHealth struct {
	unhealthy atomic.Bool
	mu        sync.Mutex
	lastErr   error
	since     time.Time
	lastLog   time.Time
	unlogged  int
}

// storeLogEvery is the interval of the rate-limited append-failure log.
const storeLogEvery = time.Second

// failed records a storage failure; it returns whether to log it now and
// how many failures were not logged since the last line.
func (h *storeHealth) failed(err error, now time.Time) (log bool, suppressed int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.unhealthy.Load() {
		h.since = now
	}
	h.unhealthy.Store(true)
	h.lastErr = err
	if now.Sub(h.lastLog) < storeLogEvery {
		h.unlogged++
		return false, 0
	}
	suppressed, h.unlogged, h.lastLog = h.unlogged, 0, now
	return true, suppressed
}

// ok records a successful append; it reports whether the store was
// unhealthy until now.
func (h *storeHealth) ok() bool {
	if !h.unhealthy.Load() {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	was := h.unhealthy.Swap(false)
	h.unlogged = 0
	return was
}

// ready is nil while the store is healthy.
func (h *storeHealth) ready() error {
	if !h.unhealthy.Load() {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.unhealthy.Load() {
		return nil
	}
	return fmt.Errorf("store appends failing since %s: %v", h.since.UTC().Format(time.RFC3339), h.lastErr)
}

// Ready reports nil while the loop's store takes appends, and otherwise
// why not (for /readyz).
func (l *Loop) Ready() error { return l.health.ready() }
