package core

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/core/records"
	"github.com/coordhost/coordhost/core/records/recordstest"
	"github.com/coordhost/coordhost/internal/testtool"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Golden coordinator-record bytes come from Kafka 4.4's own generated
// classes (interop/records-golden, run with Maven). Regenerate the committed
// file with: go test ./core -run TestRecordsGoldenFromJava -update-golden

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/records/streams.golden from Kafka's classes")

const goldenPath = "../testdata/records/streams.golden"
const goldenHeader = `# Golden streams-group coordinator records (types 17, 19-23), written by
# Kafka 4.4's generated classes through GroupCoordinatorRecordSerde
# (org.apache.kafka:kafka-group-coordinator:4.4.0, interop/records-golden).
# Format: name keyhex valuehex ('-' = tombstone). Regenerate with:
#   go test ./core -run TestRecordsGoldenFromJava -update-golden
`

type goldenRecord struct {
	name       string
	key, value []byte // value nil: tombstone
}

func parseGolden(tb testing.TB, data []byte) []goldenRecord {
	var out []goldenRecord
	for _, g := range recordstest.Parse(tb, data) {
		out = append(out, goldenRecord{name: g.Name, key: g.Key, value: g.Value})
	}
	return out
}

func loadGolden(tb testing.TB) []goldenRecord {
	data, err := os.ReadFile(goldenPath)
	if err != nil {
		tb.Fatal(err)
	}
	return parseGolden(tb, data)
}

// TestRecordsGoldenDecodeReencode decodes every record Kafka wrote and
// re-encodes it to identical bytes.
func TestRecordsGoldenDecodeReencode(t *testing.T) {
	types := map[int16]bool{}
	for _, rec := range reencodeGolden(t, loadGolden(t)) {
		types[rec.Key.RecordType()] = true
	}
	for _, typ := range []int16{17, 19, 20, 21, 22, 23} {
		if !types[typ] {
			t.Errorf("golden file has no record of type %d", typ)
		}
	}
}

// reencodeGolden decodes each golden record, checks it re-encodes to
// Kafka's bytes and returns the decoded records.
func reencodeGolden(t *testing.T, golden []goldenRecord) []records.Record {
	t.Helper()
	var out []records.Record
	for _, g := range golden {
		rec, err := records.DecodeRecord(g.key, g.value)
		if err != nil {
			t.Fatalf("%s: %v", g.name, err)
		}
		out = append(out, rec)
		want := g.value
		k, v := records.EncodeRecord(rec)
		if !bytes.Equal(k, g.key) || !bytes.Equal(v, want) || (v == nil) != (g.value == nil) {
			t.Errorf("%s: re-encoding differs\n key  %x\n want %x\n value %x\n want  %x", g.name, k, g.key, v, want)
		}
	}
	return out
}

// decodeGoldenByName decodes golden records by name.
func decodeGoldenByName(tb testing.TB, golden []goldenRecord) map[string]records.Record {
	byName := map[string]records.Record{}
	for _, g := range golden {
		rec, err := records.DecodeRecord(g.key, g.value)
		if err != nil {
			tb.Fatalf("%s: %v", g.name, err)
		}
		byName[g.name] = rec
	}
	return byName
}

