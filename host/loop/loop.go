package loop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/core/records"
	"github.com/coordhost/coordhost/host/admin"
	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/cluster"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/experiment"
	"github.com/coordhost/coordhost/host/gateway"
	"github.com/coordhost/coordhost/host/offsets"
	"github.com/coordhost/coordhost/host/runtime"
	"github.com/coordhost/coordhost/host/store"
	"github.com/coordhost/coordhost/host/wire"
)

// The event loop. Groups map to partitions (Kafka's __consumer_offsets
// rule); each partition has its own core.Coordinator (a shard,
// loop_shard.go) and host/runtime runs the partitions on a pool of
// workers, one event at a time per partition. A round of a partition
// hands the events that are queued (up to maxBatch) to its core, appends
// every record core returned to the store as one fsynced batch (group
// commit, shared with the other partitions' rounds of the moment), then
// calls Commit and releases the round's responses — or, if the append
// failed, calls Rollback and answers them NOT_COORDINATOR. Reads of
// committed state (describe, list, offset decisions) flush the round
// first, so they see exactly what is durable. Requests naming several
// groups are split by partition and their answers merged
// (loop_fanout.go).

// maxBatch bounds the events handled in one round.
const maxBatch = 512

// event is one unit of work for a partition. mutate runs core entry
// points that return an Output; read runs reads of committed state.
type event struct {
	mutate func(c *core.Coordinator, now int64, id core.RequestID) core.Output
	read   func(c *core.Coordinator, now int64) core.Output
	// call is the waiting request (nil for internal inputs).
	call *call
	// stepped: the event steps call's request whole (stepCall, with
	// call.step's arguments) instead of calling mutate; no closure.
	stepped bool
	// configs marks an event that changes runtime group configs: it runs
	// with dynMu held alone.
	configs bool
	// group is the group the event is for, its fairness key in the
	// partition's rounds (runtime.Event.Key); "" for partition-wide work.
	group string
	// charge is the group's time spent on the request before it is
	// queued (runtime.Event.Charge).
	charge time.Duration
}

// call is one client request waiting for its response.
type call struct {
	req *wire.Request
	// step is what a request core steps whole adds to it (event.stepped):
	// kept in the call, which the request needs anyway, so that the event
	// allocates no closure for it.
	step steppedArgs
	// ev is the request's event, handed to its partition by pointer
	// (runtime.Event.Input): boxing the value would allocate a copy.
	ev event
	// mu guards the answer: r once answered, and wake, the channel of a
	// waiter that found no answer yet. A request stepped and answered on
	// its own goroutine (runtime.Event.Inline, a round committed at once)
	// finds its answer there when Submit returns, and makes no channel.
	mu       sync.Mutex
	r        reply
	answered bool
	wake     chan struct{}
}

// answer gives c its reply; only the first counts.
func (c *call) answer(r reply) {
	c.mu.Lock()
	if c.answered {
		c.mu.Unlock()
		return
	}
	c.r, c.answered = r, true
	w := c.wake
	c.mu.Unlock()
	if w != nil {
		close(w)
	}
}

// result returns c's reply if it came, else a channel closed once it does
// (c.r is then set).
func (c *call) result() (reply, bool, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.answered {
		return c.r, true, nil
	}
	if c.wake == nil {
		c.wake = make(chan struct{})
	}
	return reply{}, false, c.wake
}

// Reject implements runtime.Rejecter: the event of a request its
// partition was unloaded before stepping is answered NOT_COORDINATOR.
func (e *event) Reject(error) {
	if e.call != nil {
		e.call.answer(reply{msg: notCoordinator(e.call.req)})
	}
}

type reply struct {
	msg kmsg.Response
	err error
}

