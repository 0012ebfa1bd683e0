package dst

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/runtime"
	"github.com/coordhost/coordhost/host/store"
)

// Options configure one simulated run.
type Options struct {
	// Seed determines everything the run does.
	Seed uint64
	// Steps is the number of simulation steps (default 150).
	Steps int
	// WrapLog, when set, wraps the record log the runtime appends to and
	// replays from: tests inject a storage bug here to prove the run
	// catches it, leaving the real code path unchanged.
	WrapLog func(runtime.Log) runtime.Log
	// StoreDir, when set, puts the record log in host/store's bbolt store
	// in this directory (closed and opened again at every crash) instead of
	// runtime.MemLog.
	StoreDir string
	// Trace records the run step by step in Result.Trace (a failing seed
	// is rerun with it; the bulk runs go faster without).
	Trace bool
	// Inline submits the requests as the host submits client requests
	// (runtime.Event.Inline): stepped on the sim's goroutine when their
	// partition is idle. The gate of a shared round is never inline: it
	// blocks its step until the round's events are queued.
	Inline bool
}

// Result is what one run found.
type Result struct {
	// Err is the first broken invariant (nil: none).
	Err error
	// Trace is the run's step-by-step account (with Options.Trace); two
	// runs of one seed give identical traces.
	Trace string
	// Stats counts what the run exercised.
	Stats Stats
}

// Stats counts what a run exercised, to show a run is not vacuous.
type Stats struct {
	Rounds, Crashes, FailedAppends, Fenced, Released, Lost, Grants int
	// Conversions counts online conversions of the mixed group (a
	// conversion stepped and then rolled back counts too).
	Conversions int
	// Pipelined counts rounds stepped while an earlier round of their
	// partition was in flight (pipeline episodes).
	Pipelined int
}

// partitions is the partition count of the simulated coordinator.
const partitions = 3

// The simulated groups: two streams groups, two classic groups, a KIP-848
// consumer group and the mixed group (mixed.go).
var (
	streamsGroups  = []string{"s1", "s2"}
	classicGroups  = []string{"k1", "k2"}
	consumerGroups = []string{"c1"}
)

// allGroups lists every simulated group.
func allGroups() []string {
	var out []string
	for _, gs := range [][]string{streamsGroups, classicGroups, consumerGroups, mixedGroups} {
		out = append(out, gs...)
	}
	return out
}

// call is one client request in flight.
type call struct {
	group string
	what  string
	run   func(c *core.Coordinator, now int64, id core.RequestID) core.Output
	// check is the invariant bookkeeping done when the coordinator releases
	// the response, whether or not the client receives it.
	check func(msg kmsg.Response)
	// done hands the response to the client; failed tells it the request
	// failed (NOT_COORDINATOR, a lost response, a closed connection).
	done   func(msg kmsg.Response)
	failed func()
}

// guardedCall is a call whose answer reaches its client only while mine
// holds (the client still waits for it in the same incarnation): done
// then gets the response, and failed learns of a failure.
func guardedCall(group, what string, run func(*core.Coordinator, int64, core.RequestID) core.Output,
	check func(kmsg.Response), mine func() bool, done func(kmsg.Response), failed func()) *call {
	return &call{
		group: group,
		what:  what,
		run:   run,
		check: check,
		done: func(msg kmsg.Response) {
			if mine() {
				done(msg)
			}
		},
		failed: func() {
			if mine() {
				failed()
			}
		},
	}
}

