package loop

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	corerecords "github.com/coordhost/coordhost/core/records"
	"github.com/coordhost/coordhost/host/runtime"
	"github.com/coordhost/coordhost/host/store"
	"github.com/coordhost/coordhost/host/wire"
)

// shard is one partition's coordinator (runtime.Sealer): its core, the
// requests waiting for their round's commit, the round's batch and the
// batches of the sealed rounds whose appends are in flight (the runtime
// steps the next rounds meanwhile). The runtime calls it from one
// goroutine at a time: Step on a worker, Commit or Rollback on a worker
// or, after an append, on the goroutine that waited for it.
type shard struct {
	l          *Loop
	p          int
	c          *core.Coordinator
	nextID     core.RequestID
	pending    map[core.RequestID]*call
	configured map[string]bool
	batch      batch
	// sealed: the rounds sealed and not yet committed, oldest first.
	sealed []sealedRound
	// encoded counts the records of batch already handed to the runtime.
	encoded, encodedHost int
	// failures counts the consecutive rounds whose append failed with a
	// storage error; until retryAt (unix ms) the shard's timers wait, so a
	// failing store is retried with backoff, not in a hot loop of expiries
	// rolled back and due again at once.
	failures int
	retryAt  int64
	// arena holds the encoded records' bytes (recordArena).
	arena recordArena
	// spare is a committed round's records array, emptied, for the next
	// round's batch when the round being stepped has one already: a mass
	// expiry's slices of 64 fenced members each grew one from nothing by
	// doubling.
	spare []corerecords.Record
}

// maxSpare bounds the records array a shard keeps for its next round.
const maxSpare = 4096

// recordArena encodes records into chunks of recordChunk bytes: the key
// and value of each record are slices of a chunk, so a timer's records
// (a fenced member's) cost no allocation of their own. A chunk is
// never written again where a record was cut from it: the runtime and the
// log hold the records until their append ends, and a log that keeps
// them copies them (runtime.Log). A chunk lives as long as one record cut
// from it does.
type recordArena struct {
	buf []byte
	enc corerecords.Encoder
}

const (
	recordChunk = 16 << 10
	// recordRoom: with less left in a chunk, a record starts the next
	// chunk, so that few records outgrow their chunk.
	recordRoom = 1 << 10
)

// encode returns r's key and value bytes (value nil for a tombstone), as
// records.EncodeRecord does.
func (a *recordArena) encode(r corerecords.Record) (k, v []byte) {
	if cap(a.buf)-len(a.buf) < recordRoom {
		a.buf = make([]byte, 0, recordChunk)
	}
	tail := a.buf[len(a.buf):]
	b, kl := a.enc.Append(tail, r)
	if len(b) <= cap(tail) { // written in place: the chunk's next record starts after it
		a.buf = a.buf[:len(a.buf)+len(b)]
	} // else it outgrew the chunk, and append gave it an array of its own
	k = b[:kl:kl]
	if r.Value != nil {
		v = b[kl:len(b):len(b)]
	}
	return k, v
}

// The backoff of a partition's timer-driven work while its appends fail
// with a storage error: doubling from storeRetryMin up to storeRetryMax.
const (
	storeRetryMin = 100 * time.Millisecond
	storeRetryMax = 5 * time.Second
)

// newShard builds partition p's shard (runtime.Config.NewShard).
func (l *Loop) newShard(p int) (runtime.Shard, error) {
	c := l.d.Core
	if l.d.NewCore != nil {
		var err error
		if c, err = l.d.NewCore(); err != nil {
			return nil, fmt.Errorf("coordinator config: %w", err)
		}
	}
	c.DeferAssignorInputs() // dispatchRun builds them on a worker
	l.forgetConfigs(p)      // the replay brings them back as the log has them
	s := &shard{l: l, p: p, c: c, pending: map[core.RequestID]*call{}, configured: map[string]bool{}}
	l.byCore.Store(c, s)
	return s, nil
}