// Deps are what the event loop uses around core.
type Deps struct {
	// Core is the coordinator of a loop with a single partition; it is
	// used when NewCore is nil.
	Core *core.Coordinator
	// NewCore builds the coordinator of one partition. With NewCore the
	// loop runs Partitions partitions.
	NewCore func() (*core.Coordinator, error)
	// Partitions is the partition count with NewCore: 0 takes the count
	// recorded in the store, or runtime.DefaultPartitions for a new store.
	// A store created with another count is refused.
	Partitions int
	// Workers is the number of goroutines that run partitions (0:
	// GOMAXPROCS).
	Workers int
	// Pipeline is how many rounds of a partition may wait for their
	// appends while it steps the next (0: runtime.DefaultPipeline; 1: a
	// round starts once the one before is committed).
	Pipeline int
	// MaxQueuedPerGroup bounds the requests of one group waiting in its
	// partition's queue (0: runtime.DefaultMaxQueuedPerKey).
	MaxQueuedPerGroup int
	// GroupQuotaPercent and MaxThrottle are the per-group quota (0:
	// runtime.DefaultQuotaPercent, negative: none) and the throttle cap
	// (0: runtime.DefaultMaxThrottle); loop_quota.go.
	GroupQuotaPercent int
	MaxThrottle       time.Duration
	Store             *store.Store
	DataPlane         *gateway.DataPlane
	Assignors         *assign.Registry
	Metrics           *admin.Metrics
	Log               *slog.Logger
	// Groups resolves per-group settings with the runtime layer (group
	// configs altered through Kafka's config APIs) on top; nil leaves
	// runtime group configs unavailable (loop_groupconfig.go).
	Groups *config.Groups
	// TopicRefresh is the period of topic metadata refreshes (default 1s).
	TopicRefresh time.Duration
	// EndOffsetsRefresh returns how often a streams group's changelog end
	// offsets are fetched from the data plane (0: never; nil: every 30s).
	EndOffsetsRefresh func(group string) time.Duration
	// EndOffsetsTick is how often the end-offset fetcher looks for groups
	// whose refresh is due (default 1s).
	EndOffsetsTick time.Duration
	// HistoryTargets is how many targets the rebalance history keeps per
	// group (admin.history.targets; 0: experiment.DefaultHistoryTargets).
	HistoryTargets int
	// HistoryInputs keeps each target's assignor lag input in the history
	// (admin.history.inputs).
	HistoryInputs bool
	// OpenLog, when set, opens the record log of parts partitions instead
	// of Store's (store.kind=kafka), with the function that closes it.
	OpenLog func(parts int) (runtime.Log, func() error, error)
	// Ownership, when set, shares the partitions with the cluster's other
	// nodes: the loop loads the partitions its group assigns instead of
	// every one, and answers for a partition only while Serving allows
	// (cluster.id; docs/SCALE-OUT.md).
	Ownership *cluster.Node
	// ClientCreatesInternalTopics keeps the internal topics a streams
	// group's heartbeat finds missing for host/authz to create over the
	// client's own upstream session, instead of creating them as coordhost
	// (an authenticated external cluster; loop_topics.go).
	ClientCreatesInternalTopics bool
	// OffsetsAs, when set, gives the writer of offsets as the client's
	// principal (dataplane.offsets.identity=client): commits and offset
	// deletes are then never written under coordhost's identity
	// (offsets_gate.go).
	OffsetsAs func(principal string) (offsets.Writer, error)

	// fullRounds is runtime.Config.FullRounds (package tests compare the
	// two paths).
	fullRounds bool
}

