package config

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
)

// Per-group configuration set at runtime. Kafka clients alter a GROUP
// resource with IncrementalAlterConfigs or AlterConfigs; the host keeps each
// group's runtime values as strings (as Kafka keeps them in its metadata
// log) and resolves them here, on top of the file's layers:
//
//	Kafka defaults < groups.defaults < groups.overrides globs < runtime values

// DynamicSource is the Setting.Source of a value set at runtime.
const DynamicSource = "dynamic"

// KeyInfo describes one per-group key for the Kafka config APIs.
type KeyInfo struct {
	Name string
	// Type is Kafka's config type name: INT, LONG, STRING or LIST.
	Type string
	Doc  string
	// Kafka is true for Kafka 4.4 GroupConfig keys, false for coordhost's
	// own per-group keys (Kafka broker-wide settings coordhost applies per
	// group, and coordhost extensions).
	Kafka bool
}

// unservedKafkaKeys are Kafka 4.4 group configs of group types or features
// coordhost does not serve (by key, or by prefix when ending in '.').
var unservedKafkaKeys = []struct{ key, why string }{
	{"consumer.assignor.offload.enable", "consumer-group assignors run inline in the heartbeat (KIP-1263's offload is not implemented)"},
	{"share.", "it configures share groups (KIP-932), which coordhost does not serve"},
	{"errors.deadletterqueue.", "it configures share-group dead-letter queues (KIP-1191), which coordhost does not serve"},
	{"streams.assignor.offload.enable", "coordhost always runs assignors off the event loop, in its worker pool"},
}

// GroupKeys describes every per-group key, in name order.
func GroupKeys() []KeyInfo {
	out := make([]KeyInfo, 0, len(groupKeys))
	for _, k := range groupKeys {
		out = append(out, k.info())
	}
	sortInfos(out)
	return out
}

// GroupKey describes the per-group key name.
func GroupKey(name string) (KeyInfo, bool) {
	k, ok := groupKey(name)
	if !ok {
		return KeyInfo{}, false
	}
	return k.info(), true
}

func (k key) info() KeyInfo {
	t := "STRING"
	switch k.kind {
	case kInt:
		t = "INT"
		if k.max > math.MaxInt32 {
			t = "LONG"
		}
	case kList:
		t = "LIST"
	case kBool:
		t = "BOOLEAN"
	}
	return KeyInfo{Name: k.name, Type: t, Doc: k.doc, Kafka: k.kafka}
}

func sortInfos(xs []KeyInfo) { sort.Slice(xs, func(i, j int) bool { return xs[i].Name < xs[j].Name }) }

// ParseDynamic checks one runtime value of a per-group key and returns it
// in canonical form. Unknown keys, Kafka group configs coordhost does not
// serve, keys only the config file sets, unparsable values, values outside
// the key's range and values outside Kafka's broker-level bounds are errors
// naming the key and value.
func ParseDynamic(name, raw string) (string, error) {
	k, ok := groupKey(name)
	if !ok {
		for _, u := range unservedKafkaKeys {
			if name == u.key || (strings.HasSuffix(u.key, ".") && strings.HasPrefix(name, u.key)) {
				return "", fmt.Errorf("group config %s is not supported by coordhost: %s", name, u.why)
			}
		}
		return "", fmt.Errorf("unknown group config name: %s", name)
	}
	if k.fileOnly {
		return "", fmt.Errorf("group config %s can be set only in the config file (groups.defaults, groups.overrides)", name)
	}
	v, err := k.parse(raw)
	if err != nil {
		return "", fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "config: "))
	}
	if b := k.runtime; b != nil {
		n := v.(int64)
		switch {
		case n < b.min && b.max == math.MaxInt64:
			return "", fmt.Errorf("%s = %d: must be greater than or equal to %d (Kafka's %s)", name, n, b.min, b.broker)
		case n > b.max && b.min == math.MinInt64:
			return "", fmt.Errorf("%s = %d: must be less than or equal to %d (Kafka's %s)", name, n, b.max, b.broker)
		case n < b.min || n > b.max:
			return "", fmt.Errorf("%s = %d: must be in the range %d to %d inclusive (Kafka's %s)", name, n, b.min, b.max, b.broker)
		}
	}
	if s, ok := v.(string); ok && s == "" {
		return "", fmt.Errorf("%s: must not be empty", name)
	}
	return FormatValue(v), nil
}

// FormatValue renders a setting's value as the Kafka config APIs show it.
func FormatValue(v any) string {
	if l, ok := v.([]string); ok {
		return strings.Join(l, ",")
	}
	return fmt.Sprint(v)
}

// ExplainWith is Explain with the group's runtime values (dyn, by key, as
// ParseDynamic returned them) on top, their source DynamicSource. A value
// that no longer parses is left out (CheckDynamic reports it).
func (g *Groups) ExplainWith(id string, dyn map[string]string) []Setting {
	out := g.Explain(id)
	if len(dyn) == 0 {
		return out
	}
	for i, s := range out {
		raw, ok := dyn[s.Key]
		if !ok {
			continue
		}
		k, _ := groupKey(s.Key)
		if v, err := k.parse(raw); err == nil {
			out[i] = Setting{Key: s.Key, Value: v, Source: DynamicSource}
		}
	}
	return out
}

// ForWith returns the effective configuration of group id with its
// runtime values on top.
func (g *Groups) ForWith(id string, dyn map[string]string) Group {
	return groupOf(g.ExplainWith(id, dyn))
}

// CheckDynamic validates the complete runtime set of group id: every value
// (ParseDynamic), then the cross-key rules on the effective configuration
// it yields with the file's layers beneath.
func (g *Groups) CheckDynamic(id string, dyn map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(dyn)) {
		if _, err := ParseDynamic(k, dyn[k]); err != nil {
			return err
		}
	}
	if err := checkGroup("group "+id, g.ForWith(id, dyn)); err != nil {
		return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "config: "))
	}
	return nil
}