// TestRecordsGoldenFields checks decoded content against what the Java
// program set, so decoding is proven on its own and not only by a round trip.
func TestRecordsGoldenFields(t *testing.T) {
	byName := decodeGoldenByName(t, loadGolden(t))
	inst, rack := "inst-1", "rack-a"
	want := map[string]records.Record{
		"metadata-plain": {Key: records.StreamsGroupMetadataKey{GroupID: "app"}, Value: records.StreamsGroupMetadataValue{Epoch: 2, MetadataHash: -1234567890123,
			ValidatedTopologyEpoch: -1, StoredDescriptionTopologyEpoch: -1, FailedDescriptionTopologyEpoch: -1}},
		"metadata-tagged": {Key: records.StreamsGroupMetadataKey{GroupID: "app-ü"}, Value: records.StreamsGroupMetadataValue{Epoch: 7, MetadataHash: 42,
			ValidatedTopologyEpoch: 3, LastAssignmentConfigs: []records.KeyValue{{Key: "num.standby.replicas", Value: "1"}},
			StoredDescriptionTopologyEpoch: -2, FailedDescriptionTopologyEpoch: 5}},
		"metadata-empty-configs": {Key: records.StreamsGroupMetadataKey{GroupID: "g"}, Value: records.StreamsGroupMetadataValue{Epoch: 1,
			ValidatedTopologyEpoch: -1, StoredDescriptionTopologyEpoch: -1, FailedDescriptionTopologyEpoch: -1}},
		"member-full": {Key: records.StreamsGroupMemberMetadataKey{GroupID: "app", MemberID: "4f2c-member"}, Value: records.StreamsGroupMemberMetadataValue{
			InstanceID: &inst, RackID: &rack, ClientID: "app-StreamThread-1", ClientHost: "/10.0.0.1", RebalanceTimeoutMs: 300000,
			TopologyEpoch: 1, ProcessID: "proc-uuid", UserEndpoint: &records.Endpoint{Host: "localhost", Port: 65535},
			ClientTags: []records.KeyValue{{Key: "zone", Value: "z1"}, {Key: "cluster", Value: "c"}}}},
		"target-metadata-ts": {Key: records.StreamsGroupTargetAssignmentMetadataKey{GroupID: "app"}, Value: records.StreamsGroupTargetAssignmentMetadataValue{
			AssignmentEpoch: 6, AssignmentTimestamp: 1764680000123}},
		"current-epochs": {Key: records.StreamsGroupCurrentMemberAssignmentKey{GroupID: "app", MemberID: "m1"}, Value: records.StreamsGroupCurrentMemberAssignmentValue{
			MemberEpoch: 4, PreviousMemberEpoch: 3, State: 2,
			ActiveTasks:                   []records.TaskIDs{{SubtopologyID: "0", Partitions: []int32{0, 3}, AssignmentEpochs: []int32{2, 4}, EpochsNull: false}},
			StandbyTasks:                  []records.TaskIDs{{SubtopologyID: "1", Partitions: []int32{1}, AssignmentEpochs: nil, EpochsNull: true}},
			WarmupTasks:                   []records.TaskIDs{{SubtopologyID: "1", Partitions: []int32{2}, AssignmentEpochs: nil, EpochsNull: true}},
			ActiveTasksPendingRevocation:  []records.TaskIDs{{SubtopologyID: "0", Partitions: []int32{1}, AssignmentEpochs: []int32{2}, EpochsNull: false}},
			StandbyTasksPendingRevocation: []records.TaskIDs{}, WarmupTasksPendingRevocation: []records.TaskIDs{}}},
		"member-tombstone": {Key: records.StreamsGroupMemberMetadataKey{GroupID: "app", MemberID: "m1"}},
	}
	for name, w := range want {
		if got := byName[name]; !reflect.DeepEqual(got, w) {
			t.Errorf("%s:\n got  %#v\n want %#v", name, got, w)
		}
	}
	topo := byName["topology"].Value.(records.StreamsGroupTopologyValue)
	if topo.Epoch != 1 || len(topo.Subtopologies) != 2 || topo.Subtopologies[1].RepartitionSourceTopics[0].Partitions != 6 ||
		topo.Subtopologies[1].RepartitionSourceTopics[0].ReplicationFactor != 3 ||
		!reflect.DeepEqual(topo.Subtopologies[0].CopartitionGroups[0].SourceTopics, []int16{0, 1}) ||
		topo.Subtopologies[0].StateChangelogTopics[0].TopicConfigs[0] != (records.KeyValue{Key: "cleanup.policy", Value: "compact"}) {
		t.Errorf("topology decoded wrong: %+v", topo)
	}
}

