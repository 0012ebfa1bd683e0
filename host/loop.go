package host

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
	"github.com/coordhost/coordhost/host/admin"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/gateway"
	"github.com/coordhost/coordhost/host/store"
	"github.com/coordhost/coordhost/host/wire"
)

// The event loop. One goroutine (run) owns the core.Coordinator; every
// other goroutine talks to it through the events channel. A round drains
// the events that are queued (up to maxBatch), hands each to core, appends
// every record core returned to the store as one fsynced batch (group
// commit), then calls Commit and releases the round's responses — or, if
// the append failed, calls Rollback and answers them NOT_COORDINATOR.
// Reads of committed state (describe, list, offset decisions) flush the
// round first, so they see exactly what is durable.

// maxBatch bounds the events handled in one round.
const maxBatch = 512

// event is one unit of work for the loop goroutine. mutate runs core entry
// points that return an Output; read runs reads of committed state.
type event struct {
	mutate func(c *core.Coordinator, now int64, id core.RequestID) core.Output
	read   func(c *core.Coordinator, now int64) core.Output
	// call is the waiting request (nil for internal inputs).
	call *call
}

// call is one client request waiting for its response.
type call struct {
	req  *wire.Request
	done chan reply // buffered(1)
}

type reply struct {
	msg kmsg.Response
	err error
}

// LoopDeps are what the event loop uses around core.
type LoopDeps struct {
	Core      *core.Coordinator
	Store     *store.Store
	DataPlane *gateway.DataPlane
	Assignors *Assignors
	Metrics   *admin.Metrics
	Log       *slog.Logger
	// GroupConfig returns a group's streams overrides (nil: none), asked
	// the first time the loop sees the group id; used only without Groups
	// (tests that set streams overrides directly).
	GroupConfig func(group string) *core.StreamsGroupOverrides
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
	// Now is the clock (default time.Now); tests may inject one.
	Now func() time.Time
	// HistoryTargets is how many targets the rebalance history keeps per
	// group (admin.history.targets; 0: DefaultHistoryTargets).
	HistoryTargets int
}

// Loop is the host's event loop: the GroupCoordinator of a running server.
type Loop struct {
	d      LoopDeps
	log    *slog.Logger
	events chan event
	stop   chan struct{}
	done   chan struct{}
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // background goroutines (assignor runs, refreshes)

	// owned by the loop goroutine
	nextID     core.RequestID
	pending    map[core.RequestID]*call
	configured map[string]bool
	batch      batch
	timer      *time.Timer
	topicSig   string
	history    *history
	ab         *abRuntime                   // rebalance history, shadow runs (ab.go)
	dyn        map[string]map[string]string // runtime group configs (loop_groupconfig.go)

	stats      loopStats
	probes     probeStats
	ends       endOffsetStats
	workers    chan struct{} // assignor worker slots
	refreshNow chan struct{}
	sigMu      sync.Mutex
}

