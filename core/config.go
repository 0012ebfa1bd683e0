package core

import (
	"fmt"
	"math"
)

// Config is the broker-wide configuration of a Coordinator, validated once
// by New and immutable afterwards.
type Config struct {
	// Streams holds the group.streams.* broker defaults.
	Streams StreamsConfig
	// Assignors names the task assignors the host can run; the first is
	// the default (group.streams.assignors).
	Assignors []string
	// Classic holds the classic-group (JoinGroup protocol) settings.
	Classic ClassicConfig
	// MaxGroups caps the groups this coordinator holds: a join that would
	// create one more is answered COORDINATOR_NOT_AVAILABLE (retriable).
	// 0: no cap, as in Kafka.
	MaxGroups int
	// AssignorWaitMs bounds how long a heartbeat that triggered an assignor
	// run waits for the result before answering with the current target.
	// 0 answers at once.
	AssignorWaitMs int64
	// StreamsMigrationPolicy is the broker-wide streams.migration.policy
	// (online classic <-> streams migration); groups may override it.
	StreamsMigrationPolicy MigrationPolicy
	// ConsumerMigrationPolicy is the broker-wide
	// group.consumer.migration.policy (online classic <-> consumer
	// migration, Kafka's default bidirectional); groups may override it.
	ConsumerMigrationPolicy MigrationPolicy
	// Consumer holds the KIP-848 consumer-group settings and server
	// assignors (consumer_config.go).
	Consumer ConsumerConfig
}

// StreamsConfig is the set of streams-group settings; broker values are the
// defaults beneath per-group overrides.
type StreamsConfig struct {
	SessionTimeoutMs    int32 // group.streams.session.timeout.ms
	HeartbeatIntervalMs int32 // group.streams.heartbeat.interval.ms
	MaxSize             int32 // group.streams.max.size
	// MaxTopologySize bounds the entries of a topology a heartbeat may
	// carry: subtopologies, topic names and copartition-group entries
	// (coordhost's streams.max.topology.size; Kafka has no such bound).
	MaxTopologySize         int32
	NumStandbyReplicas      int32 // group.streams.num.standby.replicas
	InitialRebalanceDelayMs int32 // group.streams.initial.rebalance.delay.ms
	AssignmentIntervalMs    int32 // group.streams.assignment.interval.ms
	AssignorName            string
	NumWarmupReplicas       int32 // group.streams.num.warmup.replicas
	AcceptableRecoveryLag   int64 // group.streams.acceptable.recovery.lag
	TaskOffsetIntervalMs    int32 // group.streams.task.offset.interval.ms
	// ProbingIntervalMs is how long after a target holding warm-ups the
	// assignor is re-run when it gave no hint (coordhost's
	// group.streams.probing.rebalance.interval.ms; 0 disables).
	ProbingIntervalMs int64
	// ProbingPolicy names the probing-policy plugin that decides when to
	// probe (ProbeCheck); "" is core's built-in rule (docs/WARMUPS.md §2.5).
	ProbingPolicy string
	// RackAwareAssignmentTags are the client-tag keys rack-aware standby
	// placement uses (group.streams.rack.aware.assignment.tags).
	RackAwareAssignmentTags []string
	// UnreleasedHeartbeatIntervalMs, when > 0, is the heartbeat interval
	// answered to a member waiting for tasks other members still hold
	// (UNRELEASED_TASKS), if shorter than HeartbeatIntervalMs, so it learns
	// of their release sooner (coordhost's
	// streams.unreleased.heartbeat.interval.ms; 0: off, every answer
	// carries HeartbeatIntervalMs, as in Kafka 4.4). At least
	// MinUnreleasedHeartbeatIntervalMs.
	UnreleasedHeartbeatIntervalMs int32
	// RebalanceHeartbeatIntervalMs, when > 0, is the heartbeat interval
	// answered to every streams-protocol member of a group in a roll (a
	// member left or was fenced within the last session timeout, or a
	// member has not reconciled with its target), if shorter than
	// HeartbeatIntervalMs, so the members are already on it when the
	// target changes (coordhost's streams.rebalance.heartbeat.interval.ms;
	// 0: off, as in Kafka 4.4). At least MinRebalanceHeartbeatIntervalMs,
	// and never below RebalanceHeartbeatMsPerMember per member of the
	// group (streams_roll.go).
	RebalanceHeartbeatIntervalMs int32
}

