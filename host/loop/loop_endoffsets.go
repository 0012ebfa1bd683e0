package loop

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync/atomic"
	"time"

	"github.com/coordhost/coordhost/core"
)

// Changelog end offsets from the data plane (docs/WARMUPS.md §2.1): for
// members that report only offset sums, the loop fetches the end offsets
// of the changelog partitions of every streams group's stateful tasks
// (ListOffsets) and steps them into core (core.EndOffsets), once after the
// store is replayed and then every group's streams.end.offsets.refresh.ms.
// A task whose partitions could not all be fetched is handed in as
// unknown (-1): a stale or partial end offset would understate the lag,
// and an unknown end offset never counts as caught up.

type endOffsetStats struct {
	fetches, failures atomic.Int64
}

// endOffsetsRefresh is group's refresh period (0: never): its effective
// streams.end.offsets.refresh.ms (runtime value included), else
// Deps.EndOffsetsRefresh, else the default. It reads loop state: call
// it on the loop goroutine (or before the loop starts).
func (l *Loop) endOffsetsRefresh(group string) time.Duration {
	if l.d.Groups == nil && l.d.EndOffsetsRefresh != nil {
		return l.d.EndOffsetsRefresh(group)
	}
	return time.Duration(l.groupConfig(group).StreamsEndOffsetsRefreshMs) * time.Millisecond
}

// endOffsetsLoop polls every EndOffsetsTick for groups whose refresh is
// due; last holds when each group was last fetched (the fetch on load
// included).
func (l *Loop) endOffsetsLoop(last map[string]time.Time) {
	defer l.wg.Done()
	t := time.NewTicker(l.d.EndOffsetsTick)
	defer t.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return
		case <-t.C:
		}
		changelogs, periods, ok := l.readChangelogs()
		if !ok {
			return
		}
		due := dueForEndOffsets(changelogs, periods, last, time.Now())
		for g := range last {
			if _, live := changelogs[g]; !live {
				delete(last, g)
			}
		}
		if len(due) == 0 {
			continue
		}
		for g, ends := range l.fetchEndOffsets(due) {
			l.inputGroup(g, func(c *core.Coordinator, now int64) core.Output {
				return l.stepEndOffsets(c, now, g, ends)
			})
		}
	}
}

// dueForEndOffsets picks the groups whose refresh period (> 0) has passed
// since their last fetch, and marks them fetched at now.
func dueForEndOffsets(changelogs map[string][]core.TaskChangelog, periods map[string]time.Duration,
	last map[string]time.Time, now time.Time) map[string][]core.TaskChangelog {
	due := map[string][]core.TaskChangelog{}
	for g, cls := range changelogs {
		if d := periods[g]; d > 0 && now.Sub(last[g]) >= d {
			due[g], last[g] = cls, now
		}
	}
	return due
}

// readChangelogs asks the loop goroutine for core's changelog partitions
// and each group's refresh period.
func (l *Loop) readChangelogs() (map[string][]core.TaskChangelog, map[string]time.Duration, bool) {
	m := map[string][]core.TaskChangelog{}
	periods := map[string]time.Duration{}
	err := l.read(l.ctx, func(c *core.Coordinator, _ int64) core.Output {
		cls := c.StreamsChangelogs()
		maps.Copy(m, cls)
		maps.Copy(periods, l.refreshPeriods(cls))
		return core.Output{}
	})
	return m, periods, err == nil
}

// refreshPeriods is endOffsetsRefresh of every group of changelogs.
func (l *Loop) refreshPeriods(changelogs map[string][]core.TaskChangelog) map[string]time.Duration {
	out := make(map[string]time.Duration, len(changelogs))
	for g := range changelogs {
		out[g] = l.endOffsetsRefresh(g)
	}
	return out
}