// manyGroups reports whether req names several groups: its answer may
// depend on the state of other groups than the one its event is keyed
// by, so the runtime never answers it early (runtime.Event.Shared).
func manyGroups(req *wire.Request) bool {
	switch b := req.Body.(type) {
	case *kmsg.DeleteGroupsRequest:
		return len(b.Groups) > 1
	case *kmsg.IncrementalAlterConfigsRequest:
		return len(b.Resources) > 1
	case *kmsg.AlterConfigsRequest:
		return len(b.Resources) > 1
	}
	return false // reads (describes, offset fetches) wait for the rounds in flight anyway
}

// shardOf returns the shard whose core is c; called on that shard's
// worker, from inside one of its events.
func (l *Loop) shardOf(c *core.Coordinator) *shard {
	s, _ := l.byCore.Load(c)
	return s.(*shard)
}

// batchOf returns the round's batch of the partition whose core is c.
func (l *Loop) batchOf(c *core.Coordinator) *batch { return &l.shardOf(c).batch }

// Replay implements runtime.Shard: group-config records are the host's,
// the others core's.
func (s *shard) Replay(r runtime.Record) error {
	if _, host := store.GroupConfigGroup(r.Key); host { // a core record takes no lock
		s.l.dynMu.Lock()
		_, err := s.l.replayGroupConfig(store.Entry{Key: r.Key, Value: r.Value})
		s.l.dynMu.Unlock()
		return err
	}
	if err := s.c.ReplayBytes(r.Key, r.Value); err != nil {
		return fmt.Errorf("replaying a record into the coordinator: %w", err)
	}
	return nil
}

// Step implements runtime.Shard.
func (s *shard) Step(now int64, in any) []runtime.Record {
	switch in := in.(type) {
	case runtime.Loaded:
		s.loaded(now)
	case runtime.Tick:
		return s.tick(now, in)
	case event:
		s.handle(in, now)
	case *event: // a client request's (submit)
		s.handle(*in, now)
	}
	return s.newRecords(nil)
}

// A Tick fires at most tickTimers of the timers due, and past tickMin
// of them stops once it has run for tickTime: a mass expiry (thousands
// of members of one group) is fired in slices, the rest at the next
// Tick, which the runtime queues at once (their deadline has passed), so
// the partition's other groups step between the slices. The few timers
// of ordinary work (a member's expiry and what it starts) stay in one
// Tick however loaded the machine, unless a group's event waits in the
// partition's queue (runtime.Tick.Waiting): then the slice ends after
// the timer in progress, so that event waits for one timer's work (a
// fenced member: 10-15 µs) and not for a whole slice; it is asked after
// every timer but the first, so a slice fires at least one. Before it
// asks, the slice lets the goroutines waiting for the core run
// (runtime.Tick.Yield, at most once every 50 µs), so that a group woken
// meanwhile has queued its event. Each timer is its own write in Kafka too
// (core.Tick{Limit: 1}), and Kafka queues each timer's event behind the
// requests queued before it fired. A timer that armed a timer already
// due ends its Tick: core continues at the next one, after the events
// queued meanwhile. A timer that wrote part of a large group's assignor
// result (core.EventTargetPart, a few dozen members' targets) ends it
// only while a group's event waits: the parts are small so that this
// event waits for one of them, and the Tick goes on with the next part
// otherwise, so a large result is not written more slowly for it.
const (
	tickTimers = 64
	tickMin    = 8
	tickTime   = 2 * time.Millisecond
)