// MinUnreleasedHeartbeatIntervalMs is the floor of a non-zero
// StreamsConfig.UnreleasedHeartbeatIntervalMs: a waiting member heartbeats
// at most once per 20 ms.
const MinUnreleasedHeartbeatIntervalMs = 20

// MinRebalanceHeartbeatIntervalMs is the floor of a non-zero
// StreamsConfig.RebalanceHeartbeatIntervalMs, the same as the waiting
// members' floor.
const MinRebalanceHeartbeatIntervalMs = MinUnreleasedHeartbeatIntervalMs

// RebalanceHeartbeatMsPerMember bounds the interval answered in a roll
// from below by the group's size: at least this many milliseconds per
// member (classic members included), so a group of n members is answered
// at least n ms and sends at most 1000 heartbeats a second in a roll,
// whatever its size.
const RebalanceHeartbeatMsPerMember = 1

// ClassicConfig is the set of classic-group broker settings.
type ClassicConfig struct {
	MinSessionTimeoutMs     int32 // group.min.session.timeout.ms
	MaxSessionTimeoutMs     int32 // group.max.session.timeout.ms
	MaxSize                 int32 // group.max.size
	InitialRebalanceDelayMs int32 // group.initial.rebalance.delay.ms
	NewMemberJoinTimeoutMs  int32 // new members' JoinGroup timeout (Kafka: 5 minutes, fixed)
}

// DefaultClassicConfig returns Kafka 4.4's classic-group defaults.
func DefaultClassicConfig() ClassicConfig {
	return ClassicConfig{MinSessionTimeoutMs: 6000, MaxSessionTimeoutMs: 1800000, MaxSize: math.MaxInt32,
		InitialRebalanceDelayMs: 3000, NewMemberJoinTimeoutMs: 300000}
}

// DefaultMaxTopologySize is the default of StreamsConfig.MaxTopologySize:
// reaching it takes tens of thousands of subtopologies, and one group's
// stored topology stays within megabytes.
const DefaultMaxTopologySize = 100000

// DefaultConfig returns Kafka 4.4's defaults with the "sticky" assignor.
func DefaultConfig() Config {
	return Config{
		Streams: StreamsConfig{
			SessionTimeoutMs:        45000,
			HeartbeatIntervalMs:     5000,
			MaxSize:                 math.MaxInt32,
			MaxTopologySize:         DefaultMaxTopologySize,
			NumStandbyReplicas:      0,
			InitialRebalanceDelayMs: 3000,
			AssignmentIntervalMs:    1000,
			NumWarmupReplicas:       2,
			AcceptableRecoveryLag:   10000,
			TaskOffsetIntervalMs:    60000,
			ProbingIntervalMs:       600000,
		},
		Classic:        DefaultClassicConfig(),
		Consumer:       DefaultConsumerConfig(),
		Assignors:      []string{"sticky"},
		AssignorWaitMs: 1000,
	}
}

