package core

import (
	"fmt"
	"math"
	"slices"
)

// ConsumerConfig is the set of KIP-848 consumer-group settings (Kafka's
// group.consumer.*). Zero values take Kafka 4.4's defaults.
type ConsumerConfig struct {
	SessionTimeoutMs    int32 // group.consumer.session.timeout.ms (45000)
	HeartbeatIntervalMs int32 // group.consumer.heartbeat.interval.ms (5000)
	MaxSize             int32 // group.consumer.max.size (unbounded)
	// AssignmentIntervalMs is group.consumer.assignment.interval.ms
	// (KIP-1263, 1000): no new target assignment within this long after
	// the last one; the first heartbeat (or classic JoinGroup) after it
	// computes the target, so changes made meanwhile share one assignor
	// run. Zero takes Kafka's default; negative computes in every
	// heartbeat that needs a target (Kafka's 0).
	AssignmentIntervalMs int32
	// Assignors are the server-side assignors members may name
	// (group.consumer.assignors); the first is the default. Core does not
	// implement assignment algorithms itself: the host supplies them.
	Assignors []NamedPartitionAssignor
	// Registered, when set, resolves server assignor names that are not in
	// Assignors: assignors the host registers at run time. It is asked on
	// every lookup, so a name registered later becomes known to members
	// without a restart. Assignors keeps precedence on a shared name.
	Registered PartitionAssignorSet
}

// PartitionAssignorSet is a set of server assignors that may change while
// the coordinator runs (the host's runtime-registered plugins).
type PartitionAssignorSet interface {
	// PartitionAssignor returns the assignor registered under name.
	PartitionAssignor(name string) (PartitionAssignor, bool)
	// PartitionAssignorNames lists the registered names, sorted.
	PartitionAssignorNames() []string
}

// NamedPartitionAssignor is a server-side assignor and the name members
// select it by ("uniform", "range").
type NamedPartitionAssignor struct {
	Name     string
	Assignor PartitionAssignor
}

// PartitionAssignor computes a consumer group's target assignment (Kafka's
// ConsumerGroupPartitionAssignor). It runs inline in the heartbeat that
// needs it, as in Kafka, so it must be deterministic and fast.
type PartitionAssignor interface {
	// AssignPartitions returns one entry per in.Members, in order.
	AssignPartitions(in PartitionAssignInput) ([][]AssignedTopic, error)
}

// PartitionAssignInput is what a partition assignor may look at: Kafka's
// GroupSpec and SubscribedTopicDescriber.
type PartitionAssignInput struct {
	Group string
	Epoch int32
	// Topics are the subscribed topics that exist, ascending by ID.
	Topics []AssignTopic
	// Members are ascending by member id.
	Members []PartitionAssignMember
	// TablePeak and TableSeq describe the group's member map as Kafka's
	// coordinator holds it now, which decides the order in which it hands
	// the members to its assignor (consumer_member_table.go): the most
	// members it has held before this request, and per member (in Members'
	// order) its insertion number, -1 for a member this request added.
	TablePeak int
	TableSeq  []int64
}

// AssignTopic describes one subscribed topic.
type AssignTopic struct {
	ID         [16]byte
	Name       string
	Partitions int32
	Racks      [][]string // per partition, the racks of its replicas (may be nil)
}

// PartitionAssignMember is one member as the assignor sees it; Assigned is
// its current target assignment.
type PartitionAssignMember struct {
	MemberID   string
	InstanceID string // "" when not static
	RackID     string // "" when unknown
	Subscribed []int32
	Assigned   []AssignedTopic
}

// AssignedTopic lists partitions of the topic at index Topic of
// PartitionAssignInput.Topics, ascending.
type AssignedTopic struct {
	Topic      int32
	Partitions []int32
}

// Kafka 4.4's defaults of the consumer-group settings.
const (
	defaultConsumerSessionTimeoutMs     = 45000
	defaultConsumerHeartbeatIntervalMs  = 5000
	defaultConsumerAssignmentIntervalMs = 1000
)

// DefaultConsumerConfig is Kafka 4.4's defaults of the consumer-group
// settings (no assignors: the host supplies them).
func DefaultConsumerConfig() ConsumerConfig {
	return ConsumerConfig{SessionTimeoutMs: defaultConsumerSessionTimeoutMs, HeartbeatIntervalMs: defaultConsumerHeartbeatIntervalMs, AssignmentIntervalMs: defaultConsumerAssignmentIntervalMs}
}