// batch is what a round accumulated since the last Commit.
type batch struct {
	records   []core.Record
	events    []core.Event
	responses []core.Response
	runs      []core.AssignorRun
	checks    []core.ProbeCheck
	create    []core.TopicToCreate
	failed    []core.RequestID
	answered  []core.RequestID // requests handed to core in this round
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

func (b *batch) empty() bool {
	return len(b.records) == 0 && len(b.events) == 0 && len(b.hostRecords) == 0 && len(b.responses) == 0 && len(b.runs) == 0 &&
		len(b.checks) == 0 && len(b.create) == 0 && len(b.failed) == 0
}

// NewLoop replays the store into d.Core, calls Loaded and starts the loop
// goroutine. A record the core cannot decode fails start.
func NewLoop(d LoopDeps) (*Loop, error) {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.TopicRefresh <= 0 {
		d.TopicRefresh = time.Second
	}
	if d.EndOffsetsTick <= 0 {
		d.EndOffsetsTick = time.Second
	}
	l := &Loop{d: d, log: d.Log, events: make(chan event, 4096), stop: make(chan struct{}), done: make(chan struct{}),
		pending: make(map[core.RequestID]*call), configured: make(map[string]bool), history: newHistory(), dyn: map[string]map[string]string{},
		workers: make(chan struct{}, assignorWorkers), refreshNow: make(chan struct{}, 1)}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	l.ab = newAB(l)
	n := 0
	if d.Store != nil {
		err := d.Store.Replay(func(e store.Entry) error {
			n++
			if host, err := l.replayGroupConfig(e); host {
				return err
			}
			if err := d.Core.ReplayBytes(e.Key, e.Value); err != nil {
				return fmt.Errorf("replaying record %d (seq %d) into the coordinator: %w", n, e.Seq, err)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	l.log.Info("coordinator state replayed", "records", n)
	if d.Metrics != nil {
		l.registerMetrics(d.Metrics)
		l.registerProbeMetrics(d.Metrics)
	}
	if d.DataPlane != nil {
		l.refreshTopicsNow()
	}
	l.configureReplayed()
	l.batch.add(d.Core.Loaded(l.nowMs()))
	var fetched map[string]time.Time
	if d.DataPlane != nil {
		fetched = l.fetchEndOffsetsOnLoad()
	}
	l.timer = time.NewTimer(time.Hour)
	go l.run()
	if d.DataPlane != nil {
		l.wg.Add(2)
		go l.refreshTopicsLoop()
		go l.endOffsetsLoop(fetched)
	}
	return l, nil
}

// configureReplayed applies the per-group settings to every group the
// store held, before Loaded schedules their timers and assignor runs.
func (l *Loop) configureReplayed() {
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 5
	for _, g := range l.d.Core.ListGroups(req).Groups {
		l.configure(l.d.Core, g.Group)
	}
}

func (l *Loop) nowMs() int64 { return l.d.Now().UnixMilli() }

// submit hands ev to the loop; it fails when the loop has stopped.
func (l *Loop) submit(ctx context.Context, ev event) error {
	select {
	case l.events <- ev:
		return nil
	case <-l.stop:
		return errors.New("group coordinator is shutting down")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// do submits a request event and waits for its response.
func (l *Loop) do(ctx context.Context, req *wire.Request, ev event) (kmsg.Response, error) {
	ev.call = &call{req: req, done: make(chan reply, 1)}
	if err := l.submit(ctx, ev); err != nil {
		return notCoordinator(req), nil
	}
	select {
	case r := <-ev.call.done:
		return r.msg, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-l.done:
		return notCoordinator(req), nil
	}
}

func notCoordinator(req *wire.Request) kmsg.Response {
	return wire.ErrorResponse(req.Body, kerr.NotCoordinator.Code)
}

// run is the loop goroutine.
func (l *Loop) run() {
	defer close(l.done)
	l.flush()
	for {
		select {
		case <-l.stop:
			l.drainOnStop()
			return
		case ev := <-l.events:
			l.handle(ev)
			for i := 1; i < maxBatch; i++ {
				select {
				case ev := <-l.events:
					l.handle(ev)
					continue
				default:
				}
				break
			}
		case <-l.timer.C:
			l.batch.add(l.d.Core.Tick(l.nowMs()))
		}
		l.flush()
	}
}

// drainOnStop answers queued requests NOT_COORDINATOR after the last flush.
func (l *Loop) drainOnStop() {
	l.flush()
	for {
		select {
		case ev := <-l.events:
			if ev.call != nil {
				ev.call.done <- reply{msg: notCoordinator(ev.call.req)}
			}
		default:
			for id, c := range l.pending {
				c.done <- reply{msg: notCoordinator(c.req)}
				delete(l.pending, id)
			}
			return
		}
	}
}

func (l *Loop) handle(ev event) {
	now := l.nowMs()
	if ev.read != nil {
		l.flush() // reads see committed state only
		out := ev.read(l.d.Core, now)
		l.batch.add(out)
		return
	}
	l.nextID++
	id := l.nextID
	if ev.call != nil {
		l.pending[id] = ev.call
		l.batch.answered = append(l.batch.answered, id)
	}
	l.batch.add(ev.mutate(l.d.Core, now, id))
}

// flush ends a round: append, Commit or Rollback, release, dispatch.
func (l *Loop) flush() {
	if l.batch.empty() {
		l.resetTimer()
		return
	}
	b := l.batch
	l.batch = batch{}
	if len(b.records) > 0 || len(b.hostRecords) > 0 {
		recs := make([]store.Record, len(b.records), len(b.records)+len(b.hostRecords))
		for i, r := range b.records {
			recs[i].Key, recs[i].Value = core.EncodeRecord(r)
		}
		recs = append(recs, b.hostRecords...)
		start := time.Now()
		_, err := l.d.Store.Append(recs)
		l.stats.appendNanos.Add(time.Since(start).Nanoseconds())
		l.stats.appends.Add(1)
		l.stats.records.Add(int64(len(recs)))
		if err != nil {
			l.stats.appendFailures.Add(1)
			l.log.Error("store append failed: the batch is rolled back and its requests answered NOT_COORDINATOR",
				"records", len(recs), "err", err)
			ro := l.d.Core.Rollback()
			for i := len(b.undo) - 1; i >= 0; i-- {
				b.undo[i]()
			}
			for _, r := range b.responses {
				l.fail(r.Request)
			}
			for _, id := range append(b.failed, ro.Failed...) {
				l.fail(id)
			}
			l.batch.add(core.Output{AssignorRuns: ro.AssignorRuns, TopicsToCreate: ro.TopicsToCreate, Responses: ro.Responses})
			l.resetTimer()
			return
		}
	}
	l.d.Core.Commit()
	l.noteCommitted(&b)
	for _, r := range b.responses {
		l.release(r)
	}
	for _, id := range b.failed {
		l.fail(id)
	}
	for _, run := range b.runs {
		l.dispatchRun(run)
	}
	for _, chk := range b.checks {
		l.dispatchProbeCheck(chk)
	}
	if len(b.create) > 0 {
		l.createTopics(b.create)
	}
	l.resetTimer()
}

func (l *Loop) release(r core.Response) {
	c, ok := l.pending[r.Request]
	if !ok {
		return
	}
	delete(l.pending, r.Request)
	if r.Msg != nil {
		r.Msg.SetVersion(c.req.Version)
	}
	c.done <- reply{msg: r.Msg}
}

func (l *Loop) fail(id core.RequestID) {
	c, ok := l.pending[id]
	if !ok {
		return
	}
	delete(l.pending, id)
	c.done <- reply{msg: notCoordinator(c.req)}
}

func (l *Loop) resetTimer() {
	if !l.timer.Stop() {
		select {
		case <-l.timer.C:
		default:
		}
	}
	d := time.Hour
	if at, ok := l.d.Core.NextDeadline(); ok {
		d = time.Duration(at-l.nowMs()) * time.Millisecond
		if d < 0 {
			d = 0
		}
	}
	l.timer.Reset(d)
}

// input queues an internal input (assignor result, topic update).
func (l *Loop) input(fn func(c *core.Coordinator, now int64) core.Output) {
	select {
	case l.events <- event{mutate: func(c *core.Coordinator, now int64, _ core.RequestID) core.Output { return fn(c, now) }}:
	case <-l.stop:
	}
}

// Shutdown stops the loop after a last flush and waits for background work.
func (l *Loop) Shutdown(ctx context.Context) error {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.cancel()
	select {
	case <-l.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	ch := make(chan struct{})
	go func() { l.wg.Wait(); close(ch) }()
	select {
	case <-ch:
	case <-ctx.Done():
		return ctx.Err()
	}
	if l.d.Assignors != nil {
		l.d.Assignors.Close(context.Background())
	}
	return nil
}