func (s *shard) tick(now int64, in runtime.Tick) []runtime.Record {
	start := time.Now()
	waiting := in.Waiting
	var recs []runtime.Record
	for n := 0; n < tickTimers && (n < tickMin || time.Since(start) < tickTime); n++ {
		if n > 0 && waiting != nil {
			if in.Yield != nil {
				in.Yield() // a group woken on this core queues its event first
			}
			if waiting() {
				return recs
			}
		}
		if at, ok := s.c.NextDeadline(); !ok || at > now {
			return recs
		}
		out := s.l.step(s.c, now, core.Tick{Limit: 1, Scratch: true}) // copied by batch.add, read before the next step
		s.batch.add(out)
		// Encoded timer by timer: the slice's end, which a waiting
		// group's event waits for, encodes one timer's records, not the
		// whole slice's. From the second timer on there is room for as
		// many records per timer as a first one of a few records wrote
		// (a mass expiry's slice: one allocation, not a doubling series),
		// and in the batch for as many events per timer as the second
		// wrote (the events are kept after the commit, the array is not
		// lent again).
		if n == 1 && len(recs) <= 8 {
			recs = slices.Grow(recs, len(recs)*(tickTimers-1))
		}
		if n == 1 && len(out.Events) <= 8 {
			s.batch.events = slices.Grow(s.batch.events, len(out.Events)*(tickTimers-2))
		}
		recs = s.newRecords(recs)
		if slices.ContainsFunc(out.Events, func(e core.Event) bool { return e.Kind == core.EventTargetPart }) {
			if waiting != nil && waiting() {
				return recs
			}
			continue // the next part is the timer it armed, due at once
		}
		if slices.ContainsFunc(out.Timers, func(t core.TimerChange) bool { return !t.Cancel && t.Deadline <= now }) {
			// A timer armed already due (a 0 ms initial rebalance delay
			// extended for the members that joined) fires at the next
			// Tick, after the events queued meanwhile: Kafka enqueues
			// its event behind them.
			return recs
		}
	}
	return recs
}

// loaded prepares a replayed partition: the topic image, each group's
// settings, core's Loaded, and one end-offset fetch for its groups.
func (s *shard) loaded(now int64) {
	topics := s.l.topics
	if s.l.d.Ownership != nil && s.l.d.DataPlane != nil {
		// A node of a cluster loads partitions long after it started (a
		// take-over), and the periodic refresh hands a new image only to
		// the partitions loaded when the image changed: the image from
		// the start would miss every topic created since, and a streams
		// group taken over would report its source topics missing.
		if ts, _, err := s.l.fetchTopics(); err == nil {
			topics = ts
		} else {
			s.l.log.Warn("topic metadata refresh on load failed; using the image from the start", "err", err)
		}
	}
	if topics != nil {
		s.l.step(s.c, now, core.Topics{Topics: topics})
		s.c.Commit()
	}
	s.l.dynMu.RLock()
	defer s.l.dynMu.RUnlock()
	for _, g := range s.c.GroupIDs() {
		s.configure(g)
	}
	s.batch.add(s.c.Loaded(now))
	if s.l.d.DataPlane != nil {
		fetched := s.l.fetchEndOffsetsOnLoad(s.c, &s.batch)
		s.l.fetchedMu.Lock()
		for g, at := range fetched {
			s.l.fetched[g] = at
		}
		s.l.fetchedMu.Unlock()
	}
}

func (s *shard) handle(ev event, now int64) {
	if ev.read != nil {
		s.l.dynMu.RLock()
		s.batch.add(ev.read(s.c, now))
		s.l.dynMu.RUnlock()
		return
	}
	s.nextID++
	id := s.nextID
	if ev.call != nil {
		s.pending[id] = ev.call
	}
	if ev.configs {
		s.l.dynMu.Lock()
		defer s.l.dynMu.Unlock()
	}
	if ev.stepped {
		s.batch.add(s.l.stepCall(s.c, now, id, ev.call))
		return
	}
	s.batch.add(ev.mutate(s.c, now, id))
}

// newRecords appends to out the records the batch gained since the last
// call, encoded.
func (s *shard) newRecords(out []runtime.Record) []runtime.Record {
	b := &s.batch
	out = slices.Grow(out, len(b.records)-s.encoded+len(b.hostRecords)-s.encodedHost)
	for _, r := range b.records[s.encoded:] {
		k, v := s.arena.encode(r)
		out = append(out, runtime.Record{Key: k, Value: v, Owner: r.Key.Group()})
	}
	for _, r := range b.hostRecords[s.encodedHost:] {
		r.Owner, _ = store.GroupConfigGroup(r.Key)
		out = append(out, r)
	}
	s.encoded, s.encodedHost = len(b.records), len(b.hostRecords)
	return out
}

