package runtime

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Shard is the coordinator of one partition (Kafka's CoordinatorShard):
// the domain logic the runtime drives, one call at a time.
type Shard interface {
	// Replay applies one record of the partition's log while it loads.
	// The record's Key and Value are valid only during the call (a
	// LendingLog lends its own memory): Replay copies what it keeps.
	Replay(Record) error
	// Step handles one input — an Event's Input, Loaded{} once after
	// replay, or Tick{} when NextDeadline has passed — and returns the
	// records it wrote. Its effects stay pending until Commit or Rollback.
	// The returned slice and its array are the runtime's from then on
	// (it appends the round's later records to it and hands it to the
	// Log): the Shard neither keeps nor reuses them.
	Step(now int64, in any) []Record
	// Commit makes what was stepped since the last Commit or Rollback
	// final: the records are durable. For a Sealer it makes only the
	// oldest sealed round final.
	Commit()
	// Rollback undoes everything stepped since the last Commit — for a
	// Sealer every round not committed, sealed or not: appending the
	// records failed with err.
	Rollback(err error)
	// NextDeadline returns when the shard next needs a Tick.
	NextDeadline() (int64, bool)
	// Unload is called once when the partition is unloaded, after the
	// last Commit or Rollback.
	Unload()
}

// Rejecter is an Event.Input that knows how to be rejected: a way to
// give an event its Reject without a closure allocated per event.
type Rejecter interface {
	Reject(error)
}

// DeadlineBounder is a Shard that can tell, more cheaply than its
// NextDeadline, a time no later than its next deadline, set whenever
// NextDeadline's is: while the pending Tick is due no later than the
// bound, the runtime asks no more.
type DeadlineBounder interface {
	DeadlineBound() (int64, bool)
}

// Sealer is a Shard that can have several rounds uncommitted at once
// (Kafka's pipelined appends): the runtime steps the next round on top of
// the state of rounds whose appends are still in flight. Seal ends the
// round being stepped; each Commit then makes the oldest sealed round
// final, in order, and Rollback undoes every round not committed. The
// runtime runs a Shard that is not a Sealer one round at a time
// (Config.Pipeline 1).
type Sealer interface {
	Shard
	// Seal ends the round being stepped: what it wrote is one batch of the
	// log, committed by a later Commit once durable. It may return a
	// function that the runtime calls once, when the round and every round
	// before it are durable, on whichever goroutine learns it first —
	// maybe while the shard steps a later round, maybe after the round's
	// Commit — and never for a round rolled back: for releasing responses
	// without waiting for the round being stepped meanwhile. It must not
	// touch the state the shard's other methods use. One exception: for a
	// round that wrote no record and whose events (all of one Event.Key)
	// depend on no record in flight — no round in flight holds a record
	// whose Owner is that key or empty — the runtime calls it at once,
	// right after Seal on the same goroutine, before the rounds in flight
	// are durable; such a round is still committed in order, or rolled
	// back with them if an append before it fails (its responses, already
	// released, then must not be answered again).
	Seal() (durable func())
}

// Finisher is a Sealer that can end a round that wrote no record while
// no round is in flight in one call: Finish has the effect of Seal, then
// calling the durable function it returned (if any), then Commit, and
// reports whether that released a response. The runtime calls it instead
// of those three then; a shard can skip there the bookkeeping that only
// rounds waiting for an append need.
type Finisher interface {
	Sealer
	Finish() (released bool)
}

// Loaded is the input a shard gets once its log is replayed.
type Loaded struct{}

// Tick is the input a shard gets when its deadline has passed.
type Tick struct {
	// Waiting, when set, reports whether an event of a group waits in the
	// partition's queue: a shard that fires its due timers in slices may
	// end the slice early then (the next Tick is queued at once while
	// timers are due), so the group waits for less than a whole slice.
	Waiting func() bool
	// Yield, when set, lets the goroutines waiting for the core run, at
	// most once every YieldTime of the round (tickWaiting): a shard that
	// fires many small timers calls it before it asks Waiting, so that a
	// group whose goroutine was woken on this core meanwhile can queue
	// its event first.
	Yield func()
}

// Event is one input for a partition.
type Event struct {
	// Input is handed to the partition's Shard.Step.
	Input any
	// Read marks an input that reads committed state: it is stepped only
	// once every round before it is committed.
	Read bool
	// Reject, when set, is called instead of Step when the partition is
	// unloaded before the event is handled; when not set, an Input that is
	// a Rejecter is rejected through it.
	Reject func(error)
	// Key is the event's fairness key (the group it is for). A round takes
	// at most Config.MaxPerKey events of one key, leaving the rest queued
	// in order for the next rounds, and steps the keys with fewer events
	// in the round first; events of one key keep their order. Events
	// without a key are never held back and are stepped first, except a
	// Tick: it is stepped after the events queued before it. At most
	// Config.MaxQueuedPerKey events of one key wait in the queue; Submit
	// refuses more with ErrQueueFull. An event with a key that wrote no
	// record, while no round in flight holds a record of its key
	// (Record.Owner) or of no key, is answered at once (see Sealer).
	Key string
	// Shared marks an event that may read the state of other keys than
	// Key (a request naming several groups): it is never answered before
	// the rounds in flight are durable.
	Shared bool
	// Spared exempts the event from its key's quota: a round takes and
	// ranks it as if its key were under its share. It marks a request
	// that came on a connection other keys' requests share, which wait
	// behind it there (docs/HOST.md, "Group quotas").
	Spared bool
	// Inline lets Submit step the event on the calling goroutine when the
	// partition is idle — nothing queued, no owner stepping, settling or
	// appending for it — or stalled — no owner, and what is queued waits
	// for an append while the event would not (the pipeline is full and
	// no round in flight wrote a record of its key) — instead of handing
	// it to a worker: the caller then runs the worker's turn itself (the
	// same round, append and Commit), and hands whatever is left to the
	// pool when it ends. It saves the hand-off to a worker and back for a
	// request arriving at an idle partition, or at one whose appends a
	// flooded group keeps full (a mass expiry); a caller that must not run
	// shard code sets none.
	Inline bool
	// Charge is time already spent for the event off the partition's
	// owner (its request's decoding and preparation), counted towards
	// Key's quota as Runtime.Charge counts it, when Submit takes the
	// event — or, for an event stepped at once on an idle partition
	// (solo), in one record with its step.
	Charge time.Duration
}

// The errors Submit returns.
var (
	// ErrNotCoordinator: the partition is not held by this runtime
	// (Kafka's NOT_COORDINATOR).
	ErrNotCoordinator = errors.New("partition not held")
	// ErrLoadInProgress: the partition is loading (Kafka's
	// COORDINATOR_LOAD_IN_PROGRESS).
	ErrLoadInProgress = errors.New("partition loading")
	// ErrQueueFull: Config.MaxQueuedPerKey events of the event's key wait
	// in the partition's queue. It wraps ErrLoadInProgress: the caller
	// answers it as a partition still loading (retriable, no new
	// coordinator lookup).
	ErrQueueFull = fmt.Errorf("%w: too many requests of one group queued", ErrLoadInProgress)
)

// Config is the runtime's setup.
type Config struct {
	// Partitions is the partition count (default DefaultPartitions).
	Partitions int
	// Workers is the number of goroutines that step partitions (default
	// GOMAXPROCS). A round's final append is waited for off the workers,
	// so a slow disk under one partition does not hold a worker that
	// other partitions need.
	Workers int
	// Log is the record log of every partition.
	Log Log
	// NewShard builds the coordinator of partition p when it loads.
	NewShard func(p int) (Shard, error)
	// Now is a test's clock. Unset, the runtime runs on the real clock
	// (time.Now), and a step's readings of it also serve its timer check
	// and quota charge; a clock set here is read wherever time is needed.
	Now func() time.Time
	// MaxBatch bounds the events of one round (default 512).
	MaxBatch int
	// MaxPerKey bounds the events of one Event.Key in one round (default
	// DefaultMaxPerKey), so one group's backlog cannot make a round, and
	// the append that ends it, long for the other groups of its partition.
	MaxPerKey int
	// Pipeline bounds the rounds of one partition whose appends may be
	// outstanding while it steps the next (default DefaultPipeline; 1: a
	// round starts only once the one before is committed). A Shard that
	// is not a Sealer always runs with 1. When the pipeline is full, a
	// round may still take the events of keys that hold no record in
	// flight (one more append per such key at most), so a flooded key's
	// appends do not hold the other keys of its partition.
	Pipeline int
	// MaxQueuedPerKey bounds the events of one Event.Key waiting in a
	// partition's queue (default DefaultMaxQueuedPerKey); Submit answers
	// ErrQueueFull beyond it, so one key cannot hold unbounded memory.
	MaxQueuedPerKey int
	// RoundTime bounds the stepping time of a round (default
	// DefaultRoundTime, measured with Now): once a step ends past it while
	// an event of another key waits in the queue, the round ends and its
	// other events go back to the head of the queue, so the waiting event
	// is taken in the next round instead of waiting for the whole round
	// (a round of one key alone is not cut: its events keep sharing one
	// append).
	RoundTime time.Duration
	// YieldTime bounds how long an event of a key the round holds none of
	// waits while the round steps other keys' events (default
	// DefaultYieldTime, measured with Now): once a step ends YieldTime
	// after the round began, or after it last looked, the first queued
	// event of each such key joins the round and is stepped next, so a
	// group whose request arrives behind a flooded group's round waits
	// for about one of the flood's steps, not for the round.
	YieldTime time.Duration
	// MaxRoundBytes bounds the record bytes of a round (default
	// DefaultMaxRoundBytes) the same way, and the bytes of one append:
	// the rounds waiting for an append go in one append up to it.
	MaxRoundBytes int
	// QuotaPercent is the share of a partition's step time one Event.Key
	// may use over QuotaWindow (default DefaultQuotaPercent; negative: no
	// quota), its appends' time counted in when Log is a TimedLog and
	// the time charged by Runtime.Charge. A key over it is throttled (Runtime.Throttle) and a round
	// takes at most one of its events, stepped after the other keys'.
	QuotaPercent float64
	// MaxThrottle caps Runtime.Throttle (default DefaultMaxThrottle).
	MaxThrottle time.Duration
	// FullRounds turns off the shortcuts of a partition with nothing in
	// flight: an Inline event there goes through the queue and a full
	// round (not solo), and a round that wrote nothing ends with Seal,
	// its durable function and Commit even on a Finisher. The answers,
	// their order and the state are the same either way; tests compare
	// the two.
	FullRounds bool
}

// DefaultMaxQueuedPerKey is Config.MaxQueuedPerKey's default.
const DefaultMaxQueuedPerKey = 1024

// DefaultRoundTime is Config.RoundTime's default.
const DefaultRoundTime = 2 * time.Millisecond

// DefaultMaxRoundBytes is Config.MaxRoundBytes's default.
const DefaultMaxRoundBytes = 1 << 20

// DefaultPipeline is Config.Pipeline's default.
const DefaultPipeline = 4

// DefaultMaxPerKey is Config.MaxPerKey's default.
const DefaultMaxPerKey = 8

type partState int

const (
	stateUnloaded partState = iota
	stateLoading
	stateActive
)

// Runtime runs partitions on a pool of workers (Kafka's
// CoordinatorRuntime): a partition handles one event at a time, and a
// round — the events queued when a worker picks the partition up — ends
// with an append of the round's records, then Commit (or Rollback).
// While a round's append is in flight the partition may step the next
// rounds (Config.Pipeline); they are appended together after it, and
// their Commits come in order.
type Runtime struct {
	cfg Config
	// realClock: Config.Now was unset (time.Now), so one reading
	// of it serves where the real clock is read too (timerClock), and a
	// step's end is read as its start plus the monotonic time since
	// (partition.since).
	realClock bool
	parts     []*partition
	ready     chan *partition
	stop      chan struct{}
	wg        sync.WaitGroup
	once      sync.Once
}

type partition struct {
	id    int
	rt    *Runtime
	mu    sync.Mutex
	state partState
	queue []Event
	// queued counts the events of each Event.Key in queue; keys is
	// len(queued), read without mu (delaysOthers).
	queued map[string]int
	keys   atomic.Int32
	// unloading: an unload is queued; rounds then take the queue in order.
	unloading bool
	// scheduled: the partition is owned — in the ready queue, on a
	// worker, or settling appends on its appender — and only its owner
	// calls the shard.
	scheduled bool
	shard     Shard
	timer     *time.Timer
	// armedAt is the deadline (Unix ms) timer is pending for, 0 for none;
	// fireAt is when it fires.
	armedAt int64
	fireAt  time.Time
	// depth is Config.Pipeline, or 1 for a Shard that is not a Sealer.
	depth int
	// inflight: the sealed rounds not yet committed, oldest first.
	inflight []*sealed
	// rounds counts the rounds taken from the queue (sealed.round); only
	// the owner touches it.
	rounds uint64
	// appending: the appender goroutine runs; failed: an append failed
	// (or a round was refused), so every uncommitted round is rolled back
	// by the owner and nothing more is appended until then.
	appending bool
	failed    error
	// barrier: the queue's head waits until no round is in flight (a Read,
	// or the events after a round with a record the log refuses).
	barrier bool
	// stopping: an unload was stepped; it completes once no round is in
	// flight.
	stopping *unload
	// quota: each key's step time over the last QuotaWindow (quota.go).
	quota *quota
	// released: the owner called a round's durable function (a response
	// went) since it last yielded its core (yield.go); only the owner
	// touches it.
	released bool
	// looked: when the owner, stepping a round, last yielded its core and
	// looked for waiting events (yield.go); only the owner touches it.
	looked time.Time
}

// unload is the queued marker of an Unload.
type unload struct{ done chan struct{} }

// New starts the workers; no partition is held until Load.
func New(cfg Config) (*Runtime, error) {
	if cfg.Partitions <= 0 {
		cfg.Partitions = DefaultPartitions
	}
	if cfg.Workers <= 0 {
		cfg.Workers = goruntime.GOMAXPROCS(0)
	}
	realClock := cfg.Now == nil
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = 512
	}
	if cfg.MaxPerKey <= 0 {
		cfg.MaxPerKey = DefaultMaxPerKey
	}
	if cfg.Pipeline <= 0 {
		cfg.Pipeline = DefaultPipeline
	}
	if cfg.MaxQueuedPerKey <= 0 {
		cfg.MaxQueuedPerKey = DefaultMaxQueuedPerKey
	}
	if cfg.RoundTime <= 0 {
		cfg.RoundTime = DefaultRoundTime
	}
	if cfg.YieldTime <= 0 {
		cfg.YieldTime = DefaultYieldTime
	}
	if cfg.MaxRoundBytes <= 0 {
		cfg.MaxRoundBytes = DefaultMaxRoundBytes
	}
	if cfg.QuotaPercent == 0 {
		cfg.QuotaPercent = DefaultQuotaPercent
	}
	if cfg.MaxThrottle <= 0 {
		cfg.MaxThrottle = DefaultMaxThrottle
	}
	if cfg.Log == nil || cfg.NewShard == nil {
		return nil, errors.New("runtime: Log and NewShard are required")
	}
	r := &Runtime{cfg: cfg, realClock: realClock, ready: make(chan *partition, cfg.Partitions), stop: make(chan struct{})}
	for p := 0; p < cfg.Partitions; p++ {
		r.parts = append(r.parts, &partition{id: p, rt: r, queued: map[string]int{}, quota: newQuota(cfg.QuotaPercent, cfg.MaxThrottle)})
	}
	for w := 0; w < cfg.Workers; w++ {
		r.wg.Add(1)
		go r.worker()
	}
	return r, nil
}