type sim struct {
	opt    Options
	rng    *rand.Rand
	now    int64
	cfg    core.Config
	topics []core.TopicMetadata

	base   runtime.Log // MemLog or the store's log
	store  *store.Store
	faults *runtime.FaultLog
	log    runtime.Log
	rt     *runtime.Runtime
	shards []*shard
	ends   chan roundEnd
	// crashAt arms a crash in a partition's next append; pendingExpect
	// holds the durable state such a crash left; expectNext the durable
	// state each partition's next load must replay to.
	crashAt       []crashMode
	pendingExpect map[int]string
	expectNext    map[int]string

	nextReq        core.RequestID
	inflight       map[core.RequestID]*call
	runs           []core.AssignorRun
	streams        []*streamsClient
	classics       []*classicClient
	consumers      []*consumerClient
	classicStreams []*classicStreamsClient

	// dropNext: the process dies after the next round's append, before
	// its responses are sent.
	dropNext bool
	// undelivered: responses of a batch that became durable in an append
	// the process died in; the coordinator acted on their requests.
	undelivered []core.Response

	// pipeFlags: pipeline episodes (pipeline.go).
	pipeFlags

	inv   invariants
	trace strings.Builder
	mu    sync.Mutex
	err   error
	stats Stats
}

// Run runs one seed and reports the first broken invariant.
func Run(o Options) (res Result) {
	if o.Steps <= 0 {
		o.Steps = 150
	}
	s := newSim(o)
	defer func() {
		if r := recover(); r != nil {
			s.fail(fmt.Errorf("panic in the simulation: %v\n%s", r, debug.Stack()))
		}
		if s.rt != nil {
			s.stopRuntime()
		}
		s.closeLog()
		res = Result{Err: s.failure(), Trace: s.trace.String(), Stats: s.stats}
	}()
	s.start()
	for i := 0; i < o.Steps && s.failure() == nil; i++ {
		s.tracef("-- step %d now=%d", i, s.now)
		s.step()
	}
	if s.failure() == nil {
		s.crash("final restart") // every run ends with a crash and replay check
	}
	return res
}

func newSim(o Options) *sim {
	rng := rand.New(rand.NewPCG(o.Seed, 0xd57))
	cfg := core.DefaultConfig()
	cfg.Streams.InitialRebalanceDelayMs = []int32{0, 3000}[rng.IntN(2)]
	cfg.Streams.AssignmentIntervalMs = []int32{0, 1000}[rng.IntN(2)]
	cfg.Streams.NumStandbyReplicas = int32(rng.IntN(2))
	cfg.AssignorWaitMs = []int64{0, 500}[rng.IntN(2)]
	cfg.Classic.InitialRebalanceDelayMs = []int32{0, 3000}[rng.IntN(2)]
	cfg.Consumer.Assignors = []core.NamedPartitionAssignor{{Name: "uniform", Assignor: roundRobin{}}}
	s := &sim{opt: o, rng: rng, now: 1_700_000_000_000, cfg: cfg, ends: make(chan roundEnd, 16),
		crashAt: make([]crashMode, partitions), pendingExpect: map[int]string{}, expectNext: map[int]string{},
		inflight: map[core.RequestID]*call{}, inv: newInvariants()}
	s.pipeFlags.init()
	s.topics = []core.TopicMetadata{{Name: "in", Partitions: 4}, {Name: "in2", Partitions: 2},
		{Name: "store-changelog", Partitions: 4}, {Name: "t", Partitions: 4}}
	for i := range s.topics {
		s.topics[i].ID = topicID(s.topics[i].Name)
	}
	for i := 0; i < 3+rng.IntN(4); i++ {
		s.streams = append(s.streams, &streamsClient{hbMember: hbMember[task, kmsg.StreamsGroupHeartbeatRequest]{
			name: fmt.Sprintf("st%d", i), group: streamsGroups[i%2], lateBy: []int{0, 0, 1, 3}[rng.IntN(4)]}})
	}
	for i := 0; i < 2+rng.IntN(4); i++ {
		s.classics = append(s.classics, &classicClient{classicMember: classicMember{name: fmt.Sprintf("cl%d", i), group: classicGroups[i%2]},
			session: []int32{10000, 30000}[rng.IntN(2)]})
	}
	for i := 0; i < 1+rng.IntN(3); i++ {
		s.consumers = append(s.consumers, &consumerClient{hbMember[part, kmsg.ConsumerGroupHeartbeatRequest]{
			name: fmt.Sprintf("co%d", i), group: consumerGroups[0], lateBy: []int{0, 0, 1, 3}[rng.IntN(4)]}})
	}
	// The mixed group: classic Streams instances and streams members.
	for i := 0; i < 1+rng.IntN(3); i++ {
		cl := &classicStreamsClient{classicMember: classicMember{name: fmt.Sprintf("cs%d", i), group: mixedGroups[0]}, owned: taskSet{},
			lateBy: []int{0, 0, 1, 3}[rng.IntN(4)]}
		cl.process[15] = byte(i + 1)
		s.classicStreams = append(s.classicStreams, cl)
	}
	for i := 0; i < 1+rng.IntN(2); i++ {
		s.streams = append(s.streams, &streamsClient{topology: mixedTopology, hbMember: hbMember[task, kmsg.StreamsGroupHeartbeatRequest]{
			name: fmt.Sprintf("sm%d", i), group: mixedGroups[0], lateBy: []int{0, 0, 1, 3}[rng.IntN(4)]}})
	}
	s.tracef("seed=%d streams=%d classic=%d consumer=%d classic-streams=%d config=%+v classic=%+v assignorWait=%d", o.Seed,
		len(s.streams), len(s.classics), len(s.consumers), len(s.classicStreams), cfg.Streams, cfg.Classic, cfg.AssignorWaitMs)
	return s
}

