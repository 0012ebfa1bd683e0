package core

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Topology configuration (Kafka's streams/topics/InternalTopicManager):
// resolve repartition partition counts, enforce co-partitioning, size the
// changelogs, and find internal topics to create. Problems with topics are
// statuses (the group is NotReady); structural problems are the
// STREAMS_INVALID_TOPOLOGY error.

// Heartbeat status codes (StreamsGroupHeartbeatResponse.Status).
const (
	statusStaleTopology        int8 = 0
	statusMissingSourceTopics  int8 = 1
	statusIncorrectlyPartition int8 = 2
	statusMissingInternal      int8 = 3
	statusShutdownApplication  int8 = 4
	statusAssignmentDelayed    int8 = 5
	statusMissingClientTags    int8 = 6 // v1+ only
)

type configuredSubtopology struct {
	id                 string
	numTasks           int32
	sourceTopics       []string
	repartitionSources map[string]int32
	sinks              []string
	changelogs         map[string]int32
}

// configuredTopology is the soft, recomputed view of a stored topology
// against the current topic metadata.
type configuredTopology struct {
	epoch         int32
	subtopologies []configuredSubtopology // sorted by id
	statusCode    int8                    // -1: ready
	statusDetail  string
	invalid       string // non-empty: STREAMS_INVALID_TOPOLOGY message
	toCreate      []TopicToCreate
}

func (t *configuredTopology) ready() bool {
	return t != nil && t.invalid == "" && t.statusCode < 0
}

func (t *configuredTopology) subtopology(id string) *configuredSubtopology {
	i := sort.Search(len(t.subtopologies), func(i int) bool { return t.subtopologies[i].id >= id })
	if i < len(t.subtopologies) && t.subtopologies[i].id == id {
		return &t.subtopologies[i]
	}
	return nil
}

// configureTopology validates topo against the metadata image, following
// Kafka 4.4's InternalTopicManager.configureTopics step by step (checked
// against it by TestTopologyParityWithKafka).
func (c *Coordinator) configureTopology(group string, topo *records.StreamsGroupTopologyValue) *configuredTopology {
	g, _ := c.groups[group].(*streamsGroup)
	if g != nil && g.configMemo.of == topo && g.configMemo.topics == c.topics.gen {
		return g.configMemo.ct
	}
	ct := c.configureTopologyNow(group, topo)
	if g != nil {
		g.configMemo = configuredMemo{of: topo, topics: c.topics.gen, ct: ct}
	}
	return ct
}

// configuredMemo is a group's last configured topology and what it was
// computed from: the stored topology value and the topic image. The
// configuration is a pure function of those (and the group id), so a
// heartbeat that needs it again — the one after the group's first, which
// drops the first one's soft state as Kafka does, or after a rollback —
// takes it from here instead of recomputing it: tens of milliseconds of
// one step for a topology near streams.max.topology.size.
type configuredMemo struct {
	of     *records.StreamsGroupTopologyValue
	topics uint64 // topicImage.gen
	ct     *configuredTopology
}

// configureTopologyNow is configureTopology without the memo.
func (c *Coordinator) configureTopologyNow(group string, topo *records.StreamsGroupTopologyValue) *configuredTopology {
	ct := &configuredTopology{epoch: topo.Epoch, statusCode: -1}
	subs := sortedSubtopologies(topo.Subtopologies)
	var missing []string
	for _, s := range subs {
		for _, t := range s.SourceTopics {
			if _, ok := c.topics.byName[t]; !ok {
				missing = append(missing, t)
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		ct.statusCode = statusMissingSourceTopics
		ct.statusDetail = "Source topics " + summarizeTopics(dedup(missing)) + " are missing."
		return ct
	}
	tc := &topicCounts{c: c, decided: map[string]int32{}}
	if err := tc.decide(subs); err != nil {
		if err.invalid {
			ct.invalid = err.msg
		} else {
			ct.statusCode, ct.statusDetail = statusIncorrectlyPartition, err.msg
		}
		return ct
	}
	c.buildSubtopologies(ct, subs, tc)
	c.checkInternalTopics(ct, group, topo, subs)
	return ct
}

// sortedSubtopologies is a copy of subs in subtopology id order (stable).
// It sorts indices and copies each subtopology once: sorting the structs
// themselves moved them O(n log² n) times, tens of milliseconds for a
// topology near streams.max.topology.size.
func sortedSubtopologies(subs []records.Subtopology) []records.Subtopology {
	order := make([]int32, len(subs))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortStableFunc(order, func(a, b int32) int { return strings.Compare(subs[a].SubtopologyID, subs[b].SubtopologyID) })
	out := make([]records.Subtopology, len(subs))
	for i, j := range order {
		out[i] = subs[j]
	}
	return out
}

// topicCounts resolves partition counts: a topic that exists counts as it
// is; otherwise the count decided so far (Kafka's getPartitionCount).
type topicCounts struct {
	c       *Coordinator
	decided map[string]int32
}

func (tc *topicCounts) count(name string) (int32, bool) {
	if t, ok := tc.c.topics.byName[name]; ok {
		return t.Partitions, true
	}
	n, ok := tc.decided[name]
	return n, ok
}

// configError is a topology problem: invalid (STREAMS_INVALID_TOPOLOGY) or
// a partitioning status (INCORRECTLY_PARTITIONED_TOPICS).
type configError struct {
	invalid bool
	msg     string
}

// decide runs RepartitionTopics, the co-partitioning enforcer and
// ChangelogTopics, in Kafka's order.
func (tc *topicCounts) decide(subs []records.Subtopology) *configError {
	counts, err := tc.repartitionCounts(subs)
	if err != nil {
		return err
	}
	for k, v := range counts {
		tc.decided[k] = v
	}
	if err := tc.enforceCopartitioning(subs); err != nil {
		return err
	}
	for _, s := range subs {
		max, ok := tc.inputMax(s)
		if !ok {
			return &configError{invalid: true, msg: "No source topics found for subtopology " + s.SubtopologyID}
		}
		for _, t := range s.StateChangelogTopics {
			tc.decided[t.Name] = max
		}
	}
	return nil
}

// inputMax is the max partition count over a subtopology's source and
// repartition-source topics whose count is known.
func (tc *topicCounts) inputMax(s records.Subtopology) (int32, bool) {
	var max int32
	found := false
	for _, t := range s.SourceTopics {
		if n, ok := tc.count(t); ok && (!found || n > max) {
			max, found = n, true
		}
	}
	for _, t := range s.RepartitionSourceTopics {
		if n, ok := tc.count(t.Name); ok && (!found || n > max) {
			max, found = n, true
		}
	}
	return max, found
}

// repartitionCounts is RepartitionTopics.setup: fixed counts first, then
// every sink not yet counted takes the max of its subtopology's known
// inputs, pass after pass, until nothing is missing; a pass without
// progress is a loop.
func (tc *topicCounts) repartitionCounts(subs []records.Subtopology) (map[string]int32, *configError) {
	counts := map[string]int32{}
	for _, s := range subs {
		for _, t := range s.RepartitionSourceTopics {
			if t.Partitions != 0 {
				counts[t.Name] = t.Partitions
			}
		}
	}
	for {
		needed, progress := false, false
		for _, s := range subs {
			for _, sink := range s.RepartitionSinkTopics {
				if _, ok := counts[sink]; ok {
					continue
				}
				n, ok := sinkCount(tc.c, counts, s)
				if !ok {
					needed = true
					continue
				}
				counts[sink] = n
				progress = true
			}
		}
		if !progress && needed {
			return nil, &configError{invalid: true, msg: "Failed to compute number of partitions for all repartition topics. There may be loops in the topology that cannot be resolved."}
		}
		if !needed {
			break
		}
	}
	for _, s := range subs {
		for _, t := range s.RepartitionSourceTopics {
			if _, ok := counts[t.Name]; !ok {
				return nil, &configError{invalid: true, msg: "Failed to compute number of partitions for all repartition topics, because a repartition source topic is never used as a sink topic."}
			}
		}
	}
	return counts, nil
}

// sinkCount is RepartitionTopics.computePartitionCount: the max over the
// subtopology's repartition sources counted so far and its external
// sources that exist.
func sinkCount(c *Coordinator, counts map[string]int32, s records.Subtopology) (int32, bool) {
	var max int32
	found := false
	for _, t := range s.RepartitionSourceTopics {
		if n, ok := counts[t.Name]; ok && (!found || n > max) {
			max, found = n, true
		}
	}
	for _, t := range s.SourceTopics {
		if md, ok := c.topics.byName[t]; ok && (!found || md.Partitions > max) {
			max, found = md.Partitions, true
		}
	}
	return max, found
}

// enforceCopartitioning is Kafka's CopartitionedTopicsEnforcer over every
// copartition group. Fixed and flexible repartition topics are those of
// the whole topology (partition count set or 0).
func (tc *topicCounts) enforceCopartitioning(subs []records.Subtopology) *configError {
	fixed, flexible := map[string]bool{}, map[string]bool{}
	for _, s := range subs {
		for _, t := range s.RepartitionSourceTopics {
			if t.Partitions != 0 {
				fixed[t.Name] = true
			} else {
				flexible[t.Name] = true
			}
		}
	}
	for _, s := range subs {
		for _, cg := range s.CopartitionGroups {
			group := map[string]bool{}
			for _, i := range cg.SourceTopics {
				if int(i) < 0 || int(i) >= len(s.SourceTopics) {
					return &configError{invalid: true, msg: fmt.Sprintf("Copartition group of subtopology %s has an invalid source topic index %d.", s.SubtopologyID, i)}
				}
				group[s.SourceTopics[i]] = true
			}
			for _, i := range cg.RepartitionSourceTopics {
				if int(i) < 0 || int(i) >= len(s.RepartitionSourceTopics) {
					return &configError{invalid: true, msg: fmt.Sprintf("Copartition group of subtopology %s has an invalid repartition topic index %d.", s.SubtopologyID, i)}
				}
				group[s.RepartitionSourceTopics[i].Name] = true
			}
			if err := tc.enforceGroup(group, fixed, flexible); err != nil {
				return err
			}
		}
	}
	return nil
}

func (tc *topicCounts) enforceGroup(group, fixed, flexible map[string]bool) *configError {
	if len(group) == 0 {
		return nil
	}
	rep, ext := map[string]int32{}, map[string]int32{}
	for t := range group {
		n, _ := tc.count(t)
		if fixed[t] || flexible[t] {
			rep[t] = n
		} else {
			ext[t] = n
		}
	}
	var want int32
	switch {
	case len(ext) == 0 && len(fixed) > 0:
		// All fixed repartition topics of the topology must agree.
		first := true
		for _, t := range sortedKeys(fixed) {
			n, _ := tc.count(t)
			if first {
				want, first = n, false
			} else if n != want {
				return &configError{msg: "Following topics do not have the same number of partitions: [" + fmtCountMap(rep) + "]"}
			}
		}
	case len(ext) == 0:
		for _, n := range rep {
			if n > want {
				want = n
			}
		}
		if want == 0 {
			return &configError{invalid: true, msg: "All topics in the copartition group had undefined partition number: [" + strings.Join(sortedKeys(boolSet(rep)), ", ") + "]"}
		}
	default:
		first := true
		for _, t := range sortedKeys(boolSet(ext)) {
			if first {
				want, first = ext[t], false
			} else if ext[t] != want {
				return &configError{msg: "Following topics do not have the same number of partitions: [" + fmtCountMap(ext) + "]"}
			}
		}
	}
	for _, t := range sortedKeys(boolSet(rep)) {
		tc.decided[t] = want
		if fixed[t] && rep[t] != want {
			return &configError{msg: fmt.Sprintf("Number of partitions [%d] of repartition topic [%s] doesn't match number of partitions [%d] of the source topic.", rep[t], t, want)}
		}
	}
	return nil
}

func boolSet(m map[string]int32) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// fmtCountMap renders counts as Java's TreeMap.toString does.
func fmtCountMap(m map[string]int32) string {
	keys := sortedKeys(boolSet(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// summarizeTopics lists topic names for a status detail.
func summarizeTopics(names []string) string {
	if len(names) == 0 {
		return "<none>"
	}
	return strings.Join(names, ", ")
}

// buildSubtopologies builds the configured subtopologies: tasks = max over
// inputs (existing topics as they are), internal topics with their decided
// (or fixed) counts.
func (c *Coordinator) buildSubtopologies(ct *configuredTopology, subs []records.Subtopology, tc *topicCounts) {
	ct.subtopologies = make([]configuredSubtopology, 0, len(subs))
	for _, s := range subs {
		// The maps are made only for a subtopology that has such topics
		// (their readers take a nil map as empty).
		cs := configuredSubtopology{id: s.SubtopologyID, sourceTopics: s.SourceTopics, sinks: s.RepartitionSinkTopics}
		if len(s.RepartitionSourceTopics) > 0 {
			cs.repartitionSources = make(map[string]int32, len(s.RepartitionSourceTopics))
		}
		if len(s.StateChangelogTopics) > 0 {
			cs.changelogs = make(map[string]int32, len(s.StateChangelogTopics))
		}
		cs.numTasks, _ = tc.inputMax(s)
		for _, t := range s.RepartitionSourceTopics {
			n := t.Partitions
			if n == 0 {
				n = tc.decided[t.Name]
			}
			cs.repartitionSources[t.Name] = n
		}
		for _, t := range s.StateChangelogTopics {
			cs.changelogs[t.Name] = tc.decided[t.Name]
		}
		ct.subtopologies = append(ct.subtopologies, cs)
	}
}

// checkInternalTopics lists internal topics to create; an existing one with
// another partition count is INCORRECTLY_PARTITIONED_TOPICS.
func (c *Coordinator) checkInternalTopics(ct *configuredTopology, group string, topo *records.StreamsGroupTopologyValue, subs []records.Subtopology) {
	want := map[string]TopicToCreate{}
	for i, s := range subs {
		cs := ct.subtopologies[i]
		add := func(t records.TopicInfo, n int32) {
			rf := t.ReplicationFactor
			if rf == 0 {
				rf = -1
			}
			want[t.Name] = TopicToCreate{Group: group, Name: t.Name, Partitions: n, ReplicationFactor: rf, Configs: t.TopicConfigs}
		}
		for _, t := range s.RepartitionSourceTopics {
			add(t, cs.repartitionSources[t.Name])
		}
		for _, t := range s.StateChangelogTopics {
			add(t, cs.changelogs[t.Name])
		}
	}
	for _, name := range sortedKeys(boolSet(topicNameSet(want))) {
		md, exists := c.topics.byName[name]
		if !exists {
			continue
		}
		if md.Partitions != want[name].Partitions {
			ct.statusCode = statusIncorrectlyPartition
			ct.statusDetail = fmt.Sprintf("Existing topic %s has different number of partitions: expected %d, found %d", name, want[name].Partitions, md.Partitions)
			ct.subtopologies, ct.toCreate = nil, nil
			return
		}
		delete(want, name)
	}
	for _, name := range sortedKeys(boolSet(topicNameSet(want))) {
		ct.toCreate = append(ct.toCreate, want[name])
	}
	if len(ct.toCreate) > 0 {
		names := make([]string, len(ct.toCreate))
		for i, t := range ct.toCreate {
			names[i] = t.Name
		}
		ct.statusCode = statusMissingInternal
		ct.statusDetail = "Internal topics are missing: " + summarizeTopics(names)
	}
}

func topicNameSet(m map[string]TopicToCreate) map[string]int32 {
	out := make(map[string]int32, len(m))
	for k, v := range m {
		out[k] = v.Partitions
	}
	return out
}

func dedup(sorted []string) []string {
	out := sorted[:0]
	for i, s := range sorted {
		if i == 0 || s != sorted[i-1] {
			out = append(out, s)
		}
	}
	return out
}

// topologyFromRequest converts a heartbeat's topology to the record form,
// with non-nil lists so structural comparison is exact.
func topologyFromRequest(t *kmsg.StreamsGroupHeartbeatRequestTopology) records.StreamsGroupTopologyValue {
	v := records.StreamsGroupTopologyValue{Epoch: t.Epoch, Subtopologies: make([]records.Subtopology, 0, len(t.Subtopologies))}
	for _, s := range t.Subtopologies {
		sub := records.Subtopology{
			SubtopologyID:         s.SubtopologyID,
			SourceTopics:          nonNil(s.SourceTopics),
			SourceTopicRegex:      nonNil(s.SourceTopicRegex),
			RepartitionSinkTopics: nonNil(s.RepartitionSinkTopics),
			CopartitionGroups:     make([]records.CopartitionGroup, 0, len(s.CopartitionGroups)),
		}
		sub.StateChangelogTopics = topicInfosFromRequest(s.StateChangelogTopics)
		sub.RepartitionSourceTopics = topicInfosFromRequest(s.RepartitionSourceTopics)
		for _, g := range s.CopartitionGroups {
			sub.CopartitionGroups = append(sub.CopartitionGroups, records.CopartitionGroup{
				SourceTopics: nonNil(g.SourceTopics), SourceTopicRegex: nonNil(g.SourceTopicRegex),
				RepartitionSourceTopics: nonNil(g.RepartitionSourceTopics)})
		}
		v.Subtopologies = append(v.Subtopologies, sub)
	}
	return v
}

func topicInfosFromRequest(ts []kmsg.TopicInfo) []records.TopicInfo {
	out := make([]records.TopicInfo, 0, len(ts))
	for _, t := range ts {
		ti := records.TopicInfo{Name: t.Topic, Partitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor, TopicConfigs: make([]records.KeyValue, 0, len(t.Configs))}
		for _, kv := range t.Configs {
			ti.TopicConfigs = append(ti.TopicConfigs, records.KeyValue{Key: kv.Key, Value: kv.Value})
		}
		out = append(out, ti)
	}
	return out
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