// Validate reports the first invalid setting, naming its key and value.
func (c Config) Validate() error {
	if err := validateConsumerConfig(c.Consumer); err != nil {
		return err
	}
	s := c.Streams
	switch {
	case s.SessionTimeoutMs <= 0:
		return fmt.Errorf("group.streams.session.timeout.ms: %d must be > 0", s.SessionTimeoutMs)
	case s.HeartbeatIntervalMs <= 0 || s.HeartbeatIntervalMs >= s.SessionTimeoutMs:
		return fmt.Errorf("group.streams.heartbeat.interval.ms: %d must be > 0 and < the session timeout %d",
			s.HeartbeatIntervalMs, s.SessionTimeoutMs)
	case s.MaxSize <= 0:
		return fmt.Errorf("group.streams.max.size: %d must be > 0", s.MaxSize)
	case s.MaxTopologySize <= 0:
		return fmt.Errorf("streams.max.topology.size: %d must be > 0", s.MaxTopologySize)
	case s.NumStandbyReplicas < 0:
		return fmt.Errorf("group.streams.num.standby.replicas: %d must be >= 0", s.NumStandbyReplicas)
	case s.InitialRebalanceDelayMs < 0:
		return fmt.Errorf("group.streams.initial.rebalance.delay.ms: %d must be >= 0", s.InitialRebalanceDelayMs)
	case s.AssignmentIntervalMs < 0:
		return fmt.Errorf("group.streams.assignment.interval.ms: %d must be >= 0", s.AssignmentIntervalMs)
	case s.NumWarmupReplicas < 0:
		return fmt.Errorf("group.streams.num.warmup.replicas: %d must be >= 0", s.NumWarmupReplicas)
	case s.AcceptableRecoveryLag < 0:
		return fmt.Errorf("group.streams.acceptable.recovery.lag: %d must be >= 0", s.AcceptableRecoveryLag)
	case s.ProbingIntervalMs < 0:
		return fmt.Errorf("group.streams.probing.rebalance.interval.ms: %d must be >= 0", s.ProbingIntervalMs)
	case s.UnreleasedHeartbeatIntervalMs != 0 && s.UnreleasedHeartbeatIntervalMs < MinUnreleasedHeartbeatIntervalMs:
		return fmt.Errorf("streams.unreleased.heartbeat.interval.ms: %d must be 0 (off) or >= %d", s.UnreleasedHeartbeatIntervalMs, MinUnreleasedHeartbeatIntervalMs)
	case s.RebalanceHeartbeatIntervalMs != 0 && s.RebalanceHeartbeatIntervalMs < MinRebalanceHeartbeatIntervalMs:
		return fmt.Errorf("streams.rebalance.heartbeat.interval.ms: %d must be 0 (off) or >= %d", s.RebalanceHeartbeatIntervalMs, MinRebalanceHeartbeatIntervalMs)
	case len(c.Assignors) == 0:
		return fmt.Errorf("group.streams.assignors: at least one assignor is required")
	case c.MaxGroups < 0:
		return fmt.Errorf("max groups: %d must be >= 0", c.MaxGroups)
	case c.AssignorWaitMs < 0:
		return fmt.Errorf("assignor wait: %d must be >= 0", c.AssignorWaitMs)
	case c.StreamsMigrationPolicy < MigrationBidirectional || c.StreamsMigrationPolicy > MigrationDisabled:
		return fmt.Errorf("streams.migration.policy: %v is not a policy", c.StreamsMigrationPolicy)
	case c.ConsumerMigrationPolicy < MigrationBidirectional || c.ConsumerMigrationPolicy > MigrationDisabled:
		return fmt.Errorf("group.consumer.migration.policy: %v is not a policy", c.ConsumerMigrationPolicy)
	}
	return c.Classic.validate()
}

func (k ClassicConfig) validate() error {
	switch {
	case k.MinSessionTimeoutMs <= 0 || k.MaxSessionTimeoutMs < k.MinSessionTimeoutMs:
		return fmt.Errorf("group.min.session.timeout.ms/group.max.session.timeout.ms: %d/%d must be > 0 and min <= max",
			k.MinSessionTimeoutMs, k.MaxSessionTimeoutMs)
	case k.MaxSize <= 0:
		return fmt.Errorf("group.max.size: %d must be > 0", k.MaxSize)
	case k.InitialRebalanceDelayMs < 0:
		return fmt.Errorf("group.initial.rebalance.delay.ms: %d must be >= 0", k.InitialRebalanceDelayMs)
	case k.NewMemberJoinTimeoutMs <= 0:
		return fmt.Errorf("classic new member join timeout: %d must be > 0", k.NewMemberJoinTimeoutMs)
	}
	return nil
}

