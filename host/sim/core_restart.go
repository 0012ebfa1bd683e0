package sim

// coordhost restarts on the core engine: while coordhost is down nothing
// reaches core; when it is back a new core.Coordinator loads the records
// the old one wrote, compacted as the host's store keeps them (the latest
// value per key, in the order of their last writes; a tombstone deletes
// its key), and core's Loaded restarts every session timer, as the host
// does when it loads a partition.

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/core/records"
	"github.com/coordhost/coordhost/core/userdata"
)

// coreRestart is what the core engine keeps to restart coordhost.
type coreRestart struct {
	cfg     core.Config
	keep    bool                   // the scenario restarts coordhost: the store is kept
	store   map[string]storedValue // record key -> its latest value
	seq     int64                  // writes so far
	stopped bool                   // coordhost is down
	dump    string                 // core's durable state when it stopped
	loads   int                    // restarts done
}

// storedValue is one live key's value and the sequence of its last write.
type storedValue struct {
	seq   int64
	value []byte
}

// prepare sets up the engine's own state for sc on core configured by cfg.
func (cw *coreWorld) prepare(cfg core.Config) {
	cw.coreRestart = coreRestart{cfg: cfg, store: map[string]storedValue{}}
	cw.classicState = classicState{classicIDs: map[string]bool{}, processes: map[userdata.ProcessID]string{}}
	for _, s := range cw.sc.steps {
		cw.keep = cw.keep || s.kind == stepCoordhostRestart
	}
}

// store keeps recs as the host's store does, when the scenario restarts
// coordhost.
func (cw *coreWorld) store(recs []records.Record) {
	if !cw.keep {
		return
	}
	for _, r := range recs {
		k, v := records.EncodeRecord(r)
		cw.seq++
		if v == nil {
			delete(cw.coreRestart.store, string(k))
			continue
		}
		cw.coreRestart.store[string(k)] = storedValue{cw.seq, v}
	}
}

// stop takes coordhost down at a coordhost_restart step: requests in
// flight get no answer (their clients retry), and core's durable state
// is noted to check the replay against.
func (cw *coreWorld) stop(s step) {
	cw.apply(s, nil) // downUntil
	if cw.stopped {
		return
	}
	cw.stopped, cw.dump = true, cw.c.Dump()
	clear(cw.byReq)
	for _, cl := range cw.clients {
		if cs := cl.classic; cs != nil && cs.inflight {
			// Its JoinGroup or SyncGroup is lost: it joins again.
			cs.inflight, cs.rejoin, cs.needSync, cs.members = false, true, false, nil
		}
	}
}

// maybeRestart brings coordhost back when its down time is over: a new
// Coordinator replays the store, which must give the state the old one
// had, then takes the topic image and Loaded, as the host loads a
// partition.
func (cw *coreWorld) maybeRestart() {
	if !cw.stopped || cw.now < cw.downUntil {
		return
	}
	c, err := core.New(cw.cfg)
	if err != nil {
		cw.fail(err)
		return
	}
	keys := make([]string, 0, len(cw.coreRestart.store))
	for k := range cw.coreRestart.store {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(cw.coreRestart.store[a].seq, cw.coreRestart.store[b].seq) })
	for _, k := range keys {
		if err := c.ReplayBytes([]byte(k), cw.coreRestart.store[k].value); err != nil {
			cw.fail(fmt.Errorf("coordhost restart: replay: %w", err))
			return
		}
	}
	if got := c.Dump(); got != cw.dump {
		cw.fail(fmt.Errorf("coordhost restart: the replayed state differs from the state at the stop:\nstop:\n%s\nreplayed:\n%s", cw.dump, got))
		return
	}
	cw.c, cw.stopped = c, false
	cw.loads++
	cw.step(core.Topics{Topics: cw.topics})
	out := c.Loaded(coreEpochMs + cw.now)
	c.Commit()
	cw.store(out.Records)
	cw.handle(out)
}
