package dst

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/core/records"
	"github.com/coordhost/coordhost/host/runtime"
	"github.com/coordhost/coordhost/host/store"
)

// openLog builds the record log stack: the base log (kept in memory, or
// the store opened again), the fault log, the crash log and WrapLog.
func (s *sim) openLog() error {
	switch {
	case s.opt.StoreDir == "":
		if s.base == nil {
			s.base = runtime.NewMemLog()
		}
	default:
		st, err := store.Open(filepath.Join(s.opt.StoreDir, "coordhost.db"))
		if err != nil {
			return err
		}
		if err := st.Partition(partitions, recordGroup); err != nil {
			st.Close()
			return err
		}
		l, err := store.NewLog(st)
		if err != nil {
			st.Close()
			return err
		}
		s.store, s.base = st, l
	}
	s.faults = runtime.NewFaultLog(s.base)
	s.log = &holdLog{Log: &crashLog{Log: s.faults, sim: s}, sim: s}
	if s.opt.WrapLog != nil {
		s.log = s.opt.WrapLog(s.log)
	}
	return nil
}

// closeLog closes the store, as the process's death does (every append
// the store acknowledged is committed).
func (s *sim) closeLog() {
	if s.store == nil {
		return
	}
	if err := s.base.(*store.Log).Close(); err != nil {
		s.fail(fmt.Errorf("closing the store's log: %w", err))
	}
	if err := s.store.Close(); err != nil {
		s.fail(fmt.Errorf("closing the store: %w", err))
	}
	s.store = nil
}

// recordGroup is the group of a record key, for the store's partitioning.
func recordGroup(key []byte) (string, error) {
	rec, err := records.DecodeRecord(key, nil)
	if err != nil {
		return "", err
	}
	return rec.Key.Group(), nil
}

// crash kills the whole coordinator process and restarts it from the log:
// every in-flight request fails, outstanding assignor runs are lost, the
// log is sometimes compacted first, and each partition's replayed state
// must equal its durable state before the crash.
func (s *sim) crash(why string) {
	s.stats.Crashes++
	s.tracef("CRASH (%s)", why)
	durable := map[int]string{}
	for p, sh := range s.shards {
		exp, ok := s.pendingExpect[p]
		if !ok {
			exp = sh.c.Dump()
		}
		durable[p] = exp
	}
	clear(s.pendingExpect)
	s.stopRuntime()
	lost := s.takeInflight(func(*call) bool { return true })
	s.runs = nil
	clear(s.crashAt)
	compact := s.rng.IntN(2) == 0
	for p := 0; p < partitions; p++ {
		if err := s.checkCompactedReplay(p, durable[p]); err != nil {
			s.fail(err)
			return
		}
		if compact {
			if err := s.base.Compact(p); err != nil {
				s.fail(err)
				return
			}
		}
		s.expectNext[p] = durable[p]
	}
	s.closeLog()
	s.tracef("restart (compacted log: %v)", compact)
	s.start()
	s.inv.afterRestart(s, durable)
	for _, c := range lost {
		c.failed()
	}
}

// takeInflight removes and returns the in-flight calls that match, in
// request order.
func (s *sim) takeInflight(match func(*call) bool) []*call {
	var ids []core.RequestID
	for id, c := range s.inflight {
		if match(c) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	out := make([]*call, len(ids))
	for i, id := range ids {
		out[i] = s.inflight[id]
		delete(s.inflight, id)
	}
	return out
}

// reload unloads partition p after its append was fenced and loads it again
// from the log, as the partition's next owner would.
func (s *sim) reload(p int) {
	s.stats.Fenced++
	sh := s.shards[p]
	s.expectNext[p] = sh.c.Dump()
	sh.dead = true
	if err := s.rt.Unload(context.Background(), p); err != nil {
		s.fail(fmt.Errorf("unloading fenced partition %d: %w", p, err))
		return
	}
	for _, c := range s.takeInflight(func(c *call) bool { return partitionOf(c.group) == p }) {
		c.failed()
	}
	s.faults.Clear()
	s.tracef("p%d fenced: reloaded from the log", p)
	s.load(p)
}

// checkCompactedReplay replays the compacted form of partition p's log into
// a fresh coordinator: it must give the durable state too.
func (s *sim) checkCompactedReplay(p int, durable string) error {
	var recs []runtime.Record
	if err := s.base.Replay(p, func(r runtime.Record) error { recs = append(recs, r); return nil }); err != nil {
		return err
	}
	c, err := core.New(s.cfg)
	if err != nil {
		return err
	}
	for _, r := range runtime.Compacted(recs) {
		if err := c.ReplayBytes(r.Key, r.Value); err != nil {
			return fmt.Errorf("partition %d: replaying the compacted log: %w", p, err)
		}
	}
	if got := c.Dump(); got != durable {
		return fmt.Errorf("partition %d: state replayed from the compacted log differs from the durable state (- durable, + replayed):\n%s", p, dumpDiff(durable, got))
	}
	return nil
}

// dumpDiff lists the lines of two dumps that the other lacks, each under
// the group it belongs to.
func dumpDiff(want, got string) string {
	in := func(d string) map[string]bool {
		m := map[string]bool{}
		for _, l := range strings.Split(d, "\n") {
			m[l] = true
		}
		return m
	}
	w, g := in(want), in(got)
	var b strings.Builder
	side := func(d string, other map[string]bool, mark string) {
		group := ""
		for _, l := range strings.Split(d, "\n") {
			if strings.HasPrefix(l, "group ") {
				group = l
			}
			if !other[l] {
				fmt.Fprintf(&b, "%s %s\n", mark, l)
				if group != "" && group != l {
					fmt.Fprintf(&b, "    (in %s)\n", group)
				}
			}
		}
	}
	side(want, g, "-")
	side(got, w, "+")
	return b.String()
}
