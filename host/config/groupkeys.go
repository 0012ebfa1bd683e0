package config

import (
	"math"

	"github.com/coordhost/coordhost/core"
)

// The per-group key table: one row per setting holds its name, default,
// type and bounds (the parser is key.parse), Kafka's broker-level bounds on
// runtime values, the layers that accept it, its documentation, and where
// its value lives (field). Everything else reads this table: the config
// file's groups.defaults and groups.overrides, the runtime group configs of
// Kafka's config APIs (dynamic.go), core's broker-wide and per-group
// settings (Core, CoreGroup) and the table in docs/CONFIG.md
// (TestDocTableMatchesKeyTable). A key core reads takes its default from
// core.DefaultConfig, so Kafka's defaults are written once, in core.

// groupKeys are the per-group keys. Names follow Kafka 4.4's group configs
// (GroupConfig) where Kafka has a per-group config, and Kafka's broker
// config name where Kafka only has a broker-wide one; defaults are Kafka
// 4.4's. They are set for all groups under groups.defaults and per group-id
// glob under groups.overrides, and at run time unless fileOnly.
var groupKeys = withCoreDefaults([]key{
	{name: "streams.session.timeout.ms", kind: kInt, min: 1, max: math.MaxInt32, kafka: true,
		runtime: &bound{45000, 60000, "group.streams.min/max.session.timeout.ms"},
		field:   i32(func(g *Group) *int32 { return &g.StreamsSessionTimeoutMs }, func(c *core.Config) *int32 { return &c.Streams.SessionTimeoutMs }),
		doc:     "Streams group: member session timeout."},
	{name: "streams.heartbeat.interval.ms", kind: kInt, min: 1, max: math.MaxInt32, kafka: true,
		runtime: &bound{5000, 15000, "group.streams.min/max.heartbeat.interval.ms"},
		field:   i32(func(g *Group) *int32 { return &g.StreamsHeartbeatIntervalMs }, func(c *core.Config) *int32 { return &c.Streams.HeartbeatIntervalMs }),
		doc:     "Streams group: heartbeat interval sent to members."},
	{name: "streams.unreleased.heartbeat.interval.ms", kind: kInt, min: 0, max: math.MaxInt32,
		field: i32(func(g *Group) *int32 { return &g.StreamsUnreleasedHeartbeatIntervalMs }, func(c *core.Config) *int32 { return &c.Streams.UnreleasedHeartbeatIntervalMs }),
		doc:   "Streams group: heartbeat interval sent to a member waiting for tasks other members still hold (UNRELEASED_TASKS), when shorter than streams.heartbeat.interval.ms; 0 (Kafka's behaviour) or at least 20."},
	{name: "streams.rebalance.heartbeat.interval.ms", kind: kInt, min: 0, max: math.MaxInt32,
		field: i32(func(g *Group) *int32 { return &g.StreamsRebalanceHeartbeatIntervalMs }, func(c *core.Config) *int32 { return &c.Streams.RebalanceHeartbeatIntervalMs }),
		doc:   "Streams group: heartbeat interval sent to every streams member while the group is in a roll (a member left or was fenced within the last session timeout, or a member is not reconciled with its target), when shorter than streams.heartbeat.interval.ms; never below 1 ms per member of the group; 0 (Kafka's behaviour) or at least 20."},
	{name: "streams.num.standby.replicas", kind: kInt, min: 0, max: 1000, kafka: true,
		runtime: &bound{math.MinInt64, 2, "group.streams.max.standby.replicas"},
		field:   i32(func(g *Group) *int32 { return &g.StreamsNumStandbyReplicas }, func(c *core.Config) *int32 { return &c.Streams.NumStandbyReplicas }),
		doc:     "Streams group: standby replicas per stateful task."},
	{name: "streams.num.warmup.replicas", kind: kInt, min: 0, max: 1000, kafka: true,
		runtime: &bound{math.MinInt64, 20, "group.streams.max.warmup.replicas"},
		field:   i32(func(g *Group) *int32 { return &g.StreamsNumWarmupReplicas }, func(c *core.Config) *int32 { return &c.Streams.NumWarmupReplicas }),
		doc:     "Streams group: warm-up replicas the assignor may add (KIP-441 max.warmup.replicas)."},
	{name: "streams.acceptable.recovery.lag", kind: kInt, min: 0, max: math.MaxInt64, kafka: true,
		field: i64(func(g *Group) *int64 { return &g.StreamsAcceptableRecoveryLag }, func(c *core.Config) *int64 { return &c.Streams.AcceptableRecoveryLag }),
		doc:   "Streams group: a client within this lag of a task's end offset counts as caught up."},
	{name: "streams.probing.rebalance.interval.ms", kind: kInt, min: 0, max: math.MaxInt64,
		field: i64(func(g *Group) *int64 { return &g.StreamsProbingIntervalMs }, func(c *core.Config) *int64 { return &c.Streams.ProbingIntervalMs }),
		doc:   "Streams group: probing interval while the target holds warm-ups (Kafka Streams' probing.rebalance.interval.ms); 0 disables interval probes."},
	// The host resolves the policy against the loaded assignors before core
	// sees it (Loop.applyGroupConfig), so core does not read the raw value.
	{name: "streams.probing.policy", def: "", kind: kString,
		field: str(func(g *Group) *string { return &g.StreamsProbingPolicy }),
		doc:   "Streams group: probing-policy plugin deciding when to probe; empty: the assignor module's own probe export if it has one, else the built-in interval policy; builtin: always the built-in (docs/WARMUPS.md)."},
	{name: "streams.end.offsets.refresh.ms", def: int64(30000), kind: kInt, min: 0, max: math.MaxInt32,
		field: i32(func(g *Group) *int32 { return &g.StreamsEndOffsetsRefreshMs }, nil),
		doc:   "Streams group: how often the host fetches changelog end offsets from the data plane (ListOffsets) for task lags; 0 disables."},
	{name: "streams.initial.rebalance.delay.ms", kind: kInt, min: 0, max: math.MaxInt32, kafka: true,
		field: i32(func(g *Group) *int32 { return &g.StreamsInitialRebalanceDelayMs }, func(c *core.Config) *int32 { return &c.Streams.InitialRebalanceDelayMs }),
		doc:   "Streams group: delay of the first assignment of a new group."},
	{name: "streams.assignment.interval.ms", kind: kInt, min: 0, max: math.MaxInt32, kafka: true,
		runtime: &bound{0, 15000, "group.streams.min/max.assignment.interval.ms"},
		field:   i32(func(g *Group) *int32 { return &g.StreamsAssignmentIntervalMs }, func(c *core.Config) *int32 { return &c.Streams.AssignmentIntervalMs }),
		doc:     "Streams group: minimum time between two assignor runs."},
	{name: "streams.task.offset.interval.ms", kind: kInt, min: 1, max: math.MaxInt32, kafka: true,
		runtime: &bound{15000, math.MaxInt64, "group.streams.min.task.offset.interval.ms"},
		field:   i32(func(g *Group) *int32 { return &g.StreamsTaskOffsetIntervalMs }, func(c *core.Config) *int32 { return &c.Streams.TaskOffsetIntervalMs }),
		doc:     "Streams group: how often members report task offsets."},
	// Core's default assignor is the first of Config.Assignors.
	{name: "streams.assignor.name", kind: kString, kafka: true,
		field: field{
			set:     func(g *Group, v any) { g.StreamsAssignorName = v.(string) },
			toCore:  func(c *core.Config, g *Group) { c.Streams.AssignorName = g.StreamsAssignorName },
			coreDef: func(c core.Config) any { return c.Assignors[0] },
		},
		doc: "Streams group: task assignor (plugin) name (KIP-1357 streams.assignor.name)."},
	// The host bounds each plugin call made for the group on the assignor
	// workers (assignor runs, probing-policy checks) with it. Only the
	// config file sets it: a client altering a group through Kafka's config
	// APIs cannot hold an assignor worker longer than the operator allows.
	{name: "streams.assignor.timeout.ms", def: int64(30000), kind: kInt, min: 1, max: math.MaxInt32, fileOnly: true,
		field: i32(func(g *Group) *int32 { return &g.StreamsAssignorTimeoutMs }, nil),
		doc:   "Streams group: bound on each plugin call made for the group on the assignor workers (assignor runs, probing-policy checks); a call cut off by it is a plugin failure. Config file only."},
	// The host runs each shadow beside the group's assignor (host/experiment/shadow.go);
	// core never sees them.
	{name: "streams.assignor.shadow", def: []string{}, kind: kList, fileOnly: true,
		field: list(func(g *Group) *[]string { return &g.StreamsAssignorShadow }, nil),
		doc:   "Streams group: shadow assignors (comma-separated names) that compute a target beside the group's assignor on the identical input, off the critical path, for comparison at /v1/ab; their results are never applied (docs/AB-TESTING.md). Config file only."},
	// The host makes the candidate the assignor of the groups in its share
	// before core sees the group's settings (host/experiment/split.go).
	{name: "streams.assignor.candidate.name", def: "", kind: kString, fileOnly: true,
		field: str(func(g *Group) *string { return &g.StreamsAssignorCandidate }),
		doc:   "Streams group: candidate assignor of a split; the groups whose stable bucket (a hash of the group id, 0-99) is below streams.assignor.candidate.percent run it instead of streams.assignor.name (docs/AB-TESTING.md). Config file only."},
	{name: "streams.assignor.candidate.percent", def: int64(0), kind: kInt, min: 0, max: 100, fileOnly: true,
		field: i64(func(g *Group) *int64 { return &g.StreamsAssignorCandidatePercent }, nil),
		doc:   "Streams group: share of groups, in percent, that run streams.assignor.candidate.name. Config file only."},
	{name: "streams.rack.aware.assignment.tags", kind: kList, kafka: true,
		field: list(func(g *Group) *[]string { return &g.StreamsRackAwareAssignmentTags }, func(c *core.Config) *[]string { return &c.Streams.RackAwareAssignmentTags }),
		doc:   "Streams group: client-tag keys rack-aware standby placement spreads standbys over (comma-separated; no duplicates)."},
	{name: "streams.max.size", kind: kInt, min: 1, max: math.MaxInt32,
		field: i32(func(g *Group) *int32 { return &g.StreamsMaxSize }, func(c *core.Config) *int32 { return &c.Streams.MaxSize }),
		doc:   "Streams group: maximum members (Kafka's group.streams.max.size)."},
	{name: "streams.max.topology.size", kind: kInt, min: 1, max: math.MaxInt32, fileOnly: true,
		field: i32(func(g *Group) *int32 { return &g.StreamsMaxTopologySize }, func(c *core.Config) *int32 { return &c.Streams.MaxTopologySize }),
		doc:   "Streams group: maximum entries of a heartbeat's topology (subtopologies, topic names, copartition-group entries); a larger one is refused with INVALID_REQUEST before anything is stored (coordhost's own; Kafka has no bound). Config file only."},
	{name: "streams.migration.policy", kind: kString, oneOf: []string{"disabled", "upgrade", "downgrade", "bidirectional"},
		field: field{
			set: func(g *Group, v any) { g.StreamsMigrationPolicy = v.(string) },
			toCore: func(c *core.Config, g *Group) {
				if p, err := core.ParseMigrationPolicy(g.StreamsMigrationPolicy); err == nil {
					c.StreamsMigrationPolicy = p
				}
			},
			coreDef: func(c core.Config) any { return c.StreamsMigrationPolicy.String() },
		},
		doc: "Online classic<->streams migration: which directions are allowed (coordhost's own; cf. Kafka's group.consumer.migration.policy)."},
	{name: "consumer.session.timeout.ms", kind: kInt, min: 1, max: math.MaxInt32, kafka: true,
		runtime: &bound{45000, 60000, "group.consumer.min/max.session.timeout.ms"},
		field:   i32(func(g *Group) *int32 { return &g.ConsumerSessionTimeoutMs }, func(c *core.Config) *int32 { return &c.Consumer.SessionTimeoutMs }),
		doc:     "Consumer group (KIP-848): member session timeout."},
	{name: "consumer.heartbeat.interval.ms", kind: kInt, min: 1, max: math.MaxInt32, kafka: true,
		runtime: &bound{5000, 15000, "group.consumer.min/max.heartbeat.interval.ms"},
		field:   i32(func(g *Group) *int32 { return &g.ConsumerHeartbeatIntervalMs }, func(c *core.Config) *int32 { return &c.Consumer.HeartbeatIntervalMs }),
		doc:     "Consumer group (KIP-848): heartbeat interval sent to members."},
	{name: "consumer.assignment.interval.ms", kind: kInt, min: 0, max: math.MaxInt32, kafka: true,
		runtime: &bound{0, 15000, "group.consumer.min/max.assignment.interval.ms"},
		field: field{
			set: func(g *Group, v any) { g.ConsumerAssignmentIntervalMs = int32(v.(int64)) },
			// core's ConsumerConfig reads 0 as Kafka's default and a
			// negative value as no interval; the key's 0 is no interval.
			toCore: func(c *core.Config, g *Group) {
				c.Consumer.AssignmentIntervalMs = g.ConsumerAssignmentIntervalMs
				if c.Consumer.AssignmentIntervalMs == 0 {
					c.Consumer.AssignmentIntervalMs = -1
				}
			},
			coreDef: func(c core.Config) any { return int64(c.Consumer.AssignmentIntervalMs) },
		},
		doc: "Consumer group (KIP-848): minimum time between two target assignments; changes meanwhile share one assignor run (0: every change computes one)."},
	{name: "group.consumer.migration.policy", kind: kString, oneOf: []string{"disabled", "upgrade", "downgrade", "bidirectional"},
		field: field{
			set: func(g *Group, v any) { g.ConsumerMigrationPolicy = v.(string) },
			toCore: func(c *core.Config, g *Group) {
				if p, err := core.ParseMigrationPolicy(g.ConsumerMigrationPolicy); err == nil {
					c.ConsumerMigrationPolicy = p
				}
			},
			coreDef: func(c core.Config) any { return c.ConsumerMigrationPolicy.String() },
		},
		doc: "Online classic<->consumer (KIP-848) migration: which directions are allowed (Kafka's broker-wide config of this name, made per group)."},
	{name: "group.initial.rebalance.delay.ms", kind: kInt, min: 0, max: math.MaxInt32,
		field: i32(func(g *Group) *int32 { return &g.InitialRebalanceDelayMs }, func(c *core.Config) *int32 { return &c.Classic.InitialRebalanceDelayMs }),
		doc:   "Classic group: delay of the first rebalance of an empty group."},
	{name: "group.min.session.timeout.ms", kind: kInt, min: 1, max: math.MaxInt32,
		field: i32(func(g *Group) *int32 { return &g.MinSessionTimeoutMs }, func(c *core.Config) *int32 { return &c.Classic.MinSessionTimeoutMs }),
		doc:   "Classic group: smallest session timeout a member may ask for."},
	{name: "group.max.session.timeout.ms", kind: kInt, min: 1, max: math.MaxInt32,
		field: i32(func(g *Group) *int32 { return &g.MaxSessionTimeoutMs }, func(c *core.Config) *int32 { return &c.Classic.MaxSessionTimeoutMs }),
		doc:   "Classic group: largest session timeout a member may ask for."},
	{name: "group.max.size", kind: kInt, min: 1, max: math.MaxInt32,
		field: i32(func(g *Group) *int32 { return &g.MaxSize }, func(c *core.Config) *int32 { return &c.Classic.MaxSize }),
		doc:   "Classic group: maximum members."},
})