// TestRecordsGoldenFromJava regenerates the golden records with Kafka's
// classes and compares them with the committed file; then it has Kafka
// decode records coordhost's encoder wrote during a simulated run and
// checks Kafka re-serializes them to the same bytes.
func TestRecordsGoldenFromJava(t *testing.T) {
	out := testtool.JavaMain(t, "../interop/records-golden", "coordhost.golden.RecordsGolden", "generate")
	if *updateGolden {
		if err := os.WriteFile(goldenPath, append([]byte(goldenHeader), out...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fromJava := parseGolden(t, out)
	committed := loadGolden(t)
	if !reflect.DeepEqual(fromJava, committed) {
		t.Fatalf("Kafka's classes now write different bytes than %s (run with -update-golden and review)", goldenPath)
	}

	// Records our encoder wrote in a simulated run, one per (type, tombstone).
	s := newPropSim(1)
	for i := 0; i < 150; i++ {
		s.step()
	}
	// A group that empties and is deleted adds the remaining tombstones.
	h := newHarness(t, DefaultConfig())
	h.topologies["default"] = parseTopology(0, "sub 0 sources=in")
	h.heartbeat(map[string]string{"member": "m1"})
	h.heartbeat(map[string]string{"member": "m1", "epoch": "-1"})
	h.finish(h.c.deleteGroups(0, 99, &kmsg.DeleteGroupsRequest{Groups: []string{"g"}}), false)
	lines, seen := recordLines(append(s.log, h.log...), 3, "go-")
	if len(seen) < 12 {
		t.Fatalf("simulated run wrote only %d kinds of records: %v", len(seen), seen)
	}
	kafkaReserializes(t, lines)
}

// TestRecordsMatchKafkaHelpers has Kafka rebuild records coordhost wrote in
// simulated runs through its own StreamsCoordinatorRecordHelpers (what
// Kafka's coordinator writes for the same state) and checks the bytes are
// identical, list order and tagged fields included.
func TestRecordsMatchKafkaHelpers(t *testing.T) {
	var recs []records.Record
	for seed := uint64(1); seed <= 3; seed++ {
		s := newPropSim(seed)
		for i := 0; i < 150; i++ {
			s.step()
		}
		recs = append(recs, s.log...)
	}
	h := newHarness(t, DefaultConfig())
	h.topologies["default"] = parseTopology(0, "sub 0 sources=in changelogs=c1,c2\nsub 1 sources=in sinks=r1\nsub 2 repartition=r1")
	h.heartbeat(map[string]string{"member": "m1", "endpoint": "h:1", "tags": "zone:z1,cluster:c1", "rack": "r1", "instance": "i1"})
	h.heartbeat(map[string]string{"member": "m1", "epoch": "-1", "instance": "i1"})
	h.finish(h.c.deleteGroups(0, 99, &kmsg.DeleteGroupsRequest{Groups: []string{"g"}}), false)
	recs = append(recs, h.log...)
	lines, _ := recordLines(recs, 60, "r")
	in := filepath.Join(t.TempDir(), "ours.txt")
	if err := os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := testtool.JavaMain(t, "../interop/records-golden", "coordhost.golden.HelperParity", in)
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(got) != len(lines) {
		t.Fatalf("Kafka rebuilt %d of %d records", len(got), len(lines))
	}
	bad := 0
	for i := range got {
		if got[i] != lines[i] {
			bad++
			if bad <= 6 {
				rec, _ := records.DecodeRecord(mustHex(strings.Fields(lines[i])[1]), nil)
				t.Errorf("%s differs from Kafka's helper output:\n ours  %s\n kafka %s", records.RecordTypeName(rec.Key.RecordType()), lines[i], got[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d records differ from what Kafka writes", bad, len(lines))
	}
}

func mustHex(s string) []byte {
	b, _ := hex.DecodeString(s)
	return b
}

// recordLines writes up to perKind records of each kind (record type,
// tombstone or not) as "name keyhex valuehex" lines, the input of
// RecordsGolden decode and HelperParity, named prefix + kind + index; it
// also returns how many of each kind it wrote.
func recordLines(recs []records.Record, perKind int, prefix string) ([]string, map[string]int) {
	var lines []string
	seen := map[string]int{}
	for i, r := range recs {
		kind := fmt.Sprintf("%d-%v", r.Key.RecordType(), r.Value == nil)
		if seen[kind] >= perKind {
			continue
		}
		seen[kind]++
		k, v := records.EncodeRecord(r)
		vh := "-"
		if v != nil {
			vh = hex.EncodeToString(v)
		}
		lines = append(lines, fmt.Sprintf("%s%s-%d %x %s", prefix, kind, i, k, vh))
	}
	return lines, seen
}