// Partitions returns the partition count.
func (r *Runtime) Partitions() int { return len(r.parts) }

// PartitionFor returns the partition of group.
func (r *Runtime) PartitionFor(group string) int { return PartitionFor(group, len(r.parts)) }

func (r *Runtime) worker() {
	defer r.wg.Done()
	for {
		select {
		case <-r.stop:
			return
		case p := <-r.ready:
			if p.work(true) {
				goruntime.Gosched() // yield.go
			}
		}
	}
}

// Submit queues ev for partition p. It fails with ErrNotCoordinator or
// ErrLoadInProgress when the partition is not active.
func (r *Runtime) Submit(p int, ev Event) error {
	if p < 0 || p >= len(r.parts) {
		return fmt.Errorf("partition %d of %d: %w", p, len(r.parts), ErrNotCoordinator)
	}
	return r.parts[p].enqueue(ev)
}

func (p *partition) enqueue(ev Event) error {
	p.mu.Lock()
	switch p.state {
	case stateLoading:
		p.mu.Unlock()
		p.charge(ev)
		return ErrLoadInProgress
	case stateUnloaded:
		p.mu.Unlock()
		p.charge(ev)
		return ErrNotCoordinator
	}
	if ev.Key != "" && p.queued[ev.Key] >= p.rt.cfg.MaxQueuedPerKey {
		p.mu.Unlock()
		p.charge(ev)
		return ErrQueueFull
	}
	if ev.Inline && !p.rt.cfg.FullRounds && !p.scheduled && len(p.queue) == 0 && p.idleLocked(ev) {
		p.scheduled = true // owned by this goroutine, as a worker owns it
		sh := p.shard
		p.mu.Unlock()
		p.solo(sh, ev)
		return nil
	}
	p.charge(ev) // before its round can look at its key's quota (lock order: p.mu, then the quota's)
	inline := ev.Inline && !p.scheduled && (len(p.queue) == 0 || p.stalledLocked(ev.Key))
	p.queue = append(p.queue, ev)
	p.countOneLocked(ev, 1)
	if inline {
		p.scheduled = true // owned by this goroutine, as a worker owns it
		p.mu.Unlock()
		p.work(false)
		return nil
	}
	p.scheduleLocked()
	p.mu.Unlock()
	return nil
}