// StreamsGroupOverrides are per-group settings (streams.* group configs);
// nil fields fall back to the broker default.
type StreamsGroupOverrides struct {
	MaxSize                 *int32
	MaxTopologySize         *int32 // streams.max.topology.size
	SessionTimeoutMs        *int32
	HeartbeatIntervalMs     *int32
	NumStandbyReplicas      *int32
	InitialRebalanceDelayMs *int32
	AssignmentIntervalMs    *int32
	AssignorName            *string
	NumWarmupReplicas       *int32
	AcceptableRecoveryLag   *int64
	TaskOffsetIntervalMs    *int32
	ProbingIntervalMs       *int64   // streams.probing.rebalance.interval.ms
	ProbingPolicy           *string  // the probing-policy plugin; "": core's built-in rule
	RackAwareAssignmentTags []string // nil: broker default
	// UnreleasedHeartbeatIntervalMs is streams.unreleased.heartbeat.interval.ms.
	UnreleasedHeartbeatIntervalMs *int32
	// RebalanceHeartbeatIntervalMs is streams.rebalance.heartbeat.interval.ms.
	RebalanceHeartbeatIntervalMs *int32
}

// Validate reports the first invalid override, naming its config key, so a
// host can reject an IncrementalAlterConfigs before calling
// SetStreamsGroupConfig.
func (o StreamsGroupOverrides) Validate() error {
	positive := []struct {
		key string
		v   *int32
	}{{"streams.max.size", o.MaxSize}, {"streams.max.topology.size", o.MaxTopologySize}, {"streams.session.timeout.ms", o.SessionTimeoutMs},
		{"streams.heartbeat.interval.ms", o.HeartbeatIntervalMs}, {"streams.task.offset.interval.ms", o.TaskOffsetIntervalMs}}
	for _, p := range positive {
		if p.v != nil && *p.v <= 0 {
			return fmt.Errorf("%s: %d must be > 0", p.key, *p.v)
		}
	}
	nonNegative := []struct {
		key string
		v   *int32
	}{{"streams.num.standby.replicas", o.NumStandbyReplicas}, {"streams.initial.rebalance.delay.ms", o.InitialRebalanceDelayMs},
		{"streams.assignment.interval.ms", o.AssignmentIntervalMs}, {"streams.num.warmup.replicas", o.NumWarmupReplicas}}
	for _, p := range nonNegative {
		if p.v != nil && *p.v < 0 {
			return fmt.Errorf("%s: %d must be >= 0", p.key, *p.v)
		}
	}
	if o.AcceptableRecoveryLag != nil && *o.AcceptableRecoveryLag < 0 {
		return fmt.Errorf("streams.acceptable.recovery.lag: %d must be >= 0", *o.AcceptableRecoveryLag)
	}
	if o.ProbingIntervalMs != nil && *o.ProbingIntervalMs < 0 {
		return fmt.Errorf("streams.probing.rebalance.interval.ms: %d must be >= 0", *o.ProbingIntervalMs)
	}
	if o.AssignorName != nil && *o.AssignorName == "" {
		return fmt.Errorf("streams.assignor.name: must not be empty")
	}
	if v := o.UnreleasedHeartbeatIntervalMs; v != nil && *v != 0 && (*v < MinUnreleasedHeartbeatIntervalMs) {
		return fmt.Errorf("streams.unreleased.heartbeat.interval.ms: %d must be 0 (off) or >= %d", *v, MinUnreleasedHeartbeatIntervalMs)
	}
	if v := o.RebalanceHeartbeatIntervalMs; v != nil && *v != 0 && (*v < MinRebalanceHeartbeatIntervalMs) {
		return fmt.Errorf("streams.rebalance.heartbeat.interval.ms: %d must be 0 (off) or >= %d", *v, MinRebalanceHeartbeatIntervalMs)
	}
	return nil
}