// Loop is the host's event loop: the GroupCoordinator of a running server.
type Loop struct {
	d      Deps
	now    func() time.Time // the clock: time.Now but in package tests
	log    *slog.Logger
	rt     *runtime.Runtime
	rlog   runtime.Log
	closer func() error // stops rlog's committer (nil: nothing to stop)
	stop   chan struct{}
	done   chan struct{} // closed when the loop stops
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // background goroutines (assignor runs, refreshes)

	stopOnce, doneOnce, closeOnce sync.Once

	byCore sync.Map // *core.Coordinator -> *shard, while its partition is loaded

	// dynMu guards dyn: readers of committed state and of a group's
	// settings hold it shared, events that change runtime configs (and
	// their undo) hold it alone.
	dynMu    sync.RWMutex
	dyn      map[string]map[string]string // runtime group configs (loop_groupconfig.go)
	topicSig string
	topics   []core.TopicMetadata // the image fetched at start, applied by each partition on load
	history  *history
	// groupEvents writes the INFO lines of committed events (eventlog.go).
	groupEvents *groupEvents
	ab          *experiment.Runtime // rebalance history, shadow runs, split groups (host/experiment)

	fallbacks fallbackLog // groups whose last target came from a fallback assignor (any goroutine)
	offs      offsetGates // per-group queues of offset requests (offsets_gate.go)

	fetchedMu sync.Mutex
	fetched   map[string]time.Time // end offsets fetched on load, by group

	stats      loopStats
	health     storeHealth
	probes     probeStats
	ends       endOffsetStats
	workers    *workerPool // assignor workers (assignor_workers.go)
	refreshNow chan struct{}
	held       heldTopics // with ClientCreatesInternalTopics
	sigMu      sync.Mutex
}

// batch is what a partition's round accumulated since the last Commit.
type batch struct {
	records   []records.Record
	events    []core.Event
	responses []core.Response
	runs      []core.AssignorRun
	checks    []core.ProbeCheck
	create    []core.TopicToCreate
	failed    []core.RequestID
	// host records (group configs) appended with core's, and how to undo
	// their speculative effect if the append fails.
	hostRecords []store.Record
	undo        []func()
}

func (b *batch) add(o core.Output) {
	b.records = append(b.records, o.Records...)
	b.events = append(b.events, o.Events...)
	b.responses = append(b.responses, o.Responses...)
	b.runs = append(b.runs, o.AssignorRuns...)
	b.checks = append(b.checks, o.ProbeChecks...)
	b.create = append(b.create, o.TopicsToCreate...)
	b.failed = append(b.failed, o.Failed...)
}

// New partitions the store (converting a store written before
// partitions once), replays each partition into its core, calls Loaded
// and starts serving. A record the core cannot decode fails start.
func New(d Deps) (*Loop, error) {
	return NewContext(context.Background(), d)
}

// NewContext is New with the start-up I/O (store replay, topic
// metadata, end offsets) bounded by ctx.
func NewContext(ctx context.Context, d Deps) (*Loop, error) {
	return newLoop(ctx, d, nil)
}

