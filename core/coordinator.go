package core

import (
	"fmt"
	"sort"
	"strings"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Coordinator is the whole deterministic group coordinator: every group of
// every kind, the timers, the topic metadata image and the configuration.
// It is not safe for concurrent use: one goroutine of the host owns it.
type Coordinator struct {
	cfg    Config
	groups map[string]Group
	timers map[TimerKey]timerState
	// timerHeap orders timers by deadline (lazily; see timers.go).
	timerHeap timerHeap
	topics    topicImage
	// dec decodes ReplayBytes' records, sharing repeated group and member ids.
	dec records.Decoder

	// overrides holds per-group config overrides (streams groups).
	overrides map[string]StreamsGroupOverrides
	// classicOverrides holds per-group classic settings (config.go).
	classicOverrides map[string]ClassicGroupOverrides
	// consumerOverrides holds per-group consumer settings (consumer_config.go).
	consumerOverrides map[string]ConsumerGroupOverrides
	// migration is online-migration bookkeeping (migration_policy.go).
	migration migrationState
	// tasks shares the small task sets streams groups store (streams_tasks.go).
	tasks taskInterner

	// Batch state: the undo log since the last Commit, requests parked in
	// the batches not committed, where each sealed batch ends in both
	// (undo.go), the batches sealed and committed so far, the Output being
	// built by the running entry point.
	undo               []undoEntry
	batchParked        []RequestID
	marks, parkedMarks []int
	sealed, committed  uint64
	out                *Output
	outBuf             Output // what out points at between begin and end
	// scratch: the output arrays lent to scratch Ticks (Tick.Scratch).
	scratch   Output
	now       int64
	replaying bool
	// deferInputs: assignor runs leave their Input to BuildInput
	// (DeferAssignorInputs).
	deferInputs bool
	// loading: Loaded is arming the loaded groups' timers. indexTimer
	// appends to timerHeap without ordering it (Loaded orders it once at
	// its end), and setTimer keeps no undo of its own (Loaded's one undo
	// puts the whole timer map back; timers.go).
	loading bool
	// entries counts the entry points begun (consumer_member_table.go).
	entries uint64
	// streamsCfg is the last group settings streamsConfig resolved, and
	// in which entry point: a steady heartbeat asks four times.
	streamsCfg streamsConfigMemo
	// targetSlice overrides how many members' targets one step writes
	// (streams_target_slices.go; 0: the default).
	targetSlice int
}

// New returns an empty Coordinator with the given broker-wide config.
func New(cfg Config) (*Coordinator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Coordinator{
		cfg:       cfg,
		groups:    map[string]Group{},
		timers:    map[TimerKey]timerState{},
		overrides: map[string]StreamsGroupOverrides{},
		topics:    topicImage{byName: map[string]TopicMetadata{}},
	}, nil
}

// begin starts an entry point at time now.
func (c *Coordinator) begin(now int64) {
	if c.out != nil {
		panic("core: entry point re-entered")
	}
	c.now = now
	c.outBuf = Output{}
	c.out = &c.outBuf // no allocation per entry point
	c.entries++
}

// end finishes an entry point and returns what it produced.
func (c *Coordinator) end() Output {
	o := *c.out
	c.out = nil
	return o
}

// write applies rec through the replay path and queues it for the log.
// A record the live path builds must always apply; failure is a bug.
func (c *Coordinator) write(rec records.Record) {
	if err := c.apply(rec); err != nil {
		panic(fmt.Sprintf("core: live record %s for group %q failed to apply: %v",
			records.RecordTypeName(rec.Key.RecordType()), rec.Key.Group(), err))
	}
	c.out.Records = append(c.out.Records, rec)
}

// apply dispatches rec by record type.
func (c *Coordinator) apply(rec records.Record) error {
	apply, ok := applierOf(rec.Key.RecordType())
	if !ok {
		return fmt.Errorf("record type %d: %w", rec.Key.RecordType(), records.ErrUnknownRecordType)
	}
	if rec.Value != nil && rec.Value.RecordType() != rec.Key.RecordType() {
		return fmt.Errorf("record key type %d with value type %d", rec.Key.RecordType(), rec.Value.RecordType())
	}
	return apply(c, rec)
}

// Replay applies one durable record while loading the log. Records must come
// in log order; state after replaying a log equals the live state that wrote
// it. Call Loaded after the last record. Replay changes nothing on error.
func (c *Coordinator) Replay(rec records.Record) error {
	c.replaying = true
	defer func() { c.replaying = false }()
	return c.apply(rec)
}

// ReplayBytes decodes a record from its key and value bytes and replays it.
func (c *Coordinator) ReplayBytes(key, value []byte) error {
	rec, err := c.dec.Decode(key, value)
	if err != nil {
		return err
	}
	return c.Replay(rec)
}

// DeferAssignorInputs makes c hand out each assignor run with its Input
// still to be built: the host calls the run's BuildInput on another
// goroutine before it reads the input, so a large group's input is not
// built on the group's partition. Call it before the first Step.
func (c *Coordinator) DeferAssignorInputs() { c.deferInputs = true }

// Loaded finishes loading at time now: it schedules the timers of every
// loaded group (session timeouts, pending rebalance timeouts) and requests
// assignor runs for groups whose group epoch is ahead of their assignment
// epoch.
func (c *Coordinator) Loaded(now int64) Output {
	c.begin(now)
	c.reserveTimers(c.memberCount())
	c.loading = true
	for _, id := range c.groupIDs() {
		switch g := c.groups[id].(type) {
		case *streamsGroup:
			c.streamsOnLoaded(g)
		case *classicGroup:
			c.classicOnLoaded(g)
		case *consumerGroup:
			c.consumerOnLoaded(g)
		}
	}
	c.loading = false
	c.timerHeap.init()
	return c.end()
}

// memberCount is the number of members of every group (a member has a
// session timer once loaded).
func (c *Coordinator) memberCount() int {
	n := 0
	for _, g := range c.groups {
		switch g := g.(type) {
		case *streamsGroup:
			n += len(g.members)
		case *classicGroup:
			n += len(g.members)
		case *consumerGroup:
			n += len(g.members)
		}
	}
	return n
}

// groupIDs returns the ids of all groups in sorted order.
func (c *Coordinator) groupIDs() []string {
	ids := make([]string, 0, len(c.groups))
	for id := range c.groups {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// putGroup installs g (nil removes the id), undoably.
func (c *Coordinator) putGroup(id string, g Group) {
	old, had := c.groups[id]
	if g == nil {
		delete(c.groups, id)
	} else {
		c.groups[id] = g
	}
	if c.replaying {
		return
	}
	c.onUndo(func() {
		if had {
			c.groups[id] = old
		} else {
			delete(c.groups, id)
		}
	})
}

// groupCapReached reports whether creating group id would exceed
// Config.MaxGroups. Kafka has no such cap; COORDINATOR_NOT_AVAILABLE is
// retriable, so a client waits and retries while groups expire or are
// deleted rather than failing.
func (c *Coordinator) groupCapReached(id string) *kafkaError {
	if _, ok := c.groups[id]; ok || c.cfg.MaxGroups == 0 || len(c.groups) < c.cfg.MaxGroups {
		return nil
	}
	return errf(kerr.CoordinatorNotAvailable, "The coordinator holds %d groups, its maximum; retry later.", len(c.groups))
}

// Group returns the group with the given id, if any.
func (c *Coordinator) Group(id string) (Group, bool) {
	g, ok := c.groups[id]
	return g, ok
}

// durableStater is implemented by kinds whose state is not all durable
// (classic groups keep rebalances in memory): the state their records
// define, which Dump shows instead of StateName.
type durableStater interface {
	durableStateName() string
}

// Dump writes every group's durable state canonically (sorted, one group
// after another). Two Coordinators with equal dumps hold equal durable state;
// the replay property test compares live state with replayed state this way.
func (c *Coordinator) Dump() string {
	var b strings.Builder
	for _, id := range c.groupIDs() {
		g := c.groups[id]
		state := g.StateName()
		if d, ok := g.(durableStater); ok {
			state = d.durableStateName()
		}
		fmt.Fprintf(&b, "group %q kind=%s state=%s\n", id, g.Kind(), state)
		g.dumpDurable(&b)
	}
	return b.String()
}