// Overrides returns s as per-group overrides with every field set, so a
// host can hand core a group's complete effective configuration.
func (s StreamsConfig) Overrides() StreamsGroupOverrides {
	return StreamsGroupOverrides{
		MaxSize: &s.MaxSize, MaxTopologySize: &s.MaxTopologySize, SessionTimeoutMs: &s.SessionTimeoutMs, HeartbeatIntervalMs: &s.HeartbeatIntervalMs,
		NumStandbyReplicas: &s.NumStandbyReplicas, InitialRebalanceDelayMs: &s.InitialRebalanceDelayMs,
		AssignmentIntervalMs: &s.AssignmentIntervalMs, AssignorName: &s.AssignorName,
		NumWarmupReplicas: &s.NumWarmupReplicas, AcceptableRecoveryLag: &s.AcceptableRecoveryLag,
		TaskOffsetIntervalMs: &s.TaskOffsetIntervalMs, ProbingIntervalMs: &s.ProbingIntervalMs,
		ProbingPolicy: &s.ProbingPolicy, RackAwareAssignmentTags: nonNil(s.RackAwareAssignmentTags),
		UnreleasedHeartbeatIntervalMs: &s.UnreleasedHeartbeatIntervalMs,
		RebalanceHeartbeatIntervalMs:  &s.RebalanceHeartbeatIntervalMs,
	}
}

// setStreamsGroupConfig replaces the overrides of one group. They are read
// on every heartbeat, as Kafka reads group configs; a change of the standby
// count triggers a new assignment at the next heartbeat.
func (c *Coordinator) setStreamsGroupConfig(group string, o StreamsGroupOverrides) {
	c.overrides[group] = o
	c.streamsCfg = streamsConfigMemo{}
}

// streamsConfigMemo is a group's settings as streamsConfig resolved them
// in entry point entry (Coordinator.entry; never 0, replay's).
type streamsConfigMemo struct {
	entry uint64
	group string
	cfg   StreamsConfig
}

// streamsConfig resolves a group's effective settings. Within one entry
// point they cannot change (settings are inputs of their own, taken
// between entry points), so the last group's are resolved once an entry
// point, however often its steps ask.
func (c *Coordinator) streamsConfig(group string) StreamsConfig {
	e := c.entry()
	if m := &c.streamsCfg; e != 0 && m.entry == e && m.group == group {
		return m.cfg
	}
	s := c.resolveStreamsConfig(group)
	if e != 0 {
		c.streamsCfg = streamsConfigMemo{entry: e, group: group, cfg: s}
	}
	return s
}

// resolveStreamsConfig is streamsConfig without the memo.
func (c *Coordinator) resolveStreamsConfig(group string) StreamsConfig {
	s := c.cfg.Streams
	if s.AssignorName == "" {
		s.AssignorName = c.cfg.Assignors[0]
	}
	o, ok := c.overrides[group]
	if !ok {
		return s
	}
	set32 := func(dst *int32, v *int32) {
		if v != nil {
			*dst = *v
		}
	}
	set32(&s.MaxSize, o.MaxSize)
	set32(&s.MaxTopologySize, o.MaxTopologySize)
	set32(&s.SessionTimeoutMs, o.SessionTimeoutMs)
	set32(&s.HeartbeatIntervalMs, o.HeartbeatIntervalMs)
	set32(&s.NumStandbyReplicas, o.NumStandbyReplicas)
	set32(&s.InitialRebalanceDelayMs, o.InitialRebalanceDelayMs)
	set32(&s.AssignmentIntervalMs, o.AssignmentIntervalMs)
	set32(&s.NumWarmupReplicas, o.NumWarmupReplicas)
	set32(&s.TaskOffsetIntervalMs, o.TaskOffsetIntervalMs)
	set32(&s.UnreleasedHeartbeatIntervalMs, o.UnreleasedHeartbeatIntervalMs)
	set32(&s.RebalanceHeartbeatIntervalMs, o.RebalanceHeartbeatIntervalMs)
	if o.AssignorName != nil {
		s.AssignorName = *o.AssignorName
	}
	if o.AcceptableRecoveryLag != nil {
		s.AcceptableRecoveryLag = *o.AcceptableRecoveryLag
	}
	if o.ProbingIntervalMs != nil {
		s.ProbingIntervalMs = *o.ProbingIntervalMs
	}
	if o.ProbingPolicy != nil {
		s.ProbingPolicy = *o.ProbingPolicy
	}
	if o.RackAwareAssignmentTags != nil {
		s.RackAwareAssignmentTags = o.RackAwareAssignmentTags
	}
	return s
}

