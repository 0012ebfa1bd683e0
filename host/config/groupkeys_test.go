package config

import (
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/core"
)

// docGroupKeys parses the per-group key table of docs/CONFIG.md into
// "key | default | Kafka | at run time" rows, by key.
func docGroupKeys(t *testing.T, doc string) map[string]string {
	t.Helper()
	const header = "| key | default | Kafka | at run time | meaning |"
	start := strings.Index(doc, header)
	if start < 0 {
		t.Fatalf("docs/CONFIG.md: no per-group key table with header %q", header)
	}
	table, _, _ := strings.Cut(doc[start:], "\n\n")
	rows := map[string]string{}
	for _, line := range strings.Split(table, "\n")[2:] {
		cells := strings.Split(strings.Trim(line, "| "), " | ")
		if len(cells) < 5 {
			t.Fatalf("docs/CONFIG.md: short row %q", line)
		}
		name := strings.Trim(cells[0], "`")
		if _, dup := rows[name]; dup {
			t.Errorf("docs/CONFIG.md: %s documented twice", name)
		}
		rows[name] = strings.Join(cells[:4], " | ")
	}
	return rows
}

// docRow renders k as its row in the doc table should read.
func docRow(k key) string {
	def := "`" + FormatValue(k.def) + "`"
	if FormatValue(k.def) == "" {
		def = "empty"
	}
	kafka, runtime := "coordhost", "yes"
	if k.kafka {
		kafka = "Kafka"
	}
	if k.fileOnly {
		runtime = "no"
	}
	return strings.Join([]string{"`" + k.name + "`", def, kafka, runtime}, " | ")
}