// newLoop is NewContext on the clock now (nil: the real clock, time.Now).
func newLoop(ctx context.Context, d Deps, now func() time.Time) (*Loop, error) {
	// The runtime is given a test's clock only: with none it knows it
	// runs on the real one, whose readings a step shares with its timer
	// check and quota charge (runtime.Config.Now).
	rtNow := now
	if now == nil {
		now = time.Now
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.TopicRefresh <= 0 {
		d.TopicRefresh = time.Second
	}
	if d.EndOffsetsTick <= 0 {
		d.EndOffsetsTick = time.Second
	}
	l := &Loop{d: d, now: now, log: d.Log, stop: make(chan struct{}), done: make(chan struct{}), history: newHistory(),
		dyn: map[string]map[string]string{}, fetched: map[string]time.Time{},
		refreshNow: make(chan struct{}, 1)}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.workers = newWorkerPool(l)
	l.ab = experiment.New(l.ctx, &l.wg, experiment.Config{Log: l.log, Assignors: d.Assignors, HistoryTargets: d.HistoryTargets, HistoryInputs: d.HistoryInputs, Metrics: d.Metrics})
	// The start-up I/O below uses l.ctx; ending ctx (a signal during
	// start) ends it too.
	stopStart := context.AfterFunc(ctx, l.cancel)
	defer stopStart()
	restoreGC := replayGC() // replaygc.go
	defer restoreGC()
	parts, err := l.openLog()
	if err != nil {
		l.cancel()
		return nil, err
	}
	l.groupEvents = newGroupEvents(d.Log.Handler()) // stopAll stops it
	if d.Metrics != nil {
		l.registerMetrics(d.Metrics)
		l.registerProbeMetrics(d.Metrics)
	}
	if d.DataPlane != nil {
		l.refreshTopicsNow()
	}
	l.rt, err = runtime.New(runtime.Config{Partitions: parts, Workers: d.Workers, Log: l.rlog, NewShard: l.newShard,
		Now: rtNow, MaxBatch: maxBatch, Pipeline: d.Pipeline, MaxQueuedPerKey: d.MaxQueuedPerGroup,
		QuotaPercent: float64(d.GroupQuotaPercent), MaxThrottle: d.MaxThrottle, FullRounds: d.fullRounds})
	if err == nil && d.Ownership != nil {
		err = d.Ownership.Start(l.rt)
	} else if err == nil {
		err = l.rt.LoadAll(ctx)
	}
	if err == nil && d.Store != nil {
		err = d.Store.Verified() // store.OpenForLoad's check, run beside the replay
	}
	if err != nil {
		l.cancel()
		l.stopAll(context.Background())
		return nil, err
	}
	l.log.Info("coordinator state replayed", "records", l.stats.replayed.Load(), "partitions", parts)
	if d.DataPlane != nil {
		l.wg.Add(2)
		go l.refreshTopicsLoop()
		go l.endOffsetsLoop(l.fetched)
	}
	return l, nil
}

// openLog picks the partition count and the record log: the store's
// committer on a partitioned store, or a log in memory without a store.
func (l *Loop) openLog() (int, error) {
	parts := 1
	if l.d.NewCore != nil {
		parts = l.d.Partitions
		if parts <= 0 && l.d.Store != nil {
			parts = l.d.Store.Partitions()
		}
		if parts <= 0 {
			parts = runtime.DefaultPartitions
		}
	}
	if l.d.OpenLog != nil {
		rl, closer, err := l.d.OpenLog(parts)
		if err != nil {
			return 0, err
		}
		l.rlog, l.closer = &statsLog{Log: rl, stats: &l.stats}, closer
		return parts, nil
	}
	if l.d.Store == nil {
		l.rlog = &statsLog{Log: runtime.NewMemLog(), stats: &l.stats}
		return parts, nil
	}
	if err := l.d.Store.Partition(parts, RecordGroup); err != nil {
		return 0, err
	}
	sl, err := store.NewLog(l.d.Store)
	if err != nil {
		return 0, err
	}
	l.rlog, l.closer = &statsLog{Log: sl, stats: &l.stats}, sl.Close
	return parts, nil
}

// RecordGroup names the group of a stored record (the store's
// partitioner): the group of a group-config record, or the group in a
// core record's key.
func RecordGroup(key []byte) (string, error) {
	if g, ok := store.GroupConfigGroup(key); ok {
		return g, nil
	}
	rec, err := records.DecodeRecord(key, nil)
	if err != nil {
		return "", err
	}
	return rec.Key.Group(), nil
}

func (l *Loop) nowMs() int64 { return l.now().UnixMilli() }

// errStopping answers requests once Shutdown began.
var errStopping = errors.New("group coordinator is shutting down")

// submit hands ev to partition p; a partition not held (or loading)
// answers with the error Kafka's clients retry on.
func (l *Loop) submit(p int, ev event) error {
	select {
	case <-l.stop:
		return errStopping
	default:
	}
	if err := l.serving(p); err != nil {
		return err
	}
	rev := runtime.Event{Read: ev.read != nil, Key: ev.group, Charge: ev.charge}
	if c := ev.call; c == nil {
		rev.Input = ev
	} else {
		// The event travels in its call, rejected through it (Reject).
		c.ev = ev
		rev.Input = &c.ev
		rev.Shared = manyGroups(c.req)
		// Holding back a request on a connection other groups share
		// would hold their requests too (wire's groupsSeen).
		rev.Spared = c.req.SharedConn
		// A client request is stepped on its connection's goroutine when
		// its partition is idle: no hand-off to a worker and back.
		rev.Inline = true
	}
	return l.rt.Submit(p, rev)
}

// do submits a request event to the partition of the request's group
// (requestGroup) and waits for its response.
func (l *Loop) do(ctx context.Context, req *wire.Request, ev event) (kmsg.Response, error) {
	return l.doSpent(ctx, req, ev, 0)
}

// doSpent is do for a request its handler already spent time on, on the
// request's goroutine (a streams heartbeat's preparation): that time is
// charged with the request's decoding, in one quota record.
func (l *Loop) doSpent(ctx context.Context, req *wire.Request, ev event, spent time.Duration) (kmsg.Response, error) {
	resp, wait, err := l.beginSpent(req, ev, spent)
	if wait == nil {
		return resp, err
	}
	return wait(ctx)
}

// beginSpent is doSpent without the wait: the answer when it is ready at
// once, else wait, which waits for it.
func (l *Loop) beginSpent(req *wire.Request, ev event, spent time.Duration) (kmsg.Response, wire.Wait, error) {
	if ev.call == nil {
		ev.call = &call{req: req}
	}
	group, configs := requestGroup(req)
	ev.configs, ev.group = ev.configs || configs, group
	p := l.rt.PartitionFor(group)
	// Decoding the request, reading it and writing the group's answer
	// before it (wire.Request.Wire), and what its handler did before
	// queueing it (spent), was the group's work too, as Kafka's request quota counts
	// a request's network-thread time: it counts towards the group's
	// quota (loop_quota.go), when its partition takes it (runtime.Event.Charge).
	ev.charge = req.Decode + req.Wire + spent
	if err := l.submit(p, ev); err != nil {
		return submitError(req, err), nil, nil
	}
	r, ok, wake := ev.call.result()
	if ok {
		resp, err := l.answered(p, group, req, r)
		return resp, nil, err
	}
	return nil, func(ctx context.Context) (kmsg.Response, error) {
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-l.done:
			return notCoordinator(req), nil
		}
		return l.answered(p, group, req, ev.call.r) // set before wake was closed
	}, nil
}

