package config

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/coordhost/coordhost/core"
)

// Group is the effective configuration of one group. core reads it; the
// field comments name the config keys.
type Group struct {
	StreamsSessionTimeoutMs              int32    // streams.session.timeout.ms
	StreamsHeartbeatIntervalMs           int32    // streams.heartbeat.interval.ms
	StreamsUnreleasedHeartbeatIntervalMs int32    // streams.unreleased.heartbeat.interval.ms
	StreamsRebalanceHeartbeatIntervalMs  int32    // streams.rebalance.heartbeat.interval.ms
	StreamsNumStandbyReplicas            int32    // streams.num.standby.replicas
	StreamsNumWarmupReplicas             int32    // streams.num.warmup.replicas
	StreamsAcceptableRecoveryLag         int64    // streams.acceptable.recovery.lag
	StreamsProbingIntervalMs             int64    // streams.probing.rebalance.interval.ms
	StreamsProbingPolicy                 string   // streams.probing.policy
	StreamsEndOffsetsRefreshMs           int32    // streams.end.offsets.refresh.ms
	StreamsInitialRebalanceDelayMs       int32    // streams.initial.rebalance.delay.ms
	StreamsAssignmentIntervalMs          int32    // streams.assignment.interval.ms
	StreamsTaskOffsetIntervalMs          int32    // streams.task.offset.interval.ms
	StreamsAssignorName                  string   // streams.assignor.name
	StreamsAssignorTimeoutMs             int32    // streams.assignor.timeout.ms
	StreamsAssignorShadow                []string // streams.assignor.shadow
	StreamsMaxSize                       int32    // streams.max.size
	StreamsMaxTopologySize               int32    // streams.max.topology.size
	StreamsRackAwareAssignmentTags       []string // streams.rack.aware.assignment.tags
	StreamsMigrationPolicy               string   // streams.migration.policy
	ConsumerMigrationPolicy              string   // group.consumer.migration.policy
	InitialRebalanceDelayMs              int32    // group.initial.rebalance.delay.ms
	MinSessionTimeoutMs                  int32    // group.min.session.timeout.ms
	MaxSessionTimeoutMs                  int32    // group.max.session.timeout.ms
	MaxSize                              int32    // group.max.size
	ConsumerSessionTimeoutMs             int32    // consumer.session.timeout.ms
	ConsumerHeartbeatIntervalMs          int32    // consumer.heartbeat.interval.ms
	ConsumerAssignmentIntervalMs         int32    // consumer.assignment.interval.ms

	// StreamsAssignorCandidate and StreamsAssignorCandidatePercent are
	// streams.assignor.candidate.name and streams.assignor.candidate.percent.
	StreamsAssignorCandidate        string
	StreamsAssignorCandidatePercent int64
}

// Override sets some per-group keys for the groups whose id matches Match,
// a glob where * matches any run of characters and ? one character.
type Override struct {
	Match  string
	Values map[string]any // parsed values by key name
	index  int            // position in the file, for ties
}

// Groups resolves per-group configuration: Kafka 4.4 defaults, then
// groups.defaults, then every matching override from least to most
// specific, so for each key the most specific matching glob that sets it
// wins. Specificity: an exact id beats any glob; then more literal
// characters; then fewer '*'; then the later entry in the file.
type Groups struct {
	defaults  map[string]any    // parsed groups.defaults.* values
	sources   map[string]string // where each defaults value came from
	overrides []Override
}

// Setting is one key of a group's effective configuration and where its
// value came from.
type Setting struct {
	Key    string `json:"key"`
	Value  any    `json:"value"`
	Source string `json:"source"` // "default", "groups.defaults (file|env|flag)", `override "glob"`
}

// For returns the effective configuration of group id.
func (g *Groups) For(id string) Group {
	return groupOf(g.Explain(id))
}

// groupOf is the Group holding settings.
func groupOf(settings []Setting) Group {
	var out Group
	for _, s := range settings {
		groupKeys[groupKeyIndex[s.Key]].field.set(&out, s.Value)
	}
	return out
}