// groupKeyIndex maps a per-group key's name to its row.
var groupKeyIndex = func() map[string]int {
	m := make(map[string]int, len(groupKeys))
	for i, k := range groupKeys {
		m[k.name] = i
	}
	return m
}()

// bound is the range Kafka 4.4 holds a runtime value to
// (GroupConfig.validateValues), at Kafka's default of the broker config
// named; math.MinInt64 or math.MaxInt64 leave a side open. Values from the
// config file are not bound by it (tests and small clusters use shorter
// timeouts); runtime values are, as in Kafka.
type bound struct {
	min, max int64
	broker   string
}

// field is where a per-group key's value lives: a Group field and, when
// core reads the key, a field of core's configuration.
type field struct {
	set     func(*Group, any)          // stores a parsed value in Group
	toCore  func(*core.Config, *Group) // copies it into core's config; nil: core does not read the key
	coreDef func(core.Config) any      // the default, read from core.DefaultConfig
}

// i32 binds an INT key to a Group field and (c non-nil) a core field.
func i32(g func(*Group) *int32, c func(*core.Config) *int32) field {
	f := field{set: func(x *Group, v any) { *g(x) = int32(v.(int64)) }}
	if c != nil {
		f.toCore = func(cc *core.Config, x *Group) { *c(cc) = *g(x) }
		f.coreDef = func(cc core.Config) any { return int64(*c(&cc)) }
	}
	return f
}