// answered is the answer to req, stepped in partition p, given its reply r.
func (l *Loop) answered(p int, group string, req *wire.Request, r reply) (kmsg.Response, error) {
	if l.serving(p) != nil { // the lease ended while the request ran
		return notCoordinator(req), nil
	}
	l.throttle(p, group, r.msg) // loop_quota.go
	return r.msg, r.err
}

// submitError is the answer to a request its partition did not take.
func submitError(req *wire.Request, err error) kmsg.Response {
	if errors.Is(err, runtime.ErrLoadInProgress) {
		return wire.ErrorResponse(req.Body, kerr.CoordinatorLoadInProgress.Code)
	}
	return notCoordinator(req)
}

func notCoordinator(req *wire.Request) kmsg.Response {
	return wire.ErrorResponse(req.Body, kerr.NotCoordinator.Code)
}

// readOn runs fn on committed state of partition p and waits for it.
func (l *Loop) readOn(ctx context.Context, p int, fn func(c *core.Coordinator, now int64) core.Output) error {
	done := make(chan struct{})
	ev := event{read: func(c *core.Coordinator, now int64) core.Output {
		defer close(done)
		return fn(c, now)
	}}
	if err := l.submit(p, ev); err != nil {
		return err
	}
	select {
	case <-done:
		// Checked again after the read, so nothing it decided (an answer,
		// a forward) leaves once the lease has ended.
		return l.serving(p)
	case <-ctx.Done():
		return ctx.Err()
	case <-l.done:
		return fmt.Errorf("group coordinator stopped")
	}
}

