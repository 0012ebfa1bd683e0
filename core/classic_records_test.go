package core

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"reflect"
	"testing"

	"github.com/coordhost/coordhost/core/records"
	"github.com/coordhost/coordhost/internal/testtool"
)

// Golden classic GroupMetadata records (type 2) come from Kafka 4.4's
// generated classes (interop/records-golden, class ClassicGolden), at
// every value version. Regenerate the committed file with:
//   go test ./core -run TestClassicRecordsGoldenFromJava -update-classic-golden

var updateClassicGolden = flag.Bool("update-classic-golden", false, "rewrite testdata/records/classic.golden from Kafka's classes")

const classicGoldenPath = "../testdata/records/classic.golden"
const classicGoldenHeader = `# Golden classic-group coordinator records (type 2, GroupMetadata, value
# versions 0-4), written by Kafka 4.4's generated classes through
# GroupCoordinatorRecordSerde (org.apache.kafka:kafka-group-coordinator:4.4.0,
# interop/records-golden, class coordhost.golden.ClassicGolden).
# Format: name keyhex valuehex ('-' = tombstone). Regenerate with:
#   go test ./core -run TestClassicRecordsGoldenFromJava -update-classic-golden
`

func loadClassicGolden(tb testing.TB) []goldenRecord {
	data, err := os.ReadFile(classicGoldenPath)
	if err != nil {
		tb.Fatal(err)
	}
	return parseGolden(tb, data)
}

// TestClassicRecordsGoldenDecodeReencode decodes every record Kafka wrote
// and re-encodes it to identical bytes, at every version.
func TestClassicRecordsGoldenDecodeReencode(t *testing.T) {
	versions := map[int16]bool{}
	for _, g := range loadClassicGolden(t) {
		rec, err := records.DecodeRecord(g.key, g.value)
		if err != nil {
			t.Fatalf("%s: %v", g.name, err)
		}
		if v, ok := rec.Value.(records.GroupMetadataValue); ok {
			versions[v.Version] = true
		}
		k, v := records.EncodeRecord(rec)
		if !bytes.Equal(k, g.key) || !bytes.Equal(v, g.value) || (v == nil) != (g.value == nil) {
			t.Errorf("%s: re-encoding differs\n key  %x\n want %x\n value %x\n want  %x", g.name, k, g.key, v, g.value)
		}
	}
	for v := int16(0); v <= 4; v++ {
		if !versions[v] {
			t.Errorf("golden file has no GroupMetadata value of version %d", v)
		}
	}
}

// TestClassicRecordsGoldenFields checks decoded fields against what the
// Java program set, including each version's defaults for absent fields.
func TestClassicRecordsGoldenFields(t *testing.T) {
	byName := map[string]records.Record{}
	for _, g := range loadClassicGolden(t) {
		rec, err := records.DecodeRecord(g.key, g.value)
		if err != nil {
			t.Fatal(err)
		}
		byName[g.name] = rec
	}
	sub, _ := hex.DecodeString("0001000000010005746f7069630000000000000000")
	s := func(v string) *string { return &v }
	full := func(version int16) records.GroupMetadataValue {
		v := records.GroupMetadataValue{Version: version, ProtocolType: "consumer", Generation: 42, Protocol: s("cooperative-sticky"),
			Leader: s("consumer-1-5f0c"), CurrentStateTimestamp: 1764680000123, Members: []records.GroupMetadataMember{
				{MemberID: "consumer-1-5f0c", ClientID: "consumer-1", ClientHost: "/10.0.0.1", RebalanceTimeout: 300000,
					SessionTimeout: 45000, Subscription: sub, Assignment: []byte("a1")},
				{MemberID: "inst-2-77aa", GroupInstanceID: s("inst-2"), ClientID: "consumer-2", ClientHost: "/10.0.0.2",
					RebalanceTimeout: 60000, SessionTimeout: 10000, Subscription: sub, Assignment: []byte{}}}}
		if version < 3 {
			v.Members[1].GroupInstanceID = nil
		}
		if version < 2 {
			v.CurrentStateTimestamp = -1
		}
		if version < 1 {
			v.Members[0].RebalanceTimeout, v.Members[1].RebalanceTimeout = -1, -1
		}
		return v
	}
	want := map[string]records.Record{
		"empty-v3": {Key: records.GroupMetadataKey{GroupID: "g"}, Value: records.GroupMetadataValue{Version: 3, CurrentStateTimestamp: 1764680000000}},
		"unicode-defaults-v3": {Key: records.GroupMetadataKey{GroupID: "grüppe"}, Value: records.GroupMetadataValue{Version: 3, ProtocolType: "consumer",
			Generation: 7, Protocol: s("range"), Leader: s("m-1"), CurrentStateTimestamp: -1, Members: []records.GroupMetadataMember{
				{MemberID: "m-1", ClientID: "c", ClientHost: "/h", RebalanceTimeout: -1, SessionTimeout: 10000,
					Subscription: []byte{}, Assignment: []byte{}}}}},
		"tombstone": {Key: records.GroupMetadataKey{GroupID: "app"}},
	}
	for v := int16(0); v <= 4; v++ {
		want[fmt.Sprintf("stable-v%d", v)] = records.Record{Key: records.GroupMetadataKey{GroupID: "app"}, Value: full(v)}
	}
	for name, w := range want {
		if got := byName[name]; !reflect.DeepEqual(got, w) {
			t.Errorf("%s:\n got  %#v\n want %#v", name, got, w)
		}
	}
	// A replayed version-0 record takes the session timeout as the
	// rebalance timeout, as Kafka's replay does.
	c, _ := New(DefaultConfig())
	if err := c.Replay(byName["stable-v0"]); err != nil {
		t.Fatal(err)
	}
	g := c.groups["app"].(*classicGroup)
	if g.state != classicStable || g.members["consumer-1-5f0c"].rebalanceTimeoutMs != 45000 || g.generation != 42 {
		t.Errorf("replayed v0 group: state=%s rto=%d gen=%d", g.state, g.members["consumer-1-5f0c"].rebalanceTimeoutMs, g.generation)
	}
}

