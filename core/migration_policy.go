package core

import (
	"fmt"
	"strings"
)

// MigrationPolicy is streams.migration.policy: which online conversions
// between a classic group and a streams group a group allows (the streams
// analogue of Kafka's group.consumer.migration.policy). The zero value is
// the default, bidirectional. Conversions of empty groups (offline
// migration) are always allowed.
type MigrationPolicy int8

// Migration policies.
const (
	// MigrationBidirectional allows upgrade and downgrade.
	MigrationBidirectional MigrationPolicy = iota
	// MigrationUpgrade allows classic → streams only.
	MigrationUpgrade
	// MigrationDowngrade allows streams → classic only.
	MigrationDowngrade
	// MigrationDisabled allows neither, and classic members may not join
	// a non-empty streams group (INCONSISTENT_GROUP_PROTOCOL).
	MigrationDisabled
)

// String is the config value.
func (p MigrationPolicy) String() string {
	switch p {
	case MigrationBidirectional:
		return "bidirectional"
	case MigrationUpgrade:
		return "upgrade"
	case MigrationDowngrade:
		return "downgrade"
	case MigrationDisabled:
		return "disabled"
	}
	return fmt.Sprintf("MigrationPolicy(%d)", int8(p))
}

// ParseMigrationPolicy reads a streams.migration.policy value
// (case-insensitive). Unlike Kafka, which reads an unknown value as
// disabled, an unknown value is an error.
func ParseMigrationPolicy(s string) (MigrationPolicy, error) {
	for _, p := range []MigrationPolicy{MigrationBidirectional, MigrationUpgrade, MigrationDowngrade, MigrationDisabled} {
		if strings.EqualFold(s, p.String()) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("streams.migration.policy: unknown value %q (bidirectional, upgrade, downgrade, disabled)", s)
}

func (p MigrationPolicy) allowsUpgrade() bool {
	return p == MigrationBidirectional || p == MigrationUpgrade
}

func (p MigrationPolicy) allowsDowngrade() bool {
	return p == MigrationBidirectional || p == MigrationDowngrade
}

// migrationState is the Coordinator's migration bookkeeping.
type migrationState struct {
	// overrides are per-group streams.migration.policy values.
	overrides map[string]MigrationPolicy
	// consumerOverrides are per-group group.consumer.migration.policy
	// values (consumer_migration.go).
	consumerOverrides map[string]MigrationPolicy
	// noDowngrade suppresses downgrade while a streams join fences the
	// classic members of its own process.
	noDowngrade bool
	// departed remembers, per group and process, members that left on
	// their own, for the process's restart (migration_regroup.go). Soft
	// state, like the regroup wait.
	departed map[string]map[string]departure
}

// setStreamsMigrationPolicy sets (or with nil clears) a group's
// streams.migration.policy override of Config.StreamsMigrationPolicy.
func (c *Coordinator) setStreamsMigrationPolicy(group string, p *MigrationPolicy) {
	setPolicyOverride(&c.migration.overrides, group, p)
}

// setPolicyOverride sets (or with nil clears) a group's entry of *m.
func setPolicyOverride(m *map[string]MigrationPolicy, group string, p *MigrationPolicy) {
	if *m == nil {
		*m = map[string]MigrationPolicy{}
	}
	if p == nil {
		delete(*m, group)
		return
	}
	(*m)[group] = *p
}

// migrationPolicy is the group's effective policy.
func (c *Coordinator) migrationPolicy(group string) MigrationPolicy {
	if p, ok := c.migration.overrides[group]; ok {
		return p
	}
	return c.cfg.StreamsMigrationPolicy
}