// ClassicGroupOverrides are per-group classic settings (coordhost applies
// Kafka's broker-wide group.* classic configs per group); nil fields fall
// back to the broker default.
type ClassicGroupOverrides struct {
	MinSessionTimeoutMs     *int32 // group.min.session.timeout.ms
	MaxSessionTimeoutMs     *int32 // group.max.session.timeout.ms
	MaxSize                 *int32 // group.max.size
	InitialRebalanceDelayMs *int32 // group.initial.rebalance.delay.ms
}

// Validate reports the first invalid override, naming its config key. The
// session-timeout bounds are checked together with the broker defaults
// they fall back to.
func (o ClassicGroupOverrides) Validate(broker ClassicConfig) error {
	k := broker.with(o)
	switch {
	case o.MinSessionTimeoutMs != nil && *o.MinSessionTimeoutMs <= 0:
		return fmt.Errorf("group.min.session.timeout.ms: %d must be > 0", *o.MinSessionTimeoutMs)
	case (o.MinSessionTimeoutMs != nil || o.MaxSessionTimeoutMs != nil) && k.MaxSessionTimeoutMs < k.MinSessionTimeoutMs:
		return fmt.Errorf("group.max.session.timeout.ms: %d must be >= group.min.session.timeout.ms %d",
			k.MaxSessionTimeoutMs, k.MinSessionTimeoutMs)
	case o.MaxSize != nil && *o.MaxSize <= 0:
		return fmt.Errorf("group.max.size: %d must be > 0", *o.MaxSize)
	case o.InitialRebalanceDelayMs != nil && *o.InitialRebalanceDelayMs < 0:
		return fmt.Errorf("group.initial.rebalance.delay.ms: %d must be >= 0", *o.InitialRebalanceDelayMs)
	}
	return nil
}

// Overrides returns k as per-group overrides with every field set.
func (k ClassicConfig) Overrides() ClassicGroupOverrides {
	return ClassicGroupOverrides{MinSessionTimeoutMs: &k.MinSessionTimeoutMs, MaxSessionTimeoutMs: &k.MaxSessionTimeoutMs,
		MaxSize: &k.MaxSize, InitialRebalanceDelayMs: &k.InitialRebalanceDelayMs}
}

// with returns k with the set fields of o applied.
func (k ClassicConfig) with(o ClassicGroupOverrides) ClassicConfig {
	for _, f := range []struct {
		dst *int32
		v   *int32
	}{{&k.MinSessionTimeoutMs, o.MinSessionTimeoutMs}, {&k.MaxSessionTimeoutMs, o.MaxSessionTimeoutMs},
		{&k.MaxSize, o.MaxSize}, {&k.InitialRebalanceDelayMs, o.InitialRebalanceDelayMs}} {
		if f.v != nil {
			*f.dst = *f.v
		}
	}
	return k
}

// setClassicGroupConfig replaces the classic overrides of one group (the
// style of SetStreamsGroupConfig). They are read at every JoinGroup and
// rebalance, so a change applies from the group's next join; members
// already admitted keep their session timeouts.
func (c *Coordinator) setClassicGroupConfig(group string, o ClassicGroupOverrides) {
	if c.classicOverrides == nil {
		c.classicOverrides = map[string]ClassicGroupOverrides{}
	}
	c.classicOverrides[group] = o
}

// classicConfig resolves a group's effective classic settings.
func (c *Coordinator) classicConfig(group string) ClassicConfig {
	o, ok := c.classicOverrides[group]
	if !ok {
		return c.cfg.Classic
	}
	return c.cfg.Classic.with(o)
}