// Explain returns the effective configuration of group id, key by key in
// name order, with the source of each value.
func (g *Groups) Explain(id string) []Setting {
	vals := make(map[string]Setting, len(groupKeys))
	for _, k := range groupKeys {
		vals[k.name] = Setting{Key: k.name, Value: k.def, Source: "default"}
		if v, ok := g.defaults[k.name]; ok {
			vals[k.name] = Setting{Key: k.name, Value: v, Source: "groups.defaults (" + g.sources[k.name] + ")"}
		}
	}
	for _, o := range g.matching(id) {
		for name, v := range o.Values {
			vals[name] = Setting{Key: name, Value: v, Source: fmt.Sprintf("override %q", o.Match)}
		}
	}
	out := make([]Setting, 0, len(vals))
	for _, s := range vals {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// matching returns the overrides matching id, least specific first.
func (g *Groups) matching(id string) []Override {
	var out []Override
	for _, o := range g.overrides {
		if globMatch(o.Match, id) {
			out = append(out, o)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return lessSpecific(out[i], out[j]) })
	return out
}

func lessSpecific(a, b Override) bool {
	ae, be := !strings.ContainsAny(a.Match, "*?"), !strings.ContainsAny(b.Match, "*?")
	if ae != be {
		return be
	}
	al, bl := literals(a.Match), literals(b.Match)
	if al != bl {
		return al < bl
	}
	as, bs := strings.Count(a.Match, "*"), strings.Count(b.Match, "*")
	if as != bs {
		return as > bs
	}
	return a.index < b.index
}

func literals(p string) int { return len(p) - strings.Count(p, "*") - strings.Count(p, "?") }

// globMatch reports whether s matches pattern p (* any run, ? one byte).
func globMatch(p, s string) bool {
	star, match := -1, 0
	i, j := 0, 0
	for j < len(s) {
		switch {
		case i < len(p) && (p[i] == '?' || p[i] == s[j]):
			i++
			j++
		case i < len(p) && p[i] == '*':
			star, match = i, j
			i++
		case star >= 0:
			i, match = star+1, match+1
			j = match
		default:
			return false
		}
	}
	for i < len(p) && p[i] == '*' {
		i++
	}
	return i == len(p)
}

// checkGroup validates cross-key rules of one effective configuration.
func checkGroup(where string, g Group) error {
	if g.StreamsHeartbeatIntervalMs >= g.StreamsSessionTimeoutMs {
		return fmt.Errorf("config: %s: streams.heartbeat.interval.ms = %d must be below streams.session.timeout.ms = %d", where, g.StreamsHeartbeatIntervalMs, g.StreamsSessionTimeoutMs)
	}
	if v := g.StreamsUnreleasedHeartbeatIntervalMs; v != 0 && v < core.MinUnreleasedHeartbeatIntervalMs {
		return fmt.Errorf("config: %s: streams.unreleased.heartbeat.interval.ms = %d must be 0 (off) or at least %d", where, v, core.MinUnreleasedHeartbeatIntervalMs)
	}
	if v := g.StreamsRebalanceHeartbeatIntervalMs; v != 0 && v < core.MinRebalanceHeartbeatIntervalMs {
		return fmt.Errorf("config: %s: streams.rebalance.heartbeat.interval.ms = %d must be 0 (off) or at least %d", where, v, core.MinRebalanceHeartbeatIntervalMs)
	}
	if g.ConsumerHeartbeatIntervalMs >= g.ConsumerSessionTimeoutMs {
		return fmt.Errorf("config: %s: consumer.heartbeat.interval.ms = %d must be below consumer.session.timeout.ms = %d", where, g.ConsumerHeartbeatIntervalMs, g.ConsumerSessionTimeoutMs)
	}
	seen := map[string]bool{}
	for _, tag := range g.StreamsRackAwareAssignmentTags {
		if seen[tag] {
			return fmt.Errorf("config: %s: streams.rack.aware.assignment.tags = %q: duplicate tag key %q", where, strings.Join(g.StreamsRackAwareAssignmentTags, ","), tag)
		}
		seen[tag] = true
	}
	if g.MinSessionTimeoutMs > g.MaxSessionTimeoutMs {
		return fmt.Errorf("config: %s: group.min.session.timeout.ms = %d exceeds group.max.session.timeout.ms = %d", where, g.MinSessionTimeoutMs, g.MaxSessionTimeoutMs)
	}
	return nil
}

// Defaults returns the configuration of a group that no override glob
// matches: key defaults beneath groups.defaults.
func (g *Groups) Defaults() Group {
	var out Group
	for _, k := range groupKeys {
		v := k.def
		if d, ok := g.defaults[k.name]; ok {
			v = d
		}
		k.field.set(&out, v)
	}
	return out
}

// sessionKeys are the keys that bound a member's session timeout: the
// new protocols' session timeouts and the classic protocol's minimum.
var sessionKeys = []string{"group.min.session.timeout.ms", "streams.session.timeout.ms", "consumer.session.timeout.ms"}

// MinSessionTimeout returns the smallest session timeout a member of any
// group may have under groups.defaults and every override (group configs
// altered at run time are not included).
func (g *Groups) MinSessionTimeout() time.Duration {
	d := g.Defaults()
	least := min(d.MinSessionTimeoutMs, d.StreamsSessionTimeoutMs, d.ConsumerSessionTimeoutMs)
	for _, o := range g.overrides {
		for _, k := range sessionKeys {
			if v, ok := o.Values[k].(int64); ok && v < int64(least) {
				least = int32(v)
			}
		}
	}
	return time.Duration(least) * time.Millisecond
}

// ThrottleCap is the longest throttle a group over its quota gets:
// MaxThrottle, at most a quarter of Groups' smallest session timeout, so
// a member is never expired for waiting out a throttle.
func (c *Config) ThrottleCap() time.Duration {
	if c.Groups == nil {
		return c.MaxThrottle
	}
	return max(min(c.MaxThrottle, c.Groups.MinSessionTimeout()/4), time.Millisecond)
}