// fetchEndOffsetsOnLoad runs one fetch for every group of a partition
// whose refresh is enabled, as the partition loads (before it serves), so
// lags are known from the start; core's inputs join b. It returns when
// each group was fetched.
func (l *Loop) fetchEndOffsetsOnLoad(c *core.Coordinator, b *batch) map[string]time.Time {
	last := map[string]time.Time{}
	changelogs := c.StreamsChangelogs()
	due := dueForEndOffsets(changelogs, l.refreshPeriods(changelogs), last, time.Now())
	if len(due) == 0 {
		return last
	}
	for g, ends := range l.fetchEndOffsets(due) {
		b.add(l.stepEndOffsets(c, l.nowMs(), g, ends))
	}
	return last
}

// stepEndOffsets hands core group's changelog end offsets as read from
// the data plane; at debug level it logs them first ("changelog end
// offsets read", ends as task=offset, -1 unknown), so a recorded run can
// replay the host's own reads (make sim-validate).
func (l *Loop) stepEndOffsets(c *core.Coordinator, now int64, group string, ends []core.TaskEndOffset) core.Output {
	if l.log.Enabled(l.ctx, slog.LevelDebug) {
		var b strings.Builder
		for i, e := range ends {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%s_%d=%d", e.Task.Subtopology, e.Task.Partition, e.Offset)
		}
		l.log.Debug("changelog end offsets read", "group", group, "ends", b.String())
	}
	return l.step(c, now, core.EndOffsets{Group: group, Ends: ends})
}

// fetchEndOffsets lists the end offsets of every changelog partition of
// groups in one ListOffsets round and sums them per task.
func (l *Loop) fetchEndOffsets(groups map[string][]core.TaskChangelog) map[string][]core.TaskEndOffset {
	parts := map[string][]int32{}
	seen := map[string]map[int32]bool{}
	for _, cls := range groups {
		for _, cl := range cls {
			if seen[cl.Topic] == nil {
				seen[cl.Topic] = map[int32]bool{}
			}
			if !seen[cl.Topic][cl.Partition] {
				seen[cl.Topic][cl.Partition] = true
				parts[cl.Topic] = append(parts[cl.Topic], cl.Partition)
			}
		}
	}
	ctx, cancel := context.WithTimeout(l.ctx, 10*time.Second)
	defer cancel()
	l.ends.fetches.Add(1)
	offs, err := l.d.DataPlane.EndOffsets(ctx, parts)
	if err != nil {
		l.ends.failures.Add(1)
		l.log.Warn("changelog end-offset fetch incomplete: tasks without every end offset stay unknown", "err", err)
	}
	out := make(map[string][]core.TaskEndOffset, len(groups))
	for g, cls := range groups {
		out[g] = sumPerTask(cls, offs)
	}
	return out
}

// sumPerTask sums the end offsets of each task's changelog partitions
// (cls is sorted by task); a task missing any partition gets -1 (unknown).
func sumPerTask(cls []core.TaskChangelog, offs map[string]map[int32]int64) []core.TaskEndOffset {
	var out []core.TaskEndOffset
	for i := 0; i < len(cls); {
		task, sum := cls[i].Task, int64(0)
		for ; i < len(cls) && cls[i].Task == task; i++ {
			v, ok := offs[cls[i].Topic][cls[i].Partition]
			if !ok || v < 0 || sum < 0 {
				sum = -1
				continue
			}
			sum += v
		}
		out = append(out, core.TaskEndOffset{Task: task, Offset: sum})
	}
	return out
}

// KnownEndOffsets returns core's known task end offsets of a streams
// group (reported by members or fetched from the data plane), read on the
// loop goroutine. A task missing from the map has an unknown end offset.
func (l *Loop) KnownEndOffsets(ctx context.Context, group string) (map[core.TaskID]int64, error) {
	var m map[core.TaskID]int64
	err := l.readGroup(ctx, group, func(c *core.Coordinator, _ int64) core.Output { m = c.KnownEndOffsets(group); return core.Output{} })
	return m, err
}
