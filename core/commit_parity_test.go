package core

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/internal/testtool"
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
	var lines, want []string
	for i := 0; i < n; i++ {
		line, got := commitCase(rng, i)
		lines = append(lines, line)
		want = append(want, got)
	}
	in := filepath.Join(t.TempDir(), "commits.txt")
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := testtool.JavaMain(t, "../interop/records-golden", "coordhost.golden.CommitParity", in)
	kafka := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(kafka) != n {
		t.Fatalf("Kafka answered %d of %d cases", len(kafka), n)
	}
	bad := 0
	for i := range kafka {
		if kafka[i] != want[i] {
			bad++
			if bad <= 8 {
				t.Errorf("case differs:\n in    %s\n kafka %s\n core  %s", lines[i], kafka[i], want[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d cases differ from Kafka", bad, n)
	}
}

func commitCase(rng *rand.Rand, id int) (string, string) {
	c, _ := New(DefaultConfig())
	g := newStreamsGroup("g")
	g.topology = &StreamsGroupTopologyValue{Subtopologies: []Subtopology{
		{SubtopologyID: "0", SourceTopics: []string{"s1", "s2"}},
		{SubtopologyID: "1", SourceTopics: []string{"s2"}, RepartitionSourceTopics: []TopicInfo{{Name: "r1", Partitions: 4}}},
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
	code, msg := c.ValidateStreamsOffsetCommit("g", reqMember, reqEpoch, version, txn, []OffsetCommitTopic{{Topic: topic, Partitions: parts}})
	name := "NONE"
	if code != 0 {
		name = kerr.ErrorForCode(code).(*kerr.Error).Message
		return line, fmt.Sprintf("%d|%s|%s", id, name, msg)
	}
	return line, fmt.Sprintf("%d|%s|", id, name)
}