// sealedRound is a sealed round's batch and the answers of the requests
// its responses answer.
type sealedRound struct {
	b       batch
	answers *roundAnswers
}

type claim struct {
	c *call
	r core.Response
}

// roundAnswers are a sealed round's claims (the requests its responses
// answer) and whether they were answered (the round was durable, or
// answered early because it depends on nothing in flight): one object,
// so that sealing a round of one request allocates little.
type roundAnswers struct {
	s        *shard
	claimed  []claim
	one      [1]claim // claimed's array for a round of one request
	wrote    bool     // the round wrote records
	answered atomic.Bool
}

// release answers the claims, once.
func (a *roundAnswers) release() {
	if !a.answered.CompareAndSwap(false, true) {
		return
	}
	if a.wrote {
		a.s.storeHealthy() // before the answers: no client sees an unready store after its write succeeded
	}
	for _, x := range a.claimed {
		x.answer()
	}
}

// claimOf takes the request r answers out of the pending table and
// gives r the request's version: the claim to answer, or false if the
// request is no longer pending (failed, or answered already).
func (s *shard) claimOf(r core.Response) (claim, bool) {
	c, ok := s.pending[r.Request]
	if !ok {
		return claim{}, false
	}
	delete(s.pending, r.Request)
	if r.Msg != nil {
		r.Msg.SetVersion(c.req.Version) // here, beside core, not on the appender
	}
	return claim{c: c, r: r}, true
}

// answer sends the claim's response to its request.
func (x claim) answer() { x.c.answer(reply{msg: x.r.Msg}) }

// Seal implements runtime.Sealer: the round's batch waits for its
// append; the next round's starts. The round's responses are released
// as soon as it is durable, by the returned function (on the goroutine
// that learns it, even while a later round is stepped).
func (s *shard) Seal() func() {
	b := s.take()
	b.create = s.l.holdInternalTopics(b.create) // before the responses that report them go
	a := &roundAnswers{s: s}
	cl := a.one[:0]
	for _, r := range b.responses {
		if x, ok := s.claimOf(r); ok {
			cl = append(cl, x)
		}
	}
	a.claimed = cl
	s.sealed = append(s.sealed, sealedRound{b: b, answers: a})
	s.c.Seal()
	if len(cl) == 0 {
		return nil
	}
	a.wrote = len(b.records)+len(b.hostRecords) > 0
	return a.release
}

// Finish implements runtime.Finisher: the round being stepped wrote no
// record and no round is in flight. A round whose batch holds only
// responses — a steady heartbeat's answer, with nothing to note, run,
// check, create or undo — is answered and committed here without being
// sealed: its claims need no object of their own (they are answered at
// once, and never again by a rollback, which can no longer reach the
// round) and its batch's array is kept for the next round. Any other
// round is sealed, released and committed as the runtime would.
func (s *shard) Finish() bool {
	b := &s.batch
	if len(s.sealed) > 0 || len(b.records)+len(b.hostRecords)+len(b.events)+len(b.runs)+len(b.checks)+len(b.create)+len(b.failed)+len(b.undo) > 0 {
		released := false
		if f := s.Seal(); f != nil {
			f()
			released = true
		}
		s.Commit()
		return released
	}
	s.c.Commit()
	released := false
	for i, r := range b.responses {
		if x, ok := s.claimOf(r); ok {
			x.answer()
			released = true
			b.responses[i] = core.Response{}
		}
	}
	b.responses = b.responses[:0]
	s.encoded, s.encodedHost = 0, 0
	return released
}