// i64 binds a LONG key.
func i64(g func(*Group) *int64, c func(*core.Config) *int64) field {
	f := field{set: func(x *Group, v any) { *g(x) = v.(int64) }}
	if c != nil {
		f.toCore = func(cc *core.Config, x *Group) { *c(cc) = *g(x) }
		f.coreDef = func(cc core.Config) any { return *c(&cc) }
	}
	return f
}

// str binds a STRING key core does not read.
func str(g func(*Group) *string) field {
	return field{set: func(x *Group, v any) { *g(x) = v.(string) }}
}

// list binds a LIST key; its default is shown as an empty list, never nil.
func list(g func(*Group) *[]string, c func(*core.Config) *[]string) field {
	f := field{set: func(x *Group, v any) { *g(x) = v.([]string) }}
	if c != nil {
		f.toCore = func(cc *core.Config, x *Group) { *c(cc) = *g(x) }
		f.coreDef = func(cc core.Config) any { return append([]string{}, *c(&cc)...) }
	}
	return f
}

// withCoreDefaults fills the default of every key core reads from
// core.DefaultConfig.
func withCoreDefaults(keys []key) []key {
	d := core.DefaultConfig()
	for i, k := range keys {
		if k.def == nil {
			keys[i].def = k.field.coreDef(d)
		}
	}
	return keys
}