// ConsumerGroupOverrides are one consumer group's settings (Kafka's
// consumer.* group configs); nil fields fall back to ConsumerConfig.
type ConsumerGroupOverrides struct {
	SessionTimeoutMs    *int32 // consumer.session.timeout.ms
	HeartbeatIntervalMs *int32 // consumer.heartbeat.interval.ms
	// AssignmentIntervalMs is consumer.assignment.interval.ms: unlike
	// ConsumerConfig's field, 0 (or less) means no interval, as the value
	// 0 of Kafka's group config does.
	AssignmentIntervalMs *int32
}

// Validate reports the first invalid override, naming its config key; the
// heartbeat interval must stay below the session timeout, with each side
// falling back to broker when not set, as Kafka's GroupConfig checks it.
func (o ConsumerGroupOverrides) Validate(broker ConsumerConfig) error {
	k := broker.with(o)
	switch {
	case k.SessionTimeoutMs <= 0:
		return fmt.Errorf("consumer.session.timeout.ms: %d must be > 0", k.SessionTimeoutMs)
	case k.HeartbeatIntervalMs <= 0:
		return fmt.Errorf("consumer.heartbeat.interval.ms: %d must be > 0", k.HeartbeatIntervalMs)
	case k.HeartbeatIntervalMs >= k.SessionTimeoutMs:
		return fmt.Errorf("consumer.heartbeat.interval.ms: %d must be less than consumer.session.timeout.ms %d", k.HeartbeatIntervalMs, k.SessionTimeoutMs)
	}
	return nil
}

// with returns c with o's set fields applied.
func (c ConsumerConfig) with(o ConsumerGroupOverrides) ConsumerConfig {
	if o.SessionTimeoutMs != nil {
		c.SessionTimeoutMs = *o.SessionTimeoutMs
	}
	if o.HeartbeatIntervalMs != nil {
		c.HeartbeatIntervalMs = *o.HeartbeatIntervalMs
	}
	if o.AssignmentIntervalMs != nil {
		c.AssignmentIntervalMs = *o.AssignmentIntervalMs
	}
	return c
}

// setConsumerGroupConfig replaces the overrides of one consumer group.
// They are read where Kafka reads its group configs: the session timeout
// when a member's session is (re)armed, the interval in every heartbeat
// answer.
func (c *Coordinator) setConsumerGroupConfig(group string, o ConsumerGroupOverrides) {
	if c.consumerOverrides == nil {
		c.consumerOverrides = map[string]ConsumerGroupOverrides{}
	}
	c.consumerOverrides[group] = o
}

// consumerGroupConfig resolves a group's effective consumer settings.
func (c *Coordinator) consumerGroupConfig(group string) ConsumerConfig {
	return c.consumerConfig().with(c.consumerOverrides[group])
}

// consumerConfig returns the consumer settings with defaults filled in.
func (c *Coordinator) consumerConfig() ConsumerConfig {
	cc := c.cfg.Consumer
	if cc.SessionTimeoutMs <= 0 {
		cc.SessionTimeoutMs = defaultConsumerSessionTimeoutMs
	}
	if cc.HeartbeatIntervalMs <= 0 {
		cc.HeartbeatIntervalMs = defaultConsumerHeartbeatIntervalMs
	}
	if cc.MaxSize <= 0 {
		cc.MaxSize = math.MaxInt32
	}
	switch {
	case cc.AssignmentIntervalMs == 0:
		cc.AssignmentIntervalMs = defaultConsumerAssignmentIntervalMs
	case cc.AssignmentIntervalMs < 0:
		cc.AssignmentIntervalMs = 0
	}
	return cc
}

// consumerAssignor finds a server assignor by name.
func (c *Coordinator) consumerAssignor(name string) (PartitionAssignor, bool) {
	for _, a := range c.cfg.Consumer.Assignors {
		if a.Name == name {
			return a.Assignor, true
		}
	}
	if r := c.cfg.Consumer.Registered; r != nil {
		return r.PartitionAssignor(name)
	}
	return nil, false
}

// consumerAssignorNames lists the names members may select: Assignors in
// order, then the registered ones not shadowed by them.
func (c *Coordinator) consumerAssignorNames() []string {
	names := make([]string, 0, len(c.cfg.Consumer.Assignors))
	for _, a := range c.cfg.Consumer.Assignors {
		names = append(names, a.Name)
	}
	if r := c.cfg.Consumer.Registered; r != nil {
		for _, n := range r.PartitionAssignorNames() {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names
}

// validateConsumerConfig checks the assignor table (names unique, set).
func validateConsumerConfig(cc ConsumerConfig) error {
	seen := map[string]bool{}
	for _, a := range cc.Assignors {
		if a.Name == "" || a.Assignor == nil || seen[a.Name] {
			return fmt.Errorf("group.consumer.assignors: assignor %q is unnamed, nil or listed twice", a.Name)
		}
		seen[a.Name] = true
	}
	return nil
}
