package loop

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
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
// /v1/groups/{id}); it is soft state, not replayed. A committed event is
// kept as core gave it and described only when read: a mass expiry
// notes two events a fenced member on its partition's goroutine, which
// then formats no line and allocates nothing for them.
type history struct {
	mu    sync.Mutex
	byGrp map[string]*groupHistory
	limit int
}

// groupHistory is a group's last limit entries: appended to until full,
// then a ring whose oldest entry is at next.
type groupHistory struct {
	entries []historyEntry
	next    int
}

// historyEntry is a line given as is (what), or a committed event
// (described by describeEvent when read).
type historyEntry struct {
	at    time.Time
	what  string
	event core.Event
}

func (e *historyEntry) line() string {
	what := e.what
	if what == "" {
		what = describeEvent(e.event)
	}
	return e.at.UTC().Format(time.RFC3339Nano) + " " + what
}

// maxHistoryGroups bounds how many groups' events are kept.
const maxHistoryGroups = 10000

func newHistory() *history { return &history{byGrp: map[string]*groupHistory{}, limit: 20} }

// note keeps what, a line of group's history.
func (h *history) note(group, what string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.add(group, historyEntry{at: time.Now(), what: what})
}

// noteEvent keeps e, a committed event of its group, noted at at.
func (h *history) noteEvent(at time.Time, e core.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.add(e.Group, historyEntry{at: at, event: e})
}

func (h *history) add(group string, e historyEntry) {
	g := h.byGrp[group]
	if g == nil {
		if len(h.byGrp) >= maxHistoryGroups {
			for g := range h.byGrp { // forget some other group: bounded memory under group-id churn
				delete(h.byGrp, g)
				break
			}
		}
		g = &groupHistory{}
		h.byGrp[group] = g
	}
	if len(g.entries) < h.limit {
		g.entries = append(g.entries, e)
		return
	}
	g.entries[g.next] = e
	g.next = (g.next + 1) % len(g.entries)
}

// get returns group's history, oldest first.
func (h *history) get(group string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	g := h.byGrp[group]
	if g == nil {
		return nil
	}
	out := make([]string, 0, len(g.entries))
	for i := range g.entries {
		out = append(out, g.entries[(g.next+i)%len(g.entries)].line())
	}
	return out
}

// noteCommitted reports a committed batch: core's events say why each
// group changed. Group-level events, and members leaving or being fenced,
// go to the group's history (/v1/groups/{id}) and the log at INFO
// ("group event"); other member events (joins, metadata, reconciliation)
// are logged at DEBUG, as is each member's new assignment from the batch's
// records, so a rebalance can be followed from coordhost's log alone.
// A line is formatted only for a log that takes its level, and the INFO
// lines are written off the partition's goroutine (groupEvents), unless
// the log takes DEBUG lines too: then every line is written here, in
// order.
func (l *Loop) noteCommitted(b *batch) {
	l.ab.Observe(b.events)
	ctx := context.Background()
	info, debug := l.log.Enabled(ctx, slog.LevelInfo), l.log.Enabled(ctx, slog.LevelDebug)
	now := time.Now()
	lines := false // INFO lines to write
	for _, e := range b.events {
		l.stats.countEvent(e)
		if !historyEvent(e) {
			if debug {
				l.log.Debug("member event", "group", e.Group, "member", e.Member, "event", string(e.Kind),
					"reason", string(e.Reason), "member_epoch", e.MemberEpoch)
			}
			continue
		}
		l.history.noteEvent(now, e)
		switch {
		case debug:
			l.log.LogAttrs(ctx, slog.LevelInfo, "group event", slog.String("group", e.Group), slog.String("event", describeEvent(e)))
		case info:
			lines = true
		}
	}
	if lines {
		if eb := (eventBatch{at: now, events: b.events}); !l.groupEvents.add(eb) {
			writeGroupEvents(l.log.Handler(), eb)
		}
	}
	if debug {
		l.logAssignments(b.records)
	}
}

// describeEvent renders a history and log line for e.
func describeEvent(e core.Event) string {
	var b []byte
	epoch := func(s string) []byte { return strconv.AppendInt(append(b, s...), int64(e.Epoch), 10) }
	switch e.Kind {
	case core.EventEpochBumped:
		b = epoch("group epoch bumped to ")
	case core.EventTargetAssigned:
		b = epoch("target assignment installed at epoch ")
	case core.EventAssignorResultDiscarded:
		b = append(epoch("assignor result for epoch "), " discarded"...)
	case core.EventGenerationStored:
		b = append(epoch("classic generation "), " stored"...)
	case core.EventRebalanceStarted:
		return string(append(epoch("classic rebalance started (generation "), ')'))
	case core.EventGroupDeleted:
		return "group deleted"
	case core.EventGroupCreated:
		return "group created"
	case core.EventGroupConverted:
		switch e.Reason {
		case core.ReasonOfflineToStreams, core.ReasonOnlineToStreams:
			b = append(b, "classic group converted to a streams group"...)
		case core.ReasonOfflineToClassic, core.ReasonOnlineToClassic:
			b = append(b, "streams group converted to a classic group"...)
		default:
			return e.String()
		}
	case core.EventMemberLeft:
		b = append(append(append(b, "member "...), e.Member...), " left"...)
	case core.EventMemberFenced:
		b = append(append(append(b, "member "...), e.Member...), " fenced"...)
	default:
		return e.String()
	}
	if e.Reason != "" {
		b = append(append(append(b, " ("...), e.Reason...), ')')
	}
	return string(b)
}

// logAssignments logs, at DEBUG, the member metadata, targets (consumer
// groups) and current assignments a committed batch wrote (the detail behind its events).
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
		case records.ConsumerGroupMemberMetadataKey:
			if v, ok := r.Value.(records.ConsumerGroupMemberMetadataValue); ok {
				l.log.Debug("consumer member metadata", "group", k.GroupID, "member", k.MemberID,
					"client", v.ClientID, "classic", v.Classic != nil)
			}
		case records.ConsumerGroupTargetAssignmentMemberKey:
			if v, ok := r.Value.(records.ConsumerGroupTargetAssignmentMemberValue); ok {
				l.log.Debug("consumer member target", "group", k.GroupID, "member", k.MemberID,
					"partitions", partitionList(v.TopicPartitions))
			}
		case records.ConsumerGroupCurrentMemberAssignmentKey:
			if v, ok := r.Value.(records.ConsumerGroupCurrentMemberAssignmentValue); ok {
				l.log.Debug("consumer member assignment", "group", k.GroupID, "member", k.MemberID,
					"epoch", v.MemberEpoch, "previous_epoch", v.PreviousMemberEpoch, "state", v.State,
					"assigned", partitionList(v.AssignedPartitions), "revoking", partitionList(v.PartitionsPendingRevocation))
			}
		}
	}
}

// partitionList renders a consumer member's partitions as the first four
// bytes of each topic id in hex and its partitions: "1a2b3c4d:0,3 5e6f7a8b:1".
func partitionList(tps []records.TopicPartitions) string {
	var b strings.Builder
	for _, tp := range tps {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%x:", tp.TopicID[:4])
		for i, p := range tp.Partitions {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprint(&b, p)
		}
	}
	return b.String()
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