// TestDocTableMatchesKeyTable keeps docs/CONFIG.md's per-group table and
// its runtime bounds equal to the key table, in both directions.
func TestDocTableMatchesKeyTable(t *testing.T) {
	raw, err := os.ReadFile("../../docs/CONFIG.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	rows := docGroupKeys(t, doc)
	for _, k := range groupKeys {
		got, ok := rows[k.name]
		if !ok {
			t.Errorf("docs/CONFIG.md: per-group key %s is not in the table", k.name)
			continue
		}
		if want := docRow(k); got != want {
			t.Errorf("docs/CONFIG.md: row\n  %s\nwant\n  %s", got, want)
		}
		delete(rows, k.name)
	}
	for name := range rows {
		t.Errorf("docs/CONFIG.md documents %s, which is not a per-group key", name)
	}
	flat := strings.Join(strings.Fields(doc), " ")
	for _, k := range groupKeys {
		if k.runtime == nil {
			continue
		}
		b := k.runtime
		var r string
		switch {
		case b.min == math.MinInt64:
			r = fmt.Sprintf("≤ %d", b.max)
		case b.max == math.MaxInt64:
			r = fmt.Sprintf("≥ %d", b.min)
		default:
			r = fmt.Sprintf("%d–%d", b.min, b.max)
		}
		if want := "`" + k.name + "` " + r; !strings.Contains(flat, want) {
			t.Errorf("docs/CONFIG.md does not state Kafka's runtime bound %q", want)
		}
	}
}

// TestDefaultsAreCore checks that the defaults of the keys core reads are
// core's, so an unconfigured group gets exactly core.DefaultConfig.
func TestDefaultsAreCore(t *testing.T) {
	want := core.DefaultConfig()
	want.Streams.AssignorName = want.Assignors[0]
	want.Streams.RackAwareAssignmentTags = []string{}
	if got := (&Groups{}).Defaults().Core(core.DefaultConfig()); !reflect.DeepEqual(got, want) {
		t.Fatalf("defaults as core config:\n%+v\nwant\n%+v", got, want)
	}
}

// TestCoreReceivesEveryKey sets every key core reads to a value other than
// its default and checks that it lands in the matching core field.
func TestCoreReceivesEveryKey(t *testing.T) {
	values := map[string]any{
		"streams.session.timeout.ms": int64(50001), "streams.heartbeat.interval.ms": int64(5001),
		"streams.num.standby.replicas": int64(1), "streams.num.warmup.replicas": int64(3),
		"streams.acceptable.recovery.lag": int64(7), "streams.probing.rebalance.interval.ms": int64(9),
		"streams.initial.rebalance.delay.ms": int64(11), "streams.assignment.interval.ms": int64(13),
		"streams.task.offset.interval.ms": int64(17), "streams.assignor.name": "ha",
		"streams.rack.aware.assignment.tags": []string{"zone"}, "streams.max.size": int64(19),
		"streams.max.topology.size": int64(53), "streams.unreleased.heartbeat.interval.ms": int64(61),
		"streams.rebalance.heartbeat.interval.ms": int64(67),
		"streams.migration.policy":                "upgrade", "group.initial.rebalance.delay.ms": int64(23),
		"group.min.session.timeout.ms": int64(29), "group.max.session.timeout.ms": int64(31), "group.max.size": int64(37),
		"consumer.session.timeout.ms": int64(50003), "consumer.heartbeat.interval.ms": int64(5003),
		"consumer.assignment.interval.ms": int64(59),
		"group.consumer.migration.policy": "downgrade",
		// keys core does not read
		"streams.probing.policy": "builtin", "streams.end.offsets.refresh.ms": int64(41), "streams.assignor.timeout.ms": int64(43),
		"streams.assignor.shadow": []string{"ha", "candidate"}, "streams.assignor.candidate.name": "candidate",
		"streams.assignor.candidate.percent": int64(47),
	}
	for _, k := range groupKeys {
		if _, ok := values[k.name]; !ok {
			t.Fatalf("no test value for %s", k.name)
		}
	}
	g := (&Groups{defaults: values}).Defaults()
	want := core.DefaultConfig()
	want.Streams = core.StreamsConfig{SessionTimeoutMs: 50001, HeartbeatIntervalMs: 5001, NumStandbyReplicas: 1, NumWarmupReplicas: 3,
		AcceptableRecoveryLag: 7, ProbingIntervalMs: 9, InitialRebalanceDelayMs: 11, AssignmentIntervalMs: 13, TaskOffsetIntervalMs: 17,
		AssignorName: "ha", RackAwareAssignmentTags: []string{"zone"}, MaxSize: 19, MaxTopologySize: 53, UnreleasedHeartbeatIntervalMs: 61,
		RebalanceHeartbeatIntervalMs: 67}
	want.StreamsMigrationPolicy = core.MigrationUpgrade
	want.ConsumerMigrationPolicy = core.MigrationDowngrade
	want.Classic = core.ClassicConfig{InitialRebalanceDelayMs: 23, MinSessionTimeoutMs: 29, MaxSessionTimeoutMs: 31, MaxSize: 37,
		NewMemberJoinTimeoutMs: want.Classic.NewMemberJoinTimeoutMs}
	want.Consumer = core.ConsumerConfig{SessionTimeoutMs: 50003, HeartbeatIntervalMs: 5003, AssignmentIntervalMs: 59}
	if got := g.Core(core.DefaultConfig()); !reflect.DeepEqual(got, want) {
		t.Fatalf("core config:\n%+v\nwant\n%+v", got, want)
	}
	if g.StreamsProbingPolicy != "builtin" || g.StreamsEndOffsetsRefreshMs != 41 || g.StreamsAssignorTimeoutMs != 43 ||
		!reflect.DeepEqual(g.StreamsAssignorShadow, []string{"ha", "candidate"}) || g.StreamsAssignorCandidate != "candidate" ||
		g.StreamsAssignorCandidatePercent != 47 {
		t.Fatalf("host-only keys: %+v", g)
	}
	s, c, p := g.CoreGroup()
	if *s.SessionTimeoutMs != 50001 || *s.AssignorName != "ha" || *s.ProbingPolicy != "" || *s.MaxTopologySize != 53 || *s.UnreleasedHeartbeatIntervalMs != 61 || *s.RebalanceHeartbeatIntervalMs != 67 || *c.MaxSize != 37 || p != core.MigrationUpgrade {
		t.Fatalf("per-group: streams %+v classic %+v policy %v", s, c, p)
	}
	if cons := g.CoreConsumer(); *cons.SessionTimeoutMs != 50003 || *cons.HeartbeatIntervalMs != 5003 || *cons.AssignmentIntervalMs != 59 {
		t.Fatalf("per-group consumer: %+v", cons)
	}
	if p := g.CoreConsumerMigrationPolicy(); p != core.MigrationDowngrade {
		t.Fatalf("consumer migration policy %v", p)
	}
}

// TestFileOnlyKeyRejectedAtRunTime: the assignor timeout is the operator's,
// not a client's, to change.
func TestFileOnlyKeyRejectedAtRunTime(t *testing.T) {
	_, err := ParseDynamic("streams.assignor.timeout.ms", "60000")
	if err == nil || !strings.Contains(err.Error(), "only in the config file") {
		t.Fatalf("ParseDynamic: %v, want a file-only error", err)
	}
	c, err := load(t, []string{"--groups.defaults.streams.assignor.timeout.ms=5000"})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Groups.For("g").StreamsAssignorTimeoutMs; got != 5000 {
		t.Fatalf("from a flag: %d", got)
	}
	if got := (&Groups{}).Defaults().StreamsAssignorTimeoutMs; got != 30000 {
		t.Fatalf("default: %d, want 30000", got)
	}
}
