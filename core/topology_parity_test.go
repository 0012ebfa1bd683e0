package core

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/core/records"
)

// TestTopologyParityWithKafka is a differential test of topology
// configuration: random topologies (sources, repartition topics with fixed
// or derived counts, sinks, changelogs, co-partition groups) against random
// topic metadata are configured by core and by Kafka 4.4's own
// InternalTopicManager.configureTopics (interop/records-golden,
// TopologyParity); readiness, status, task counts, resolved partition
// counts, topics to create and invalid-topology errors must be equal.
var parityTopologies = flag.Int("parity.topologies", 2000, "number of topology-configuration parity cases")

func TestTopologyParityWithKafka(t *testing.T) {
	rng := rand.New(rand.NewPCG(1071, 44))
	n := *parityTopologies
	differential(t, rng, n, "coordhost.golden.TopologyParity", topologyCase)
}

func topologyCase(rng *rand.Rand, id int) (string, string) {
	c, _ := New(DefaultConfig())
	var topics []TopicMetadata
	var topicSpec []string
	addTopics := func(prefix string, k int, p float64) {
		for i := 1; i <= k; i++ {
			if rng.Float64() < p {
				name := fmt.Sprintf("%s%d", prefix, i)
				n := int32(1 + rng.IntN(6))
				topics = append(topics, TopicMetadata{Name: name, Partitions: n})
				topicSpec = append(topicSpec, fmt.Sprintf("%s:%d", name, n))
			}
		}
	}
	addTopics("s", 4, 0.85)
	addTopics("r", 3, 0.3)
	addTopics("c", 3, 0.3)
	c.updateTopics(0, topics)
	c.Commit()

	topo := records.StreamsGroupTopologyValue{Subtopologies: []records.Subtopology{}}
	var specs []string
	usedRep, usedChg := map[string]bool{}, map[string]bool{}
	nsub := 1 + rng.IntN(3)
	for si := 0; si < nsub; si++ {
		s := records.Subtopology{SubtopologyID: fmt.Sprint(si), SourceTopics: []string{}, SourceTopicRegex: []string{},
			RepartitionSinkTopics: []string{}, StateChangelogTopics: []records.TopicInfo{}, RepartitionSourceTopics: []records.TopicInfo{},
			CopartitionGroups: []records.CopartitionGroup{}}
		for i := 1; i <= 4; i++ {
			if rng.IntN(3) == 0 {
				s.SourceTopics = append(s.SourceTopics, fmt.Sprintf("s%d", i))
			}
		}
		var repSpec []string
		for i := 1; i <= 3; i++ {
			name := fmt.Sprintf("r%d", i)
			if !usedRep[name] && rng.IntN(4) == 0 {
				usedRep[name] = true
				n := int32(0)
				if rng.IntN(3) == 0 {
					n = int32(1 + rng.IntN(6))
				}
				s.RepartitionSourceTopics = append(s.RepartitionSourceTopics, records.TopicInfo{Name: name, Partitions: n, TopicConfigs: []records.KeyValue{}})
				repSpec = append(repSpec, fmt.Sprintf("%s:%d", name, n))
			}
		}
		for i := 1; i <= 3; i++ {
			name := fmt.Sprintf("r%d", i)
			if rng.IntN(3) == 0 {
				s.RepartitionSinkTopics = append(s.RepartitionSinkTopics, name)
			}
		}
		for i := 1; i <= 3; i++ {
			name := fmt.Sprintf("c%d", i)
			if !usedChg[name] && rng.IntN(3) == 0 {
				usedChg[name] = true
				s.StateChangelogTopics = append(s.StateChangelogTopics, records.TopicInfo{Name: name, TopicConfigs: []records.KeyValue{}})
			}
		}
		var groupSpecs []string
		if rng.IntN(3) == 0 && len(s.SourceTopics)+len(s.RepartitionSourceTopics) >= 2 {
			g := records.CopartitionGroup{SourceTopics: []int16{}, SourceTopicRegex: []int16{}, RepartitionSourceTopics: []int16{}}
			var src, rep []string
			for i := range s.SourceTopics {
				if rng.IntN(2) == 0 {
					g.SourceTopics = append(g.SourceTopics, int16(i))
					src = append(src, fmt.Sprint(i))
				}
			}
			for i := range s.RepartitionSourceTopics {
				if rng.IntN(2) == 0 {
					g.RepartitionSourceTopics = append(g.RepartitionSourceTopics, int16(i))
					rep = append(rep, fmt.Sprint(i))
				}
			}
			if len(g.SourceTopics)+len(g.RepartitionSourceTopics) >= 2 {
				s.CopartitionGroups = append(s.CopartitionGroups, g)
				groupSpecs = append(groupSpecs, strings.Join(src, ".")+"/"+strings.Join(rep, "."))
			}
		}
		var chg []string
		for _, t := range s.StateChangelogTopics {
			chg = append(chg, t.Name)
		}
		specs = append(specs, strings.Join([]string{s.SubtopologyID, dashJoin(s.SourceTopics, ","), dashJoin(repSpec, ","),
			dashJoin(s.RepartitionSinkTopics, ","), dashJoin(chg, ","), dashJoin(groupSpecs, "+")}, ";"))
		topo.Subtopologies = append(topo.Subtopologies, s)
	}
	line := fmt.Sprintf("%d|%s|%s", id, dashJoin(topicSpec, ","), strings.Join(specs, "#"))
	return line, formatConfigured(id, c.configureTopology("g", &topo))
}

func dashJoin(l []string, sep string) string {
	if len(l) == 0 {
		return "-"
	}
	return strings.Join(l, sep)
}

func formatConfigured(id int, ct *configuredTopology) string {
	if ct.invalid != "" {
		return fmt.Sprintf("%d|INVALID|%s", id, ct.invalid)
	}
	var subs []string
	if ct.statusCode < 0 || ct.statusCode == statusMissingInternal {
		for _, s := range ct.subtopologies {
			subs = append(subs, fmt.Sprintf("%s:%d:rep=%s:chg=%s", s.id, s.numTasks, fmtCounts(s.repartitionSources), fmtCounts(s.changelogs)))
		}
	}
	var create []string
	for _, t := range ct.toCreate {
		create = append(create, fmt.Sprintf("%s/%d", t.Name, t.Partitions))
	}
	return fmt.Sprintf("%d|%d|%s|%s", id, ct.statusCode, strings.Join(subs, " "), strings.Join(create, ","))
}

func fmtCounts(m map[string]int32) string {
	var out []string
	for n, c := range m {
		out = append(out, fmt.Sprintf("%s/%d", n, c))
	}
	sort.Strings(out)
	return strings.Join(out, ".")
}