// Commit implements runtime.Shard: the oldest sealed round's records are
// durable.
func (s *shard) Commit() {
	if len(s.sealed) == 0 {
		return
	}
	b := s.sealed[0].b // its responses went when it was durable
	s.sealed = slices.Delete(s.sealed, 0, 1)
	if len(b.records)+len(b.hostRecords) > 0 { // an append succeeded
		s.failures, s.retryAt = 0, 0
		s.storeHealthy()
	}
	s.c.CommitSealed()
	s.l.noteCommitted(&b)
	for _, id := range b.failed {
		s.fail(id)
	}
	for _, run := range b.runs {
		s.l.dispatchRun(run)
	}
	for _, chk := range b.checks {
		s.l.dispatchProbeCheck(chk)
	}
	if len(b.create) > 0 {
		s.l.createTopics(b.create)
	}
	if cap(b.records) > 0 && cap(b.records) <= maxSpare { // nothing reads a committed round's records
		clear(b.records)
		switch {
		case cap(s.batch.records) == 0: // the round being stepped has written nothing yet
			s.batch.records = b.records[:0]
		case s.spare == nil:
			s.spare = b.records[:0]
		}
	}
}

// storeHealthy records a durable append: a store that was failing is
// healthy again (readiness), logged once.
func (s *shard) storeHealthy() {
	if s.l.health.ok() {
		s.l.log.Info("store appends succeed again: the store is healthy", "partition", s.p)
	}
}

// Rollback implements runtime.Shard: an append failed, so the changes of
// every round not committed are undone (the rounds stepped after the
// failed one built on its state) and their requests answered as Kafka's coordinator
// answers a failed log append: NOT_COORDINATOR for a storage failure or a
// fenced partition, UNKNOWN_SERVER_ERROR for a record the log can never
// hold (Kafka's RecordTooLargeException). A storage failure marks the store unhealthy (readiness, the
// coordhost_store_unhealthy gauge), is logged at most once a second, and
// backs off the partition's timers.
func (s *shard) Rollback(err error) {
	b, claimed := s.takeAll()
	s.l.stats.appendFailures.Add(1)
	records := len(b.records) + len(b.hostRecords)
	code := kerr.NotCoordinator.Code
	switch {
	case errors.Is(err, runtime.ErrInvalidRecord), errors.Is(err, runtime.ErrFenced):
		kind := "invalid record"
		if errors.Is(err, runtime.ErrFenced) {
			kind = "fenced"
		}
		if kind == "invalid record" {
			code = kerr.UnknownServerError.Code // Kafka's answer to a record too large for its log
		}
		s.l.log.Error("store append failed: the batch is rolled back and its requests answered "+kerr.ErrorForCode(code).Error(),
			"partition", s.p, "records", records, "kind", kind, "err", err)
		if kind == "fenced" && s.l.d.Ownership != nil {
			s.l.d.Ownership.Retake(s.p) // owned: replaying fences back and settles an unknown commit
		}
	default:
		s.failures++
		s.retryAt = s.l.now().Add(min(storeRetryMin<<min(s.failures-1, 10), storeRetryMax)).UnixMilli()
		if log, suppressed := s.l.health.failed(err, s.l.now()); log {
			s.l.log.Error("store append failed: the batch is rolled back and its requests answered NOT_COORDINATOR; the store is unhealthy until an append succeeds",
				"partition", s.p, "records", records, "kind", "storage failed", "failures_not_logged", suppressed, "err", err)
		}
	}
	ro := s.c.Rollback()
	if len(b.undo) > 0 {
		s.l.dynMu.Lock()
		for i := len(b.undo) - 1; i >= 0; i-- {
			b.undo[i]()
		}
		s.l.dynMu.Unlock()
	}
	for _, x := range claimed {
		x.c.answer(reply{msg: wire.ErrorResponse(x.c.req.Body, code)})
	}
	for _, r := range b.responses {
		s.failWith(r.Request, code)
	}
	for _, id := range append(b.failed, ro.Failed...) {
		s.failWith(id, code)
	}
	s.batch.add(core.Output{AssignorRuns: ro.AssignorRuns, TopicsToCreate: ro.TopicsToCreate, Responses: ro.Responses})
}

func (s *shard) take() batch {
	b := s.batch
	s.batch, s.encoded, s.encodedHost = batch{records: s.spare}, 0, 0
	s.spare = nil
	return b
}