func (s *sim) tracef(format string, args ...any) {
	if !s.opt.Trace {
		return
	}
	fmt.Fprintf(&s.trace, format, args...)
	s.trace.WriteByte('\n')
}

// fail records the first broken invariant; it may be called from the
// runtime's worker while the sim waits for the round.
func (s *sim) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err = err
	}
}

func (s *sim) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// start opens the log, builds the runtime and loads every partition.
func (s *sim) start() {
	if err := s.openLog(); err != nil {
		s.fail(fmt.Errorf("opening the record log: %w", err))
		return
	}
	rt, err := runtime.New(runtime.Config{Partitions: partitions, Workers: 1, Log: s.log, NewShard: s.newShard,
		Now: func() time.Time { return time.UnixMilli(s.now) }})
	if err != nil {
		panic(err)
	}
	s.rt = rt
	s.shards = make([]*shard, partitions)
	for p := 0; p < partitions; p++ {
		s.load(p)
	}
}

func (s *sim) newShard(p int) (runtime.Shard, error) {
	c, err := core.New(s.cfg)
	if err != nil {
		return nil, err
	}
	sh := &shard{sim: s, p: p, c: c}
	if exp, ok := s.expectNext[p]; ok {
		sh.expect, sh.expected = exp, true
		delete(s.expectNext, p)
	}
	s.shards[p] = sh
	return sh, nil
}

// load replays partition p and runs its Loaded round.
func (s *sim) load(p int) {
	if err := s.rt.Load(context.Background(), p); err != nil {
		s.fail(fmt.Errorf("loading partition %d: %w", p, err))
		return
	}
	s.handle(p, <-s.ends, false)
}

