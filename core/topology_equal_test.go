package core

import (
	"slices"
	"testing"

	"github.com/coordhost/coordhost/core/records"
)

// TestTopologyEqual: every field of a topology takes part in the
// comparison a heartbeat with a topology makes against the stored one (a
// comparison of digests), and an empty list equals an absent one; the
// digests agree with the field-by-field comparison on every case.
func TestTopologyEqual(t *testing.T) {
	topologyEqual := func(a, b records.StreamsGroupTopologyValue) bool {
		t.Helper()
		eq := topologyEqual(a, b)
		if same := digestTopology(&a) == digestTopology(&b); same != eq {
			t.Errorf("digests equal %v, topologies equal %v:\n%+v\n%+v", same, eq, a, b)
		}
		return eq
	}
	base := func() records.StreamsGroupTopologyValue {
		return records.StreamsGroupTopologyValue{Epoch: 2, Subtopologies: []records.Subtopology{{
			SubtopologyID: "0", SourceTopics: []string{"in"}, SourceTopicRegex: []string{"r.*"},
			StateChangelogTopics:    []records.TopicInfo{{Name: "cl", Partitions: 0, ReplicationFactor: 0, TopicConfigs: []records.KeyValue{{Key: "cleanup.policy", Value: "compact"}}}},
			RepartitionSinkTopics:   []string{"rp"},
			RepartitionSourceTopics: []records.TopicInfo{{Name: "rp", Partitions: 4, ReplicationFactor: 3}},
			CopartitionGroups:       []records.CopartitionGroup{{SourceTopics: []int16{0}, RepartitionSourceTopics: []int16{0}}},
		}}}
	}
	if !topologyEqual(base(), base()) {
		t.Fatal("a topology differs from its copy")
	}
	empty := base()
	empty.Subtopologies[0].CopartitionGroups[0].SourceTopicRegex = []int16{}
	empty.Subtopologies[0].RepartitionSourceTopics[0].TopicConfigs = []records.KeyValue{}
	if !topologyEqual(base(), empty) {
		t.Fatal("an empty list differs from an absent one")
	}
	edits := map[string]func(*records.StreamsGroupTopologyValue){
		"epoch": func(v *records.StreamsGroupTopologyValue) { v.Epoch++ },
		"subtopologies": func(v *records.StreamsGroupTopologyValue) {
			v.Subtopologies = append(v.Subtopologies, records.Subtopology{SubtopologyID: "1"})
		},
		"id":              func(v *records.StreamsGroupTopologyValue) { v.Subtopologies[0].SubtopologyID = "9" },
		"source":          func(v *records.StreamsGroupTopologyValue) { v.Subtopologies[0].SourceTopics[0] = "other" },
		"regex":           func(v *records.StreamsGroupTopologyValue) { v.Subtopologies[0].SourceTopicRegex = nil },
		"changelog name":  func(v *records.StreamsGroupTopologyValue) { v.Subtopologies[0].StateChangelogTopics[0].Name = "x" },
		"changelog parts": func(v *records.StreamsGroupTopologyValue) { v.Subtopologies[0].StateChangelogTopics[0].Partitions = 2 },
		"changelog rf": func(v *records.StreamsGroupTopologyValue) {
			v.Subtopologies[0].StateChangelogTopics[0].ReplicationFactor = 2
		},
		"changelog cfg": func(v *records.StreamsGroupTopologyValue) {
			v.Subtopologies[0].StateChangelogTopics[0].TopicConfigs[0].Value = "delete"
		},
		"sink": func(v *records.StreamsGroupTopologyValue) {
			v.Subtopologies[0].RepartitionSinkTopics = []string{"rp", "rp2"}
		},
		"repartition": func(v *records.StreamsGroupTopologyValue) {
			v.Subtopologies[0].RepartitionSourceTopics[0].Partitions = 5
		},
		"copartition src": func(v *records.StreamsGroupTopologyValue) {
			v.Subtopologies[0].CopartitionGroups[0].SourceTopics = []int16{1}
		},
		"copartition rx": func(v *records.StreamsGroupTopologyValue) {
			v.Subtopologies[0].CopartitionGroups[0].SourceTopicRegex = []int16{0}
		},
		"copartition rp": func(v *records.StreamsGroupTopologyValue) {
			v.Subtopologies[0].CopartitionGroups[0].RepartitionSourceTopics = nil
		},
		// Moving a name from one list to the next keeps the bytes of the
		// names in order: only the lengths tell the lists apart.
		"list boundary": func(v *records.StreamsGroupTopologyValue) {
			s := &v.Subtopologies[0]
			s.SourceTopics, s.SourceTopicRegex = []string{"in", "r.*"}, []string{}
		},
		"name boundary": func(v *records.StreamsGroupTopologyValue) {
			s := &v.Subtopologies[0]
			s.SubtopologyID, s.SourceTopics[0] = "0i", "n"
		},
	}
	for name, edit := range edits {
		v := base()
		edit(&v)
		if topologyEqual(base(), v) || topologyEqual(v, base()) {
			t.Errorf("%s: the changed topology compares equal", name)
		}
	}
}

// topologyEqual compares two topologies field by field, an empty list
// equal to an absent one (Kafka's topology classes hold empty lists where
// a request left one out): the reference the digest a heartbeat compares
// (digestTopology) is checked against.
func topologyEqual(a, b records.StreamsGroupTopologyValue) bool {
	return a.Epoch == b.Epoch && slices.EqualFunc(a.Subtopologies, b.Subtopologies, subtopologyEqual)
}

func subtopologyEqual(a, b records.Subtopology) bool {
	return a.SubtopologyID == b.SubtopologyID &&
		slices.Equal(a.SourceTopics, b.SourceTopics) &&
		slices.Equal(a.SourceTopicRegex, b.SourceTopicRegex) &&
		slices.EqualFunc(a.StateChangelogTopics, b.StateChangelogTopics, topicInfoEqual) &&
		slices.Equal(a.RepartitionSinkTopics, b.RepartitionSinkTopics) &&
		slices.EqualFunc(a.RepartitionSourceTopics, b.RepartitionSourceTopics, topicInfoEqual) &&
		slices.EqualFunc(a.CopartitionGroups, b.CopartitionGroups, func(x, y records.CopartitionGroup) bool {
			return slices.Equal(x.SourceTopics, y.SourceTopics) && slices.Equal(x.SourceTopicRegex, y.SourceTopicRegex) &&
				slices.Equal(x.RepartitionSourceTopics, y.RepartitionSourceTopics)
		})
}

func topicInfoEqual(a, b records.TopicInfo) bool {
	return a.Name == b.Name && a.Partitions == b.Partitions && a.ReplicationFactor == b.ReplicationFactor &&
		slices.Equal(a.TopicConfigs, b.TopicConfigs)
}
