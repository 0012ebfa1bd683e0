package core

import (
	"fmt"
	"sort"
	"strings"

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

// configureTopology validates topo against the metadata image.
func (c *Coordinator) configureTopology(group string, topo *StreamsGroupTopologyValue) *configuredTopology {
	ct := &configuredTopology{epoch: topo.Epoch, statusCode: -1}
	var missing []string
	for _, s := range topo.Subtopologies {
		for _, t := range s.SourceTopics {
			if _, ok := c.topics.byName[t]; !ok {
				missing = append(missing, t)
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		ct.statusCode = statusMissingSourceTopics
		ct.statusDetail = "Missing source topics: " + strings.Join(dedup(missing), ", ")
		return ct
	}
	counts, err := c.repartitionCounts(topo)
	if err != "" {
		ct.invalid = err
		return ct
	}
	if code, detail, bad := c.enforceCopartitioning(topo, counts); bad != "" {
		ct.invalid = bad
		return ct
	} else if code >= 0 {
		ct.statusCode, ct.statusDetail = code, detail
		return ct
	}
	c.buildSubtopologies(ct, topo, counts)
	c.checkInternalTopics(ct, group, topo, counts)
	return ct
}

// repartitionCounts resolves every repartition source topic's partition
// count: fixed counts first, then sinks take the max of their
// subtopology's inputs until nothing changes.
func (c *Coordinator) repartitionCounts(topo *StreamsGroupTopologyValue) (map[string]int32, string) {
	counts := map[string]int32{}
	for _, s := range topo.Subtopologies {
		if len(s.SourceTopics) == 0 && len(s.RepartitionSourceTopics) == 0 {
			return nil, "Subtopology does not contain any source topics"
		}
		for _, t := range s.RepartitionSourceTopics {
			if t.Partitions != 0 {
				counts[t.Name] = t.Partitions
			}
		}
	}
	written := map[string]bool{}
	for _, s := range topo.Subtopologies {
		for _, t := range s.RepartitionSinkTopics {
			written[t] = true
		}
	}
	for {
		progress := false
		for _, s := range topo.Subtopologies {
			max, known := c.inputMax(s, counts)
			if !known {
				continue
			}
			for _, sink := range s.RepartitionSinkTopics {
				if _, ok := counts[sink]; !ok {
					counts[sink] = max
					progress = true
				}
			}
		}
		if !progress {
			break
		}
	}
	for _, s := range topo.Subtopologies {
		for _, t := range s.RepartitionSourceTopics {
			if _, ok := counts[t.Name]; !ok {
				if !written[t.Name] {
					return nil, "Failed to compute number of partitions for all repartition topics, because a repartition source topic is never used as a sink topic."
				}
				return nil, "Failed to compute number of partitions for all repartition topics. There may be loops in the topology that cannot be resolved."
			}
		}
	}
	return counts, ""
}

// inputMax is the max partition count over a subtopology's inputs, and
// whether every input's count is known.
func (c *Coordinator) inputMax(s Subtopology, counts map[string]int32) (int32, bool) {
	var max int32
	for _, t := range s.SourceTopics {
		if n := c.topics.byName[t].Partitions; n > max {
			max = n
		}
	}
	for _, t := range s.RepartitionSourceTopics {
		n, ok := counts[t.Name]
		if !ok {
			return 0, false
		}
		if n > max {
			max = n
		}
	}
	return max, true
}

// enforceCopartitioning applies each copartition group; it returns a status
// code (or -1) with detail, or an invalid-topology message.
func (c *Coordinator) enforceCopartitioning(topo *StreamsGroupTopologyValue, counts map[string]int32) (int8, string, string) {
	for _, s := range topo.Subtopologies {
		for _, cg := range s.CopartitionGroups {
			var external []string
			var repart []TopicInfo
			for _, i := range cg.SourceTopics {
				if int(i) < 0 || int(i) >= len(s.SourceTopics) {
					return -1, "", fmt.Sprintf("Copartition group of subtopology %s has an invalid source topic index %d.", s.SubtopologyID, i)
				}
				external = append(external, s.SourceTopics[i])
			}
			for _, i := range cg.RepartitionSourceTopics {
				if int(i) < 0 || int(i) >= len(s.RepartitionSourceTopics) {
					return -1, "", fmt.Sprintf("Copartition group of subtopology %s has an invalid repartition topic index %d.", s.SubtopologyID, i)
				}
				repart = append(repart, s.RepartitionSourceTopics[i])
			}
			var want int32
			if len(external) > 0 {
				want = c.topics.byName[external[0]].Partitions
				for _, t := range external[1:] {
					if c.topics.byName[t].Partitions != want {
						return statusIncorrectlyPartition, fmt.Sprintf("Following topics do not have the same number of partitions: [%s]", strings.Join(external, ", ")), ""
					}
				}
			} else {
				for _, t := range repart {
					if t.Partitions != 0 {
						if want != 0 && t.Partitions != want {
							return statusIncorrectlyPartition, "Following repartition topics have fixed partition counts that differ: " + topicNames(repart), ""
						}
						want = t.Partitions
					}
				}
				if want == 0 {
					for _, t := range repart {
						if counts[t.Name] > want {
							want = counts[t.Name]
						}
					}
				}
				if want == 0 {
					return -1, "", "No partition count could be determined for copartitioned repartition topics " + topicNames(repart)
				}
			}
			for _, t := range repart {
				if t.Partitions != 0 && t.Partitions != want {
					return statusIncorrectlyPartition, fmt.Sprintf("Number of partitions [%d] of repartition topic [%s] doesn't match number of partitions [%d] of the source topic.", t.Partitions, t.Name, want), ""
				}
				counts[t.Name] = want
			}
		}
	}
	return -1, "", ""
}

func topicNames(ts []TopicInfo) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name
	}
	return strings.Join(names, ", ")
}

func (c *Coordinator) buildSubtopologies(ct *configuredTopology, topo *StreamsGroupTopologyValue, counts map[string]int32) {
	for _, s := range topo.Subtopologies {
		cs := configuredSubtopology{id: s.SubtopologyID, sourceTopics: s.SourceTopics, sinks: s.RepartitionSinkTopics,
			repartitionSources: map[string]int32{}, changelogs: map[string]int32{}}
		for _, t := range s.SourceTopics {
			if n := c.topics.byName[t].Partitions; n > cs.numTasks {
				cs.numTasks = n
			}
		}
		for _, t := range s.RepartitionSourceTopics {
			cs.repartitionSources[t.Name] = counts[t.Name]
			if counts[t.Name] > cs.numTasks {
				cs.numTasks = counts[t.Name]
			}
		}
		for _, t := range s.StateChangelogTopics {
			cs.changelogs[t.Name] = cs.numTasks
		}
		ct.subtopologies = append(ct.subtopologies, cs)
	}
	sort.Slice(ct.subtopologies, func(i, j int) bool { return ct.subtopologies[i].id < ct.subtopologies[j].id })
}

// checkInternalTopics lists internal topics to create, and flags existing
// ones with the wrong partition count.
func (c *Coordinator) checkInternalTopics(ct *configuredTopology, group string, topo *StreamsGroupTopologyValue, counts map[string]int32) {
	seen := map[string]bool{}
	var wrong []string
	add := func(t TopicInfo, n int32) {
		if seen[t.Name] {
			return
		}
		seen[t.Name] = true
		if md, ok := c.topics.byName[t.Name]; ok {
			if md.Partitions != n {
				wrong = append(wrong, t.Name)
			}
			return
		}
		rf := t.ReplicationFactor
		if rf == 0 {
			rf = -1
		}
		ct.toCreate = append(ct.toCreate, TopicToCreate{Group: group, Name: t.Name, Partitions: n,
			ReplicationFactor: rf, Configs: t.TopicConfigs})
	}
	for _, s := range topo.Subtopologies {
		cs := ct.subtopology(s.SubtopologyID)
		for _, t := range s.RepartitionSourceTopics {
			add(t, counts[t.Name])
		}
		for _, t := range s.StateChangelogTopics {
			add(t, cs.numTasks)
		}
	}
	sort.Slice(ct.toCreate, func(i, j int) bool { return ct.toCreate[i].Name < ct.toCreate[j].Name })
	switch {
	case len(wrong) > 0:
		sort.Strings(wrong)
		ct.statusCode = statusIncorrectlyPartition
		ct.statusDetail = "Internal topics have the wrong number of partitions: " + strings.Join(wrong, ", ")
		ct.toCreate = nil
	case len(ct.toCreate) > 0:
		names := make([]string, len(ct.toCreate))
		for i, t := range ct.toCreate {
			names[i] = t.Name
		}
		ct.statusCode = statusMissingInternal
		ct.statusDetail = "Internal topics are missing: " + strings.Join(names, ", ")
	}
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
func topologyFromRequest(t *kmsg.StreamsGroupHeartbeatRequestTopology) StreamsGroupTopologyValue {
	v := StreamsGroupTopologyValue{Epoch: t.Epoch, Subtopologies: []Subtopology{}}
	for _, s := range t.Subtopologies {
		sub := Subtopology{
			SubtopologyID:         s.SubtopologyID,
			SourceTopics:          nonNil(s.SourceTopics),
			SourceTopicRegex:      nonNil(s.SourceTopicRegex),
			RepartitionSinkTopics: nonNil(s.RepartitionSinkTopics),
			CopartitionGroups:     []CopartitionGroup{},
		}
		sub.StateChangelogTopics = topicInfosFromRequest(s.StateChangelogTopics)
		sub.RepartitionSourceTopics = topicInfosFromRequest(s.RepartitionSourceTopics)
		for _, g := range s.CopartitionGroups {
			sub.CopartitionGroups = append(sub.CopartitionGroups, CopartitionGroup{
				SourceTopics: nonNil(g.SourceTopics), SourceTopicRegex: nonNil(g.SourceTopicRegex),
				RepartitionSourceTopics: nonNil(g.RepartitionSourceTopics)})
		}
		v.Subtopologies = append(v.Subtopologies, sub)
	}
	return v
}

func topicInfosFromRequest(ts []kmsg.TopicInfo) []TopicInfo {
	out := []TopicInfo{}
	for _, t := range ts {
		ti := TopicInfo{Name: t.Topic, Partitions: t.NumPartitions, ReplicationFactor: t.ReplicationFactor, TopicConfigs: []KeyValue{}}
		for _, kv := range t.Configs {
			ti.TopicConfigs = append(ti.TopicConfigs, KeyValue{Key: kv.Key, Value: kv.Value})
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