// TestClassicRecordsGoldenFromJava regenerates the golden records with
// Kafka's classes and compares them with the committed file, then has Kafka
// decode the GroupMetadata records coordhost wrote in scenario runs and
// checks Kafka re-serializes them to the same bytes.
func TestClassicRecordsGoldenFromJava(t *testing.T) {
	out := testtool.JavaMain(t, "../interop/records-golden", "coordhost.golden.ClassicGolden", "generate")
	if *updateClassicGolden {
		if err := os.WriteFile(classicGoldenPath, append([]byte(classicGoldenHeader), out...), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if fromJava, committed := parseGolden(t, out), loadClassicGolden(t); !reflect.DeepEqual(fromJava, committed) {
		t.Fatalf("Kafka's classes now write different bytes than %s (run with -update-classic-golden and review)", classicGoldenPath)
	}
	var lines []string
	for seed := int64(0); seed < 40 && len(lines) < 40; seed++ {
		p := &classicProp{t: t, seed: seed}
		runClassicPropertyInto(t, seed, 60, p)
		for i, r := range p.log {
			if i%3 != 0 {
				continue
			}
			k, v := records.EncodeRecord(r)
			vh := "-"
			if v != nil {
				vh = hex.EncodeToString(v)
			}
			lines = append(lines, fmt.Sprintf("go-%d-%d %x %s", seed, i, k, vh))
		}
	}
	lines = append(lines, "go-tombstone "+hex.EncodeToString(func() []byte {
		k, _ := records.EncodeRecord(records.Record{Key: records.GroupMetadataKey{GroupID: "g"}})
		return k
	}())+" -")
	kafkaReserializes(t, lines)
}

// FuzzDecodeGroupMetadata feeds arbitrary values of record type 2 (every
// version prefix) to the decoder: it must never panic, and whatever it
// accepts must survive a re-encode and replay without panicking.
func FuzzDecodeGroupMetadata(f *testing.F) {
	data, err := os.ReadFile(classicGoldenPath)
	if err != nil {
		f.Fatal(err)
	}
	for _, g := range parseGolden(f, data) {
		if g.value != nil {
			f.Add(g.value)
		}
	}
	key, _ := records.EncodeRecord(records.Record{Key: records.GroupMetadataKey{GroupID: "g"}})
	f.Fuzz(func(t *testing.T, value []byte) {
		rec, err := records.DecodeRecord(key, value)
		if err != nil {
			return
		}
		k, v := records.EncodeRecord(rec)
		again, err := records.DecodeRecord(k, v)
		if err != nil || !reflect.DeepEqual(rec, again) {
			t.Fatalf("re-encode changed the record (%v):\n %#v\n %#v", err, rec, again)
		}
		c, _ := New(DefaultConfig())
		_ = c.Replay(rec)
		c.Loaded(0)
	})
}

// FuzzParseConsumerSubscription: the consumer-protocol subscription parser
// never panics, and parses what consumerSubscription writes.
func FuzzParseConsumerSubscription(f *testing.F) {
	f.Add(consumerSubscription([]string{"a", "bb"}))
	f.Add([]byte{0, 1, 0, 0, 0, 1})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, err := records.ParseConsumerSubscriptionTopics(b)
		if err == nil && ts == nil {
			t.Fatal("nil topics without an error")
		}
	})
}

func TestParseConsumerSubscriptionTopics(t *testing.T) {
	ts, err := records.ParseConsumerSubscriptionTopics(consumerSubscription([]string{"orders", "payments"}))
	if err != nil || !reflect.DeepEqual(ts, []string{"orders", "payments"}) {
		t.Fatalf("got %v, %v", ts, err)
	}
	for _, bad := range [][]byte{{}, {0}, {0, 0, 0, 0, 0, 9}, {0, 0, 0x7f, 0, 0, 0}, {0xff, 0xff}} {
		if _, err := records.ParseConsumerSubscriptionTopics(bad); err == nil {
			t.Errorf("%x: no error", bad)
		}
	}
}