// takeAll takes the batches of every round not committed, the one being
// stepped included, as one batch in round order, and the requests the
// sealed rounds' responses answer.
func (s *shard) takeAll() (batch, []claim) {
	var all batch
	var claimed []claim
	for _, r := range s.sealed {
		if r.answers.answered.CompareAndSwap(false, true) { // not if answered early
			claimed = append(claimed, r.answers.claimed...)
		}
	}
	for _, b := range append(s.sealedBatches(), s.take()) {
		all.add(core.Output{Records: b.records, Events: b.events, Responses: b.responses, AssignorRuns: b.runs,
			ProbeChecks: b.checks, TopicsToCreate: b.create, Failed: b.failed})
		all.hostRecords = append(all.hostRecords, b.hostRecords...)
		all.undo = append(all.undo, b.undo...)
	}
	clear(s.sealed)
	s.sealed = s.sealed[:0]
	return all, claimed
}

func (s *shard) sealedBatches() []batch {
	bs := make([]batch, 0, len(s.sealed)+1)
	for _, r := range s.sealed {
		bs = append(bs, r.b)
	}
	return bs
}

// NextDeadline implements runtime.Shard: core's next deadline, not before
// the end of a storage-failure backoff.
func (s *shard) NextDeadline() (int64, bool) {
	at, ok := s.c.NextDeadline()
	if ok && at < s.retryAt {
		at = s.retryAt
	}
	return at, ok
}

// DeadlineBound implements runtime.DeadlineBounder: core's bound, not
// before the end of a storage-failure backoff (as NextDeadline).
func (s *shard) DeadlineBound() (int64, bool) {
	at, ok := s.c.DeadlineBound()
	if ok && at < s.retryAt {
		at = s.retryAt
	}
	return at, ok
}

// Unload implements runtime.Shard: requests still waiting are answered
// NOT_COORDINATOR.
func (s *shard) Unload() {
	for id, c := range s.pending {
		c.answer(reply{msg: notCoordinator(c.req)})
		delete(s.pending, id)
	}
	s.l.byCore.Delete(s.c)
	s.l.forgetConfigs(s.p)
}

func (s *shard) fail(id core.RequestID) { s.failWith(id, kerr.NotCoordinator.Code) }

// failWith answers request id with error code.
func (s *shard) failWith(id core.RequestID, code int16) {
	c, ok := s.pending[id]
	if !ok {
		return
	}
	delete(s.pending, id)
	c.answer(reply{msg: wire.ErrorResponse(c.req.Body, code)})
}

// statsLog counts a record log's appends for /metrics.
type statsLog struct {
	runtime.Log
	stats *loopStats
}

// ReplayLent implements runtime.LendingLog: the wrapped log's lending
// replay, or its Replay (whose records outlive fn, so lending them is
// trivially kept). It counts the records it hands to fn, and adds the
// count to the stats once: partitions replay in parallel, and an atomic
// add a record made the cores contend for one counter.
func (l *statsLog) ReplayLent(p int, fn func(runtime.Record) error) error {
	n := int64(0)
	defer func() { l.stats.replayed.Add(n) }()
	count := func(r runtime.Record) error {
		n++
		return fn(r)
	}
	if ll, ok := l.Log.(runtime.LendingLog); ok {
		return ll.ReplayLent(p, count)
	}
	return l.Log.Replay(p, count)
}

func (l *statsLog) Append(p int, recs []runtime.Record) error {
	_, err := l.AppendTimed(p, recs)
	return err
}

// AppendTimed implements runtime.TimedLog: the wrapped log's cost of the
// append when it says (the store's), else 0 — an append to a cluster's
// Kafka topic is mostly a wait for its brokers, charged to no group.
func (l *statsLog) AppendTimed(p int, recs []runtime.Record) (time.Duration, error) {
	start := time.Now()
	var took time.Duration
	var err error
	if tl, ok := l.Log.(runtime.TimedLog); ok {
		took, err = tl.AppendTimed(p, recs)
	} else {
		err = l.Log.Append(p, recs)
	}
	l.stats.appendNanos.Add(time.Since(start).Nanoseconds())
	l.stats.appends.Add(1)
	l.stats.records.Add(int64(len(recs)))
	return took, err
}