func (s *sim) stopRuntime() {
	for _, sh := range s.shards {
		if sh != nil {
			sh.dead = true
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.rt.Close(ctx); err != nil {
		s.fail(fmt.Errorf("closing the runtime: %w", err))
	}
	s.rt = nil
}

// partitionOf returns the partition of group.
func partitionOf(group string) int { return runtime.PartitionFor(group, partitions) }

// submit runs evs as one runtime round of partition p (a gate event first
// when there are several, so that they share one append) and handles how
// the round ended.
func (s *sim) submit(p int, evs ...any) {
	s.stats.Rounds++
	sh := s.shards[p]
	if len(evs) > 1 {
		g := gate{entered: make(chan struct{}), release: make(chan struct{})}
		sh.left, sh.next = 1, len(evs)
		s.mustSubmit(p, g)
		<-g.entered
		for _, ev := range evs {
			s.mustSubmit(p, ev)
		}
		close(g.release)
		// The worker runs the events' round right after the gate's: handle
		// the gate's end only once both are over.
		first, last := <-s.ends, <-s.ends
		s.handle(p, first, false)
		if s.rt != nil && !first.dead {
			s.handle(p, last, true)
		}
		return
	}
	sh.left = 1
	s.mustSubmit(p, evs[0])
	s.handle(p, <-s.ends, true)
}

func (s *sim) mustSubmit(p int, ev any) {
	_, isGate := ev.(gate)
	if err := s.rt.Submit(p, runtime.Event{Input: ev, Inline: s.opt.Inline && !isGate}); err != nil {
		panic(fmt.Sprintf("submit to partition %d: %v", p, err))
	}
}

// send queues the calls of one partition as one round.
func (s *sim) send(p int, calls ...*call) {
	var evs []any
	for _, c := range calls {
		s.nextReq++
		id := s.nextReq
		s.inflight[id] = c
		s.tracef("p%d req#%d %s: %s", p, id, c.group, c.what)
		evs = append(evs, request{id: id, call: c.run})
	}
	s.submit(p, evs...)
}

// internal runs a coordinator input that answers no client (an assignor
// result, a topic change) on partition p.
func (s *sim) internal(p int, what string, fn func(c *core.Coordinator, now int64) core.Output) {
	s.tracef("p%d %s", p, what)
	s.submit(p, request{call: func(c *core.Coordinator, now int64, _ core.RequestID) core.Output { return fn(c, now) }})
}

// handle processes how a round of partition p ended; last says it is the
// round of the submitted events (not a gate's or a load's).
func (s *sim) handle(p int, e roundEnd, last bool) {
	if e.dead {
		s.tracef("p%d crashed during the append", p)
		s.noteUndelivered(s.undelivered)
		s.undelivered = nil
		s.crash("crash during an append")
		return
	}
	s.runs = append(s.runs, e.runs...)
	if !e.ok {
		s.stats.FailedAppends++
		s.tracef("p%d append failed: %v", p, e.err)
	}
	for _, id := range e.failed {
		if c := s.inflight[id]; c != nil {
			delete(s.inflight, id)
			s.tracef("  req#%d failed (NOT_COORDINATOR)", id)
			c.failed()
		}
	}
	if last && s.dropNext && len(e.responses) > 0 {
		// The process dies after the append, before any response leaves.
		s.dropNext = false
		s.noteUndelivered(e.responses)
		s.crash("crash after an append, before its responses were sent")
		return
	}
	for _, r := range e.responses {
		s.release(r)
	}
	if e.ok && e.wrote {
		s.inv.afterCommit(s, p)
	}
	if errors.Is(e.err, runtime.ErrFenced) {
		s.reload(p)
	}
}

// noteUndelivered does the invariant bookkeeping of responses to durable
// requests that never left the process: the coordinator acted on them.
func (s *sim) noteUndelivered(rs []core.Response) {
	for _, r := range rs {
		if c := s.inflight[r.Request]; c != nil && c.check != nil {
			c.check(r.Msg)
		}
	}
}

// release delivers one response the coordinator released.
func (s *sim) release(r core.Response) {
	c := s.inflight[r.Request]
	if c == nil {
		return // a request whose client no longer waits (a stale resend)
	}
	delete(s.inflight, r.Request)
	s.stats.Released++
	s.tracef("  req#%d -> %s", r.Request, fmtResponse(r.Msg))
	if c.check != nil {
		c.check(r.Msg)
	}
	if s.rng.IntN(20) == 0 {
		s.stats.Lost++
		s.tracef("  (response lost)")
		c.failed()
		return
	}
	c.done(r.Msg)
}