// charge counts ev.Charge towards its key's quota (Event.Charge).
func (p *partition) charge(ev Event) {
	if ev.Charge > 0 {
		p.quota.record(ev.Key, p.rt.cfg.Now(), ev.Charge)
	}
}

// countLocked adds d to the queued count of each keyed event of evs.
func (p *partition) countLocked(evs []Event, d int) {
	for _, ev := range evs {
		p.countOneLocked(ev, d)
	}
}

// countOneLocked adds d to the queued count of ev's key, if it has one.
func (p *partition) countOneLocked(ev Event, d int) {
	if ev.Key == "" {
		return
	}
	n := len(p.queued)
	if p.queued[ev.Key] += d; p.queued[ev.Key] <= 0 {
		delete(p.queued, ev.Key)
	}
	if len(p.queued) != n {
		p.keys.Store(int32(len(p.queued)))
	}
}

func (p *partition) scheduleLocked() {
	if !p.scheduled {
		p.scheduled = true
		p.rt.ready <- p // capacity Partitions: never blocks
	}
}

// Load replays partition p's log into a new shard, steps Loaded and makes
// the partition active. Submit answers ErrLoadInProgress meanwhile. It
// returns when the partition is active, or with the replay's error (the
// partition is then not held).
func (r *Runtime) Load(ctx context.Context, p int) error {
	if p < 0 || p >= len(r.parts) {
		return fmt.Errorf("runtime: no partition %d", p)
	}
	part := r.parts[p]
	part.mu.Lock()
	if part.state != stateUnloaded {
		part.mu.Unlock()
		return fmt.Errorf("runtime: partition %d is already held", p)
	}
	part.state = stateLoading
	part.mu.Unlock()
	sh, err := part.load(ctx)
	part.mu.Lock()
	defer part.mu.Unlock()
	if err != nil {
		part.state = stateUnloaded
		return err
	}
	part.shard, part.state, part.depth = sh, stateActive, 1
	if _, ok := sh.(Sealer); ok {
		part.depth = r.cfg.Pipeline
	}
	part.queue = append([]Event{{Input: Loaded{}}}, part.queue...)
	part.scheduleLocked()
	return nil
}

