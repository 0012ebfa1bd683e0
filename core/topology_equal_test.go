package core

import "testing"

// TestTopologyEqual: every field of a topology takes part in the
// comparison a heartbeat with a topology makes against the stored one,
// and an empty list equals an absent one.
func TestTopologyEqual(t *testing.T) {
	base := func() StreamsGroupTopologyValue {
		return StreamsGroupTopologyValue{Epoch: 2, Subtopologies: []Subtopology{{
			SubtopologyID: "0", SourceTopics: []string{"in"}, SourceTopicRegex: []string{"r.*"},
			StateChangelogTopics:    []TopicInfo{{Name: "cl", Partitions: 0, ReplicationFactor: 0, TopicConfigs: []KeyValue{{"cleanup.policy", "compact"}}}},
			RepartitionSinkTopics:   []string{"rp"},
			RepartitionSourceTopics: []TopicInfo{{Name: "rp", Partitions: 4, ReplicationFactor: 3}},
			CopartitionGroups:       []CopartitionGroup{{SourceTopics: []int16{0}, RepartitionSourceTopics: []int16{0}}},
		}}}
	}
	if !topologyEqual(base(), base()) {
		t.Fatal("a topology differs from its copy")
	}
	empty := base()
	empty.Subtopologies[0].CopartitionGroups[0].SourceTopicRegex = []int16{}
	empty.Subtopologies[0].RepartitionSourceTopics[0].TopicConfigs = []KeyValue{}
	if !topologyEqual(base(), empty) {
		t.Fatal("an empty list differs from an absent one")
	}
	edits := map[string]func(*StreamsGroupTopologyValue){
		"epoch": func(v *StreamsGroupTopologyValue) { v.Epoch++ },
		"subtopologies": func(v *StreamsGroupTopologyValue) {
			v.Subtopologies = append(v.Subtopologies, Subtopology{SubtopologyID: "1"})
		},
		"id":              func(v *StreamsGroupTopologyValue) { v.Subtopologies[0].SubtopologyID = "9" },
		"source":          func(v *StreamsGroupTopologyValue) { v.Subtopologies[0].SourceTopics[0] = "other" },
		"regex":           func(v *StreamsGroupTopologyValue) { v.Subtopologies[0].SourceTopicRegex = nil },
		"changelog name":  func(v *StreamsGroupTopologyValue) { v.Subtopologies[0].StateChangelogTopics[0].Name = "x" },
		"changelog parts": func(v *StreamsGroupTopologyValue) { v.Subtopologies[0].StateChangelogTopics[0].Partitions = 2 },
		"changelog rf":    func(v *StreamsGroupTopologyValue) { v.Subtopologies[0].StateChangelogTopics[0].ReplicationFactor = 2 },
		"changelog cfg": func(v *StreamsGroupTopologyValue) {
			v.Subtopologies[0].StateChangelogTopics[0].TopicConfigs[0].Value = "delete"
		},
		"sink":            func(v *StreamsGroupTopologyValue) { v.Subtopologies[0].RepartitionSinkTopics = []string{"rp", "rp2"} },
		"repartition":     func(v *StreamsGroupTopologyValue) { v.Subtopologies[0].RepartitionSourceTopics[0].Partitions = 5 },
		"copartition src": func(v *StreamsGroupTopologyValue) { v.Subtopologies[0].CopartitionGroups[0].SourceTopics = []int16{1} },
		"copartition rx": func(v *StreamsGroupTopologyValue) {
			v.Subtopologies[0].CopartitionGroups[0].SourceTopicRegex = []int16{0}
		},
		"copartition rp": func(v *StreamsGroupTopologyValue) {
			v.Subtopologies[0].CopartitionGroups[0].RepartitionSourceTopics = nil
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
