package core

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestCommitParityWithKafka is a differential test of offset-commit
// validation against Kafka 4.4's StreamsGroup.validateOffsetCommit
// (interop/records-golden, CommitParity): random member state, request
// epochs, versions, transactional flags, topics and partitions must get the
// same error code and message.
func TestCommitParityWithKafka(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 113))
	const n = 2000
	differential(t, rng, n, "coordhost.golden.CommitParity", commitCase)
}

func commitCase(rng *rand.Rand, id int) (string, string) {
	c, _ := New(DefaultConfig())
	g := newStreamsGroup("g")
	g.topology = &records.StreamsGroupTopologyValue{Subtopologies: []records.Subtopology{
		{SubtopologyID: "0", SourceTopics: []string{"s1", "s2"}},
		{SubtopologyID: "1", SourceTopics: []string{"s2"}, RepartitionSourceTopics: []records.TopicInfo{{Name: "r1", Partitions: 4}}},
	}}
	c.groups["g"] = g
	memberField, assignedField, pendingField := "-", "-", "-"
	memberEpoch := int32(0)
	if rng.IntN(6) > 0 {
		memberEpoch = int32(1 + rng.IntN(6))
		m := newStreamsMember("m")
		m.epoch, m.processID = memberEpoch, "p"
		for _, sub := range []string{"0", "1"} {
			for p := int32(0); p < 4; p++ {
				switch rng.IntN(4) {
				case 0:
					m.assigned.active[TaskID{sub, p}] = 1 + int32(rng.IntN(int(memberEpoch)))
				case 1:
					m.pending.active[TaskID{sub, p}] = 1 + int32(rng.IntN(int(memberEpoch)))
				}
			}
		}
		g.swapMember(nil, m)
		memberField, assignedField, pendingField = fmt.Sprint(memberEpoch), parityEpochs(m.assigned.active), parityEpochs(m.pending.active)
	}
	reqMember := []string{"m", "m", "m", "x", ""}[rng.IntN(5)]
	reqEpoch := memberEpoch + int32(rng.IntN(5)) - 3
	if rng.IntN(8) == 0 {
		reqEpoch = -1
	}
	txn := rng.IntN(4) == 0
	version := int16(8 + rng.IntN(3))
	topic := []string{"s1", "s2", "r1", "other"}[rng.IntN(4)]
	var parts []int32
	var partStr []string
	for i := 0; i < 1+rng.IntN(2); i++ {
		p := int32(rng.IntN(4))
		parts = append(parts, p)
		partStr = append(partStr, fmt.Sprint(p))
	}
	line := strings.Join([]string{fmt.Sprint(id), memberField, assignedField, pendingField, reqMember, fmt.Sprint(reqEpoch),
		fmt.Sprint(txn), fmt.Sprint(version), topic, strings.Join(partStr, ",")}, "|")
	code, msg := c.validateStreamsOffsetCommit("g", reqMember, reqEpoch, version, txn, []OffsetCommitTopic{{Topic: topic, Partitions: parts}})
	name := "NONE"
	if code != 0 {
		name = kerr.ErrorForCode(code).(*kerr.Error).Message
		return line, fmt.Sprintf("%d|%s|%s", id, name, msg)
	}
	return line, fmt.Sprintf("%d|%s|", id, name)
}
