package core

import (
	"maps"
	"regexp"
	"slices"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Regular-expression subscriptions (KIP-848 SubscribedTopicRegex), as
// Kafka 4.4's GroupMetadataManager.maybeUpdateRegularExpressions,
// refreshRegularExpressions and handleRegularExpressionsResult: a
// member's subscribed topics are its topic names plus the topics its
// regex resolves to; the coordinator resolves every regex its members use
// against the topic image, keeps only the topics the heartbeat's principal
// may DESCRIBE, and persists each resolution as a record of type 16. A
// resolution that changes a regex's topics bumps the group epoch.
//
// Kafka resolves on an executor and writes the result as a separate
// operation; coordhost resolves at the end of the heartbeat that asks for
// it, after its response is built, so the response is the one Kafka gives
// before the resolution lands, and the resolution's records follow the
// heartbeat's in the same batch.

// regexRefreshMinIntervalMs is Kafka's REGEX_BATCH_REFRESH_MIN_INTERVAL_MS:
// a group's regexes are not resolved again within this time of their last
// resolution (unless the group had none).
const regexRefreshMinIntervalMs = 10_000

// regexRefreshIntervalMs is Kafka's default
// group.consumer.regex.refresh.interval.ms: a resolution older than this
// is redone even if no topic changed.
const regexRefreshIntervalMs = 10 * 60 * 1000

// resolvedRegex is one resolved regular expression (record type 16).
type resolvedRegex struct {
	topics    []string // sorted
	version   int64    // the topic image version it was resolved against
	timestamp int64
}

// compileTopicRegex compiles a subscription regex the way Kafka applies
// it: RE2 syntax (Kafka uses RE2J), matched against the whole topic name.
func compileTopicRegex(s string) (*regexp.Regexp, error) {
	return regexp.Compile("^(?:" + s + ")$")
}

// checkTopicRegex is Kafka's throwIfRegularExpressionIsInvalid.
func checkTopicRegex(s string) *kafkaError {
	if _, err := regexp.Compile(s); err != nil {
		return errf(kerr.InvalidRegularExpression, "SubscribedTopicRegex `%s` is not a valid regular expression: %v.", s, err)
	}
	return nil
}

func nonEmpty(s *string) bool { return s != nil && *s != "" }

// usedRegexes counts the members using each non-empty regex.
func (g *consumerGroup) usedRegexes() map[string]int {
	out := map[string]int{}
	for _, m := range g.members {
		if nonEmpty(m.regex) {
			out[*m.regex]++
		}
	}
	return out
}

// memberTopics is the member's subscription: its topic names and the
// topics its regex resolved to, sorted and unique.
func (g *consumerGroup) memberTopics(m *consumerMember) []string {
	if !nonEmpty(m.regex) {
		return m.topics
	}
	r, ok := g.regexes[*m.regex]
	if !ok || len(r.topics) == 0 {
		return m.topics
	}
	return normalizeTopics(append(slices.Clone(m.topics), r.topics...))
}

// updateConsumerRegex follows a member's regex change in one heartbeat
// (before: the member before it, or a fresh member on a join): a new regex
// no other member uses must compile; a regex no member uses any more is
// tombstoned. It reports whether the group's regexes must be resolved
// after the heartbeat.
func (c *Coordinator) updateConsumerRegex(g *consumerGroup, before *consumerMember, hadRegexes bool) (bool, *kafkaError) {
	after := g.members[before.id]
	if after == nil {
		return false, nil
	}
	used := g.usedRegexes()
	newRegex := false
	if !ptrEq(before.regex, after.regex) {
		if nonEmpty(after.regex) && used[*after.regex] == 1 {
			if e := checkTopicRegex(*after.regex); e != nil {
				return false, e
			}
			_, resolved := g.regexes[*after.regex]
			newRegex = !resolved
		}
		if nonEmpty(before.regex) && used[*before.regex] == 0 {
			if _, ok := g.regexes[*before.regex]; ok {
				c.write(records.Record{Key: records.ConsumerGroupRegularExpressionKey{GroupID: g.id, RegularExpression: *before.regex}})
			}
		}
	}
	if len(used) == 0 {
		return false, nil
	}
	// Kafka's conditions: not within the minimum interval of the last
	// resolution, unless the member brought the group its first regex;
	// then an unresolved regex, a topic image with new topics since the
	// last resolution, or a resolution older than the refresh interval.
	if (!newRegex || hadRegexes) && c.now <= g.regexRefreshedMs+regexRefreshMinIntervalMs {
		return false, nil
	}
	need := newRegex || g.regexTopicsChanged || c.now-g.regexRefreshedMs >= regexRefreshIntervalMs
	for r := range used {
		if _, ok := g.regexes[r]; !ok {
			need = true
		}
	}
	return need, nil
}

// resolveConsumerRegexes resolves every regex the group's members use
// against the topic image, keeping the topics allowed says the
// heartbeat's principal may DESCRIBE (nil: all), writes a record for each,
// and bumps the group epoch if any regex's topics changed. A matching
// topic refused by allowed keeps the group due for another resolution:
// the host's view of the principal's rights may lag behind the topic
// image (a topic created a moment ago), and the next resolution asks
// again.
func (c *Coordinator) resolveConsumerRegexes(g *consumerGroup, allowed func(string) bool) {
	names := slices.Sorted(maps.Keys(g.usedRegexes()))
	topics := slices.Sorted(maps.Keys(c.topics.byName))
	changed, refused := false, false
	for _, r := range names {
		re, err := compileTopicRegex(r)
		matched := []string{}
		if err == nil { // checked when it came in; a replayed bad one resolves to nothing
			for _, t := range topics {
				switch {
				case !re.MatchString(t):
				case allowed != nil && !allowed(t):
					refused = true
				default:
					matched = append(matched, t)
				}
			}
		}
		old, had := g.regexes[r]
		changed = changed || !had || !slices.Equal(old.topics, matched)
		c.write(records.Record{Key: records.ConsumerGroupRegularExpressionKey{GroupID: g.id, RegularExpression: r},
			Value: records.ConsumerGroupRegularExpressionValue{Topics: matched, Version: c.topics.version, Timestamp: c.now}})
	}
	c.emitGroup(EventRegexResolved, g.id, "", g.groupEpoch)
	if g.regexTopicsChanged != refused {
		was := g.regexTopicsChanged
		g.regexTopicsChanged = refused
		c.onUndo(func() { g.regexTopicsChanged = was })
	}
	if !changed {
		return
	}
	c.write(records.Record{Key: records.ConsumerGroupMetadataKey{GroupID: g.id}, Value: records.ConsumerGroupMetadataValue{
		Epoch: g.groupEpoch + 1, MetadataHash: c.groupMetadataHash(g.subscribedTopics()), CreationTimeMs: g.creationTimeMs}})
	c.emit(Event{Kind: EventEpochBumped, Group: g.id, Reason: ReasonMetadataChanged, Epoch: g.groupEpoch})
}

// dropUnusedConsumerRegex tombstones the regex of a member that left if
// no other member uses it.
func (c *Coordinator) dropUnusedConsumerRegex(g *consumerGroup, m *consumerMember) {
	if !nonEmpty(m.regex) {
		return
	}
	if _, ok := g.regexes[*m.regex]; ok && g.usedRegexes()[*m.regex] == 0 {
		c.write(records.Record{Key: records.ConsumerGroupRegularExpressionKey{GroupID: g.id, RegularExpression: *m.regex}})
	}
}

// setResolvedRegex stores (or with nil deletes) a resolution, undoably,
// and keeps the time of the group's last resolution.
func (c *Coordinator) setResolvedRegex(g *consumerGroup, regex string, r *resolvedRegex) {
	old, had := g.regexes[regex]
	oldAt := g.regexRefreshedMs
	if r == nil {
		delete(g.regexes, regex)
	} else {
		g.regexes[regex] = *r
		g.regexRefreshedMs = r.timestamp
	}
	c.onUndo(func() {
		if had {
			g.regexes[regex] = old
		} else {
			delete(g.regexes, regex)
		}
		g.regexRefreshedMs = oldAt
	})
}

func applyConsumerGroupRegularExpression(c *Coordinator, rec records.Record) error {
	k := rec.Key.(records.ConsumerGroupRegularExpressionKey)
	g, err := c.consumerGroupForRecord(k.GroupID, rec.Value != nil)
	if err != nil || g == nil {
		return err
	}
	if rec.Value == nil {
		c.setResolvedRegex(g, k.RegularExpression, nil)
		return nil
	}
	v := rec.Value.(records.ConsumerGroupRegularExpressionValue)
	c.setResolvedRegex(g, k.RegularExpression, &resolvedRegex{topics: normalizeTopics(v.Topics), version: v.Version, timestamp: v.Timestamp})
	return nil
}