func (p *partition) load(ctx context.Context) (Shard, error) {
	sh, err := p.rt.cfg.NewShard(p.id)
	if err != nil {
		return nil, fmt.Errorf("partition %d: %w", p.id, err)
	}
	replay := p.rt.cfg.Log.Replay
	if ll, ok := p.rt.cfg.Log.(LendingLog); ok {
		replay = ll.ReplayLent
	}
	n := 0
	err = replay(p.id, func(rec Record) error {
		if n++; n%1024 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		return sh.Replay(rec)
	})
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("partition %d: replaying record %d: %w", p.id, n, err)
	}
	return sh, nil
}

// LoadAll loads every partition, several at a time.
func (r *Runtime) LoadAll(ctx context.Context) error {
	errs := make([]error, len(r.parts))
	sem := make(chan struct{}, r.cfg.Workers)
	var wg sync.WaitGroup
	for p := range r.parts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[p] = r.Load(ctx, p)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Unload stops partition p after the events queued before it: their
// rounds, and every round in flight, are committed (or rolled back), the
// shard's Unload is called, and later events are
// rejected with ErrNotCoordinator. It returns when the partition is
// unloaded or ctx ends.
func (r *Runtime) Unload(ctx context.Context, p int) error {
	part := r.parts[p]
	done := make(chan struct{})
	part.mu.Lock()
	if part.state != stateActive {
		part.mu.Unlock()
		return fmt.Errorf("runtime: partition %d: %w", p, ErrNotCoordinator)
	}
	part.queue = append(part.queue, Event{Input: unload{done: done}})
	part.unloading = true
	part.scheduleLocked()
	part.mu.Unlock()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Held reports whether partition p is active.
func (r *Runtime) Held(p int) bool {
	part := r.parts[p]
	part.mu.Lock()
	defer part.mu.Unlock()
	return part.state == stateActive
}

// Close unloads every active partition and stops the workers. It is safe
// to call more than once; a ctx that ends first leaves the rest to stop
// in the background.
func (r *Runtime) Close(ctx context.Context) error {
	var err error
	for p := range r.parts {
		if r.Held(p) {
			if e := r.Unload(ctx, p); e != nil && !errors.Is(e, ErrNotCoordinator) {
				err = e
				break
			}
		}
	}
	r.once.Do(func() { close(r.stop) })
	if err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// takeLocked removes the events of the next round from the queue: up to
// MaxBatch, at most MaxPerKey of one key, in the order Event.Key
// describes; with only, just the events of the keys only accepts. A
// queued Tick ends the round before it unless it heads the queue. Once
// an unload is queued the queue is taken in order.
func (p *partition) takeLocked(only func(key string) bool) []Event {
	limit := p.rt.cfg.MaxBatch
	if p.unloading {
		n := min(len(p.queue), limit)
		evs := p.queue[:n:n]
		p.queue = p.queue[n:]
		p.countLocked(evs, -1)
		return evs
	}
	if len(p.queue) == 1 && (only == nil || only(p.queue[0].Key)) {
		// One event, the usual case for a heartbeat at an idle partition:
		// it is the round, with no ranking to do; the queue's array is
		// kept for the next events.
		evs := []Event{p.queue[0]}
		clear(p.queue)
		p.queue = p.queue[:0]
		p.countOneLocked(evs[0], -1)
		return evs
	}
	taken := make(map[string]int)
	throttled := p.quota.overAt(p.rt.cfg.Now)
	var evs, rest []Event
	for i, ev := range p.queue {
		if len(evs) == limit {
			rest = append(rest, p.queue[i:]...)
			break
		}
		if ev.Key != "" && taken[ev.Key] >= p.perKey(held(ev, throttled)) || only != nil && !only(ev.Key) {
			rest = append(rest, ev)
			continue
		}
		_, tick := ev.Input.(Tick)
		if tick && len(evs) > 0 {
			// The round ends before a Tick: the events queued before it
			// are stepped first, as Kafka runs a timer's event behind the
			// requests already queued (a 0 ms initial rebalance delay
			// then sees every JoinGroup that arrived before it fired).
			rest = append(rest, p.queue[i:]...)
			break
		}
		if ev.Key != "" {
			taken[ev.Key]++
		}
		evs = append(evs, ev)
		if tick {
			// A Tick first in a round is a round of its own: the events queued
			// after it stay in the queue, where its Waiting sees them, so
			// a canary's heartbeat behind a mass expiry waits for one
			// timer's work, not for the Tick's whole slice.
			rest = append(rest, p.queue[i+1:]...)
			break
		}
	}
	clear(p.queue) // the events now live in evs and rest
	p.queue = rest
	p.countLocked(evs, -1)
	if len(taken) > 0 {
		slices.SortStableFunc(evs, func(a, b Event) int {
			return cmp.Compare(rank(a, taken, throttled), rank(b, taken, throttled))
		})
	}
	return evs
}

// rank orders a round's events: those without a key first, then the keys
// with the fewest events in the round, then the events held back for
// their key's quota (held).
func rank(ev Event, taken map[string]int, throttled func(string) bool) int {
	switch {
	case ev.Key == "":
		return 0
	case held(ev, throttled):
		return math.MaxInt
	}
	return taken[ev.Key]
}

// rejectLater answers the events queued behind an unload; a second
// unload of the same partition is done with the first.
func (p *partition) rejectLater(evs []Event) {
	for _, ev := range evs {
		if u, ok := ev.Input.(unload); ok {
			close(u.done)
			continue
		}
		if ev.Reject != nil {
			ev.Reject(ErrNotCoordinator)
		} else if r, ok := ev.Input.(Rejecter); ok {
			r.Reject(ErrNotCoordinator)
		}
	}
}

func (p *partition) now() int64 { return p.rt.cfg.Now().UnixMilli() }

// timerClock is the time a timer check reads, once for the whole check:
// Config.Now's for the deadlines (counted in its milliseconds) and the
// real clock's for the timer (a time.Timer runs on it). When Config.Now
// is the real clock, one reading serves both, and at is the time the
// caller read already (solo's, after its step), if any: the check
// compares distances from that reading on both sides, so an earlier one
// gives the same answer.
type timerClock struct {
	p         *partition
	at        time.Time // the caller's reading, if any
	now, real time.Time
	read      bool
}

func (c *timerClock) get() (now, real time.Time) {
	if c.read {
		return c.now, c.real
	}
	c.read = true
	switch {
	case !c.p.rt.realClock:
		c.now, c.real = c.p.rt.cfg.Now(), time.Now()
	case c.at.IsZero():
		c.now = time.Now()
		c.real = c.now
	default:
		c.now, c.real = c.at, c.at
	}
	return c.now, c.real
}

// armTimerLocked schedules a Tick at the shard's next deadline. A timer
// still pending for that deadline or an earlier one is left as it is: it
// fires early at worst, and the Tick it queues re-arms it (a steady
// heartbeat moves its member's session deadline later at every round, and
// resetting a runtime timer each time cost more than the rare early Tick).
// at is the caller's reading of the clock, if it has one (timerClock).
func (p *partition) armTimerLocked(sh Shard, at time.Time) {
	c := timerClock{p: p, at: at}
	if b, isB := sh.(DeadlineBounder); isB && p.armedAt != 0 {
		// A pending timer no later than a bound of the deadline passes
		// the check below for the deadline too: the exact one, which may
		// cost the shard work, is not needed.
		if lb, ok := b.DeadlineBound(); ok && p.coversLocked(lb, &c) {
			return
		}
	}
	deadline, ok := sh.NextDeadline()
	if !ok {
		if p.timer != nil {
			p.timer.Stop()
		}
		p.armedAt = 0
		return
	}
	if p.coversLocked(deadline, &c) {
		return
	}
	// Armed from a fresh reading, not the caller's: the timer runs from
	// now, and fireAt must say when it fires.
	fresh := timerClock{p: p}
	now, real := fresh.get()
	d := max(time.Duration(deadline-now.UnixMilli())*time.Millisecond, 0)
	p.armedAt, p.fireAt = deadline, real.Add(d)
	if p.timer == nil {
		p.timer = time.AfterFunc(d, p.tick)
		return
	}
	p.timer.Reset(d)
}

// coversLocked reports whether the pending timer fires no later than at:
// it was armed for at or earlier, and fires within at's distance from now
// (give or take the milliseconds deadlines are counted in: a Config.Now
// that is not the real clock may have moved ahead of it). It reads no
// clock when no timer is pending for at or earlier.
func (p *partition) coversLocked(at int64, c *timerClock) bool {
	if p.armedAt == 0 || p.armedAt > at {
		return false
	}
	now, real := c.get()
	d := max(time.Duration(at-now.UnixMilli())*time.Millisecond, 0)
	return p.fireAt.Sub(real) <= d+time.Millisecond
}

func (p *partition) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armedAt = 0 // the timer fired: the next release arms it again
	if p.state != stateActive {
		return
	}
	for _, ev := range p.queue {
		if _, ok := ev.Input.(Tick); ok {
			return // one pending tick is enough
		}
	}
	p.queue = append(p.queue, Event{Input: Tick{Waiting: p.groupWaiting, Yield: p.tickYield}})
	p.scheduleLocked()
}