// Core returns base with g's values of every key core reads.
func (g Group) Core(base core.Config) core.Config {
	for _, k := range groupKeys {
		if k.field.toCore != nil {
			k.field.toCore(&base, &g)
		}
	}
	return base
}

// CoreConsumer is g as core's per-group consumer settings, every field set.
func (g Group) CoreConsumer() core.ConsumerGroupOverrides {
	c := g.Core(core.DefaultConfig())
	return core.ConsumerGroupOverrides{SessionTimeoutMs: &c.Consumer.SessionTimeoutMs, HeartbeatIntervalMs: &c.Consumer.HeartbeatIntervalMs, AssignmentIntervalMs: &c.Consumer.AssignmentIntervalMs}
}

// CoreConsumerMigrationPolicy is g's group.consumer.migration.policy.
func (g Group) CoreConsumerMigrationPolicy() core.MigrationPolicy {
	return g.Core(core.DefaultConfig()).ConsumerMigrationPolicy
}

// CoreGroup is g as core's per-group settings, every field set: streams
// overrides (the probing policy left to the host, which resolves it),
// classic overrides and the migration policy.
func (g Group) CoreGroup() (core.StreamsGroupOverrides, core.ClassicGroupOverrides, core.MigrationPolicy) {
	c := g.Core(core.DefaultConfig())
	return c.Streams.Overrides(), c.Classic.Overrides(), c.StreamsMigrationPolicy
}
