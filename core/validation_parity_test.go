package core

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestValidationParityWithKafka is a differential test of the
// StreamsGroupHeartbeat request checks against Kafka 4.4's
// GroupCoordinatorService (interop/records-golden, ValidationParity):
// random combinations of empty/null ids, epochs, rebalance timeouts,
// topologies and task lists must get the same error and message.
func TestValidationParityWithKafka(t *testing.T) {
	rng := rand.New(rand.NewPCG(88, 1))
	const n = 3000
	differential(t, rng, n, "coordhost.golden.ValidationParity", validationCase)
}

func validationCase(rng *rand.Rand, id int) (string, string) {
	pick := func(options ...string) string { return options[rng.IntN(len(options))] }
	group, member := pick("g", "g", ""), pick("m", "m", "")
	epoch := pick("0", "0", "1", "5", "-1", "-2", "-3")
	instance, rack := pick("null", "null", "i", ""), pick("null", "null", "r", "")
	rto := pick("30000", "-1")
	topo := pick("null", "ok", "ok", "regex", "changelog")
	active, standby, warmup := pick("null", "0", "1"), pick("null", "0", "1"), pick("null", "0", "1")
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID = group, member
	fmt.Sscan(epoch, &req.MemberEpoch)
	fmt.Sscan(rto, &req.RebalanceTimeoutMillis)
	if instance != "null" {
		req.InstanceID = &instance
	}
	if rack != "null" {
		req.RackID = &rack
	}
	if topo != "null" {
		s := kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{SubtopologyID: "0", SourceTopics: []string{"in"}}
		if topo == "regex" {
			s.SourceTopicRegex = []string{"in-.*"}
		}
		if topo == "changelog" {
			s.StateChangelogTopics = []kmsg.TopicInfo{{Topic: "c", NumPartitions: 3}}
		}
		req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{s}}
	}
	tasks := func(s string) []kmsg.TaskIDs {
		if s == "null" {
			return nil
		}
		out := []kmsg.TaskIDs{}
		var n int
		fmt.Sscan(s, &n)
		for i := 0; i < n; i++ {
			out = append(out, kmsg.TaskIDs{SubtopologyID: "0", Partitions: []int32{int32(i)}})
		}
		return out
	}
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = tasks(active), tasks(standby), tasks(warmup)
	line := strings.Join([]string{fmt.Sprint(id), group, member, epoch, instance, rack, rto, topo, active, standby, warmup}, "|")
	if e := validateStreamsHeartbeat(req); e != nil {
		return line, fmt.Sprintf("%d|%s|%s", id, kerr.ErrorForCode(e.code).(*kerr.Error).Message, e.msg)
	}
	return line, fmt.Sprintf("%d|NONE|", id)
}