// serving is the ownership gate of partition p: nil when this node may
// answer for it (always without Ownership).
func (l *Loop) serving(p int) error {
	if l.d.Ownership == nil {
		return nil
	}
	return l.d.Ownership.Serving(p)
}

// elsewhere reports whether another node of the cluster answers for
// partition p: reads and inputs for every partition skip it.
func (l *Loop) elsewhere(p int) bool { return l.d.Ownership != nil && l.serving(p) != nil }

// readGroup runs fn on committed state of group's partition.
func (l *Loop) readGroup(ctx context.Context, group string, fn func(c *core.Coordinator, now int64) core.Output) error {
	return l.readOn(ctx, l.rt.PartitionFor(group), fn)
}

// read runs fn on committed state of every partition, one partition after
// the other (never two at once), so fn may gather into shared variables.
func (l *Loop) read(ctx context.Context, fn func(c *core.Coordinator, now int64) core.Output) error {
	for p := 0; p < l.rt.Partitions(); p++ {
		if l.elsewhere(p) {
			continue
		}
		if err := l.readOn(ctx, p, fn); err != nil {
			return err
		}
	}
	return nil
}

// input queues an internal input for every partition (topic updates).
func (l *Loop) input(fn func(c *core.Coordinator, now int64) core.Output) {
	for p := 0; p < l.rt.Partitions(); p++ {
		if !l.elsewhere(p) {
			l.inputOn(p, fn)
		}
	}
}

// inputGroup queues an internal input (assignor result, probe decision,
// end offsets) for group's partition.
func (l *Loop) inputGroup(group string, fn func(c *core.Coordinator, now int64) core.Output) {
	l.inputKeyed(l.rt.PartitionFor(group), group, fn)
}

func (l *Loop) inputOn(p int, fn func(c *core.Coordinator, now int64) core.Output) {
	l.inputKeyed(p, "", fn)
}

func (l *Loop) inputKeyed(p int, group string, fn func(c *core.Coordinator, now int64) core.Output) {
	err := l.submit(p, event{group: group, mutate: func(c *core.Coordinator, now int64, _ core.RequestID) core.Output { return fn(c, now) }})
	if err != nil && !errors.Is(err, errStopping) {
		l.log.Warn("internal input dropped: partition not held", "partition", p, "err", err)
	}
}

// Shutdown stops the loop: every partition ends with a last flush and
// answers what is still queued NOT_COORDINATOR; background work stops and
// the assignors are closed. It is safe to call more than once; when ctx
// ends first it returns ctx's error, and the assignors are still closed.
func (l *Loop) Shutdown(ctx context.Context) error {
	l.stopOnce.Do(func() { close(l.stop) })
	l.cancel()
	var err error
	if l.d.Ownership != nil { // unload, then leave the group: the others take over
		err = l.d.Ownership.Stop(ctx)
	}
	if serr := l.stopAll(ctx); err == nil {
		err = serr
	}
	ch := make(chan struct{})
	go func() { l.wg.Wait(); close(ch) }()
	if err == nil {
		select {
		case <-ch:
		case <-ctx.Done():
			err = ctx.Err()
		}
	}
	if l.d.Assignors != nil {
		l.closeOnce.Do(func() { l.d.Assignors.Close(context.Background()) })
	}
	return err
}

// stopAll unloads the partitions and stops the store's committer.
func (l *Loop) stopAll(ctx context.Context) error {
	var err error
	if l.rt != nil {
		err = l.rt.Close(ctx)
	}
	// Requests still waiting give up now (NOT_COORDINATOR), even when ctx
	// ended before every partition stopped; an append still running then
	// fails and rolls back.
	l.doneOnce.Do(func() {
		close(l.done)
		l.groupEvents.close() // the partitions stopped: their lines are written
		if l.closer != nil {
			if cerr := l.closer(); err == nil {
				err = cerr
			}
		}
	})
	return err
}
