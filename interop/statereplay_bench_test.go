package interop

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/core/records"
	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/loop"
	"github.com/coordhost/coordhost/host/runtime"
	"github.com/coordhost/coordhost/host/store"
)

// The group-state replay comparison (`make bench-replay`,
// docs/BENCHMARKS.md): the same group records, encoded once by core (in
// Kafka's __consumer_offsets format), loaded by a real Kafka 4.4 broker's
// group coordinator and replayed by coordhost from its bbolt store.
const (
	benchStateRecordsEnv = "COORDHOST_INTEROP_BENCH_STATE_RECORDS" // group-state records (default 1,000,000; a multiple of 100,000)
	stateUnit            = 100_000                                 // records per unit of the mix (stateMix)
	statePartitions      = 50                                      // __consumer_offsets partitions on both sides
	benchStateSideEnv    = "COORDHOST_INTEROP_BENCH_STATE_SIDE"    // "kafka" or "coordhost": that side only (default both)
)

// stateMix is the record mix of one unit of 100,000 records: streams
// groups of 10 members (3 group records and 3 per member: 33), consumer
// (KIP-848) groups of 10 members (2 group records and 3 per member: 32)
// and classic groups of 3 members (one GroupMetadata record each).
var stateMix = struct{ streams, consumer, classic int }{2000, 1000, 2000}

// stateFleet is the generated records, by __consumer_offsets partition
// (Kafka's rule), and the groups they hold.
type stateFleet struct {
	parts                      [statePartitions][]runtime.Record
	n                          int
	streams, consumer, classic int
}

// groupStateRecords builds units × 100,000 records of steady groups as
// Kafka 4.4 writes them, each key once (nothing for compaction to
// remove): in each group the order of a join (member metadata, group
// metadata, targets, target metadata, current assignments). Names and
// ids have a real fleet's sizes (22-character member ids, 36-character
// process ids, per-thread client ids).
func groupStateRecords(units int) *stateFleet {
	f := &stateFleet{streams: units * stateMix.streams, consumer: units * stateMix.consumer, classic: units * stateMix.classic}
	rng := rand.New(rand.NewPCG(1, 2))
	memberID := func() string {
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:8], rng.Uint64())
		binary.LittleEndian.PutUint64(b[8:], rng.Uint64())
		return base64.RawURLEncoding.EncodeToString(b[:])
	}
	uuid := func() string {
		a, b := rng.Uint64(), rng.Uint64()
		return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", a>>32, a>>16&0xffff, a&0xffff, b>>48, b&0xffffffffffff)
	}
	host := func() string { return fmt.Sprintf("/10.%d.%d.%d", rng.IntN(256), rng.IntN(256), rng.IntN(256)) }
	add := func(group string, recs ...records.Record) {
		p := runtime.PartitionFor(group, statePartitions)
		for _, r := range recs {
			k, v := records.EncodeRecord(r)
			f.parts[p] = append(f.parts[p], runtime.Record{Key: k, Value: v})
			f.n++
		}
	}
	const epoch, members = 11, 10
	tasks := func(p int, epochs bool) []records.TaskIDs {
		t := records.TaskIDs{SubtopologyID: "0", Partitions: []int32{int32(p)}}
		if epochs {
			t.AssignmentEpochs = []int32{epoch}
		}
		return []records.TaskIDs{t}
	}
	for g := 0; g < f.streams; g++ {
		id := fmt.Sprintf("streams-app-%06d", g)
		ids := make([]string, members)
		var recs []records.Record
		for i := range ids {
			ids[i] = memberID()
			proc := uuid()
			recs = append(recs, records.Record{Key: records.StreamsGroupMemberMetadataKey{GroupID: id, MemberID: ids[i]}, Value: records.StreamsGroupMemberMetadataValue{
				ClientID: id + "-" + proc + "-StreamThread-1-consumer", ClientHost: host(), RebalanceTimeoutMs: 300000, ProcessID: proc,
				ClientTags: []records.KeyValue{}}})
		}
		recs = append(recs, records.Record{Key: records.StreamsGroupTopologyKey{GroupID: id}, Value: records.StreamsGroupTopologyValue{Subtopologies: []records.Subtopology{{
			SubtopologyID: "0", SourceTopics: []string{id + "-input"}, StateChangelogTopics: []records.TopicInfo{{Name: id + "-store-changelog"}}}}}},
			records.Record{Key: records.StreamsGroupMetadataKey{GroupID: id}, Value: records.StreamsGroupMetadataValue{Epoch: epoch, MetadataHash: rng.Int64(),
				LastAssignmentConfigs: []records.KeyValue{{Key: "num.standby.replicas", Value: "1"}}, StoredDescriptionTopologyEpoch: -1, FailedDescriptionTopologyEpoch: -1}})
		for i, m := range ids {
			recs = append(recs, records.Record{Key: records.StreamsGroupTargetAssignmentMemberKey{GroupID: id, MemberID: m}, Value: records.StreamsGroupTargetAssignmentMemberValue{
				ActiveTasks: tasks(i, false), StandbyTasks: tasks((i+1)%members, false), WarmupTasks: []records.TaskIDs{}}})
		}
		recs = append(recs, records.Record{Key: records.StreamsGroupTargetAssignmentMetadataKey{GroupID: id},
			Value: records.StreamsGroupTargetAssignmentMetadataValue{AssignmentEpoch: epoch, AssignmentTimestamp: 1764720000000}})
		for i, m := range ids {
			recs = append(recs, records.Record{Key: records.StreamsGroupCurrentMemberAssignmentKey{GroupID: id, MemberID: m}, Value: records.StreamsGroupCurrentMemberAssignmentValue{
				MemberEpoch: epoch, PreviousMemberEpoch: epoch - 1, State: 1, ActiveTasks: tasks(i, true), StandbyTasks: tasks((i+1)%members, false),
				WarmupTasks: []records.TaskIDs{}, ActiveTasksPendingRevocation: []records.TaskIDs{}, StandbyTasksPendingRevocation: []records.TaskIDs{},
				WarmupTasksPendingRevocation: []records.TaskIDs{}}})
		}
		add(id, recs...)
	}
	uniform := "uniform"
	for g := 0; g < f.consumer; g++ {
		id := fmt.Sprintf("consumer-app-%06d", g)
		var topic [16]byte
		binary.LittleEndian.PutUint64(topic[:8], rng.Uint64())
		binary.LittleEndian.PutUint64(topic[8:], rng.Uint64())
		ids := make([]string, members)
		var recs []records.Record
		for i := range ids {
			ids[i] = memberID()
			recs = append(recs, records.Record{Key: records.ConsumerGroupMemberMetadataKey{GroupID: id, MemberID: ids[i]}, Value: records.ConsumerGroupMemberMetadataValue{
				ClientID: fmt.Sprintf("consumer-%s-%d", id, i+1), ClientHost: host(), SubscribedTopicNames: []string{id + "-input"},
				RebalanceTimeoutMs: 300000, ServerAssignor: &uniform}})
		}
		recs = append(recs, records.Record{Key: records.ConsumerGroupMetadataKey{GroupID: id}, Value: records.ConsumerGroupMetadataValue{Epoch: epoch, MetadataHash: rng.Int64(), CreationTimeMs: -1}})
		for i, m := range ids {
			recs = append(recs, records.Record{Key: records.ConsumerGroupTargetAssignmentMemberKey{GroupID: id, MemberID: m}, Value: records.ConsumerGroupTargetAssignmentMemberValue{
				TopicPartitions: []records.TopicPartitions{{TopicID: topic, Partitions: []int32{int32(i)}}}}})
		}
		recs = append(recs, records.Record{Key: records.ConsumerGroupTargetAssignmentMetadataKey{GroupID: id},
			Value: records.ConsumerGroupTargetAssignmentMetadataValue{AssignmentEpoch: epoch, AssignmentTimestamp: 1764720000000}})
		for i, m := range ids {
			recs = append(recs, records.Record{Key: records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: id, MemberID: m}, Value: records.ConsumerGroupCurrentMemberAssignmentValue{
				MemberEpoch: epoch, PreviousMemberEpoch: epoch - 1, State: 0, AssignedPartitions: []records.TopicPartitions{{TopicID: topic, Partitions: []int32{int32(i)}, AssignmentEpochs: []int32{epoch}}},
				PartitionsPendingRevocation: []records.TopicPartitions{}}})
		}
		add(id, recs...)
	}
	protocol := "cooperative-sticky"
	for g := 0; g < f.classic; g++ {
		id := fmt.Sprintf("classic-app-%06d", g)
		v := records.GroupMetadataValue{Version: 3, ProtocolType: "consumer", Generation: 5, Protocol: &protocol, CurrentStateTimestamp: 1764720000000}
		for i := 0; i < 3; i++ {
			sub := kmsg.NewConsumerMemberMetadata()
			sub.Version, sub.Topics = 1, []string{id + "-input"}
			asg := kmsg.NewConsumerMemberAssignment()
			asg.Version = 1
			asg.Topics = []kmsg.ConsumerMemberAssignmentTopic{{Topic: id + "-input", Partitions: []int32{int32(i)}}}
			m := records.GroupMetadataMember{MemberID: fmt.Sprintf("consumer-%s-%d-%s", id, i+1, uuid()), ClientID: fmt.Sprintf("consumer-%s-%d", id, i+1),
				ClientHost: host(), RebalanceTimeout: 300000, SessionTimeout: 45000, Subscription: sub.AppendTo(nil), Assignment: asg.AppendTo(nil)}
			v.Members = append(v.Members, m)
		}
		v.Leader = &v.Members[0].MemberID
		add(id, records.Record{Key: records.GroupMetadataKey{GroupID: id}, Value: v})
	}
	return f
}

// stateResult is one side's start-to-serving figures.
type stateResult struct {
	write     time.Duration // writing the records (not part of the replay)
	replayed  time.Duration // process start → the coordinator's state loaded (coordhost: its "replayed" log line; Kafka: the 50th "Finished loading")
	serving   time.Duration // process start → ListGroups lists every group
	records   int64         // records the coordinator reports loaded
	loadMax   time.Duration // Kafka: the longest partition load
	loadSum   time.Duration // Kafka: the sum of the partition loads
	storeScan time.Duration // coordhost: "store opened" → "coordinator state replayed" (its log's times)
}

// TestGroupStateReplayRealKafka (`make bench-replay`) generates STATE
// group records (1,000,000 by default, stateMix) and, RUNS times,
// alternates: a Kafka 4.4 broker (the records produced into
// __consumer_offsets, each to its group's partition, then a graceful
// restart) and coordhost (the records appended to its bbolt store,
// 50 partitions, then a start). On each it times the process start until
// the coordinator has loaded them and until ListGroups lists every group
// with its type. It asserts no timing, only that both sides loaded every
// record and list every group.
func TestGroupStateReplayRealKafka(t *testing.T) {
	needInterop(t)
	if os.Getenv(benchMemEnv) != "1" {
		t.Skipf("set %s=1 (make bench-replay) to run the group-state replay comparison", benchMemEnv)
	}
	n, runs := envInt(t, benchStateRecordsEnv, 1_000_000), envInt(t, benchRunsEnv, 1)
	if n%stateUnit != 0 || n < stateUnit {
		t.Fatalf("%s=%d: want a multiple of %d", benchStateRecordsEnv, n, stateUnit)
	}
	dir := logDir(t)
	started, loadBefore, commit := time.Now().UTC(), loadAverage(), gitCommit()
	f := groupStateRecords(n / stateUnit)
	if f.n != n {
		t.Fatalf("generated %d records, want %d", f.n, n)
	}
	var tb strings.Builder
	tb.WriteString("| run | server | records written in | start → state loaded | start → ListGroups lists all | records loaded (log) | coordinator's own load | records/s (start → loaded) | load average after |\n|---|---|---:|---:|---:|---:|---:|---:|---|\n")
	row := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		tb.WriteString(line)
		t.Log(strings.TrimSpace(line))
	}
	var ratios []string
	side := os.Getenv(benchStateSideEnv)
	for run := 1; run <= runs; run++ {
		var kr, cr stateResult
		if side != "coordhost" {
			kr = kafkaStateReplay(t, dir, run, f)
			row("| %d | kafka | %v | %v | %v | %d | max %v, sum %v over %d partitions | %.0f | %s |\n", run, kr.write.Round(time.Millisecond), kr.replayed.Round(time.Millisecond),
				kr.serving.Round(time.Millisecond), kr.records, kr.loadMax, kr.loadSum, statePartitions, float64(n)/kr.replayed.Seconds(), loadAverage())
		}
		if side == "kafka" {
			continue
		}
		cr = coordhostStateReplay(t, dir, run, f)
		row("| %d | coordhost | %v | %v | %v | %d | %v (store opened → replayed) | %.0f | %s |\n", run, cr.write.Round(time.Millisecond), cr.replayed.Round(time.Millisecond),
			cr.serving.Round(time.Millisecond), cr.records, cr.storeScan, float64(n)/cr.replayed.Seconds(), loadAverage())
		if side == "" {
			ratios = append(ratios, fmt.Sprintf("%.2f", cr.replayed.Seconds()/kr.replayed.Seconds()))
		}
	}
	var rep strings.Builder
	fmt.Fprintf(&rep, "Commit %s, %s UTC, %d group-state records (%d streams groups × 10 members, %d consumer groups × 10 members, %d classic groups × 3 members; 33, 32 and 1 records a group), "+
		"%d run(s), Kafka 4.4 then coordhost; load average at start %s.\n\n%s\nStart → state loaded, coordhost : Kafka, run by run: %s.\n\nLoad average at end %s.\n",
		commit, started.Format("2006-01-02 15:04"), n, f.streams, f.consumer, f.classic, runs, loadBefore, tb.String(), strings.Join(ratios, ", "), loadAverage())
	if out := os.Getenv(benchReplayOutEnv); out != "" {
		if err := os.WriteFile(strings.TrimSuffix(out, ".md")+"-state.md", []byte(rep.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("\n%s", rep.String())
}

// awaitGroups polls ListGroups at addr from start until it lists every
// group of f with its type, and returns the time since start.
func awaitGroups(t *testing.T, addr string, f *stateFleet, start time.Time) time.Duration {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RetryTimeout(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var last string
	for ctx.Err() == nil {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version = 5
		resp, err := req.RequestWith(ctx, cl)
		if err == nil {
			count := map[string]int{}
			for _, g := range resp.Groups {
				kind, _, _ := strings.Cut(g.Group, "-")
				if strings.HasPrefix(g.Group, kind+"-app-") && strings.EqualFold(g.GroupType, kind) {
					count[kind]++
				}
			}
			if count["streams"] == f.streams && count["consumer"] == f.consumer && count["classic"] == f.classic {
				return time.Since(start)
			}
			last = fmt.Sprintf("%v (error %v)", count, kerr.ErrorForCode(resp.ErrorCode))
		} else {
			last = err.Error()
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("ListGroups at %s: not every group listed after 10m; last %s", addr, last)
	return 0
}

func kafkaStateReplay(t *testing.T, dir string, run int, f *stateFleet) stateResult {
	saved := jvmFlags
	jvmFlags = append(append([]string(nil), kafkaJVMFlags...), "-Dlog4j2.configurationFile="+brokerLog4j(t, dir))
	defer func() { jvmFlags = saved }()
	port := freePort(t)
	b := launchBroker(t, dir, port, map[string]string{
		"listeners":                    fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port),
		"advertised.listeners":         fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port),
		"offsets.topic.num.partitions": strconv.Itoa(statePartitions),
	})
	cfg, err := os.ReadFile(filepath.Join(dir, "server.properties"))
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, fmt.Sprintf("server-state%d.properties", run))
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	var r stateResult
	r.write = produceState(t, b.addr, f)
	if err := b.proc.stop(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	p := startJavaFrom(t, appDir, "broker-state", dir, "kafka.Kafka", cfgPath)
	defer p.kill()
	seen := map[string]bool{}
	for deadline := start.Add(10 * time.Minute); len(seen) < statePartitions; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("broker: %d of %d partitions loaded after 10m\n%s", len(seen), statePartitions, p.tail(40))
		}
		for _, l := range p.grep("Finished loading") {
			if m := loadingLine.FindStringSubmatch(l); m != nil && !seen[m[1]] {
				seen[m[1]] = true
				ms, _ := strconv.Atoi(m[2])
				d := time.Duration(ms) * time.Millisecond
				r.loadSum += d
				r.loadMax = max(r.loadMax, d)
				if c := loadedCount.FindStringSubmatch(l); c != nil {
					k, _ := strconv.ParseInt(c[1], 10, 64)
					r.records += k
				}
			}
		}
		r.replayed = time.Since(start)
	}
	r.serving = awaitGroups(t, b.addr, f, start)
	if r.records != int64(f.n) {
		t.Errorf("Kafka's coordinator loaded %d records, want %d", r.records, f.n)
	}
	return r
}

// produceState writes the fleet's records into __consumer_offsets, each
// to its group's partition. The broker takes records for an internal
// topic only from the client id of its own admin tools.
func produceState(t *testing.T, addr string, f *stateFleet) time.Duration {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID("__admin_client"), kgo.DisableIdempotentWrite(),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RequiredAcks(kgo.AllISRAcks()), kgo.MaxBufferedRecords(200_000), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := groupsServed(addr, "state-probe", 2*time.Minute); err != nil { // creates __consumer_offsets
		t.Fatal(err)
	}
	start := time.Now()
	var firstErr error
	errs := make(chan error, 1)
	for p, recs := range f.parts {
		for _, r := range recs {
			cl.Produce(ctx, &kgo.Record{Topic: "__consumer_offsets", Partition: int32(p), Key: r.Key, Value: r.Value}, func(_ *kgo.Record, err error) {
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			})
		}
	}
	if err := cl.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case firstErr = <-errs:
	default:
	}
	if firstErr != nil {
		t.Fatalf("producing the group records into __consumer_offsets: %v", firstErr)
	}
	return time.Since(start)
}

var (
	storeOpenedLine = "msg=\"store opened\""
	replayedAt      = func(l string) (time.Time, bool) {
		ts, _, ok := strings.Cut(strings.TrimPrefix(l, "time="), " ")
		if !ok {
			return time.Time{}, false
		}
		at, err := time.Parse(time.RFC3339Nano, ts)
		return at, err == nil
	}
)

func coordhostStateReplay(t *testing.T, dir string, run int, f *stateFleet) stateResult {
	c := startBenchCoordhost(t, dir, 2, "--admin.token="+benchMemToken)
	defer func() { c.proc.kill() }()
	if err := c.proc.stop(2 * time.Minute); err != nil {
		t.Fatal(err)
	}
	var dataDir string
	for _, a := range c.args {
		if v, ok := strings.CutPrefix(a, "--data.dir="); ok {
			dataDir = v
		}
	}
	var r stateResult
	r.write = appendState(t, filepath.Join(dataDir, host.StoreFile), f)
	start := time.Now()
	c.proc = startProc(t, fmt.Sprintf("coordhost-state%d", run), dir, coordhostBinary(t), c.args...)
	line, _, err := c.proc.waitLine("coordinator state replayed", 0, 10*time.Minute)
	if err != nil {
		t.Fatalf("coordhost: %v\n%s", err, c.proc.tail(40))
	}
	r.replayed = time.Since(start)
	if m := replayedLine.FindStringSubmatch(line); m != nil {
		r.records, _ = strconv.ParseInt(m[1], 10, 64)
	}
	if opened := c.proc.grep(storeOpenedLine); len(opened) > 0 {
		a, ok1 := replayedAt(opened[0])
		b, ok2 := replayedAt(line)
		if ok1 && ok2 {
			r.storeScan = b.Sub(a)
		}
	}
	r.serving = awaitGroups(t, c.addr, f, start)
	hc := &http.Client{Timeout: 5 * time.Second}
	if resp, err := hc.Get("http://" + c.adminAddr() + "/readyz"); err != nil || resp.StatusCode != 200 {
		t.Errorf("coordhost /readyz after the replay: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}
	if r.records != int64(f.n) {
		t.Errorf("coordhost replayed %d records, want %d", r.records, f.n)
	}
	return r
}

// appendState appends the fleet's records to the bbolt store at path (the
// one a stopped coordhost left), partition by partition.
func appendState(t testing.TB, path string, f *stateFleet) time.Duration {
	t.Helper()
	start := time.Now()
	st, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Partition(statePartitions, func(key []byte) (string, error) {
		rec, err := records.DecodeRecord(key, nil)
		return rec.Key.Group(), err
	}); err != nil {
		t.Fatal(err)
	}
	l, err := store.NewLog(st)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for p, recs := range f.parts {
		if err := l.Replay(p, func(runtime.Record) error { return nil }); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(recs); i += replayFillChunk {
			if err := l.Append(p, recs[i:min(i+replayFillChunk, len(recs))]); err != nil {
				t.Fatalf("store: partition %d: %v", p, err)
			}
		}
	}
	return time.Since(start)
}

// BenchmarkGroupStateReplay is the coordhost side of the group-state
// replay in one process, with no broker and no data plane: a store of
// the fleet's records (units of 100,000, COORDHOST_BENCH_STATE_UNITS,
// default 1; written once, untimed) opened and replayed into a loop of
// core coordinators as a start does — OpenForLoad with its integrity
// pass, then every partition's replay and its Loaded step, and the wait
// for bbolt's check, which ran beside them. It reports
// records/s, and the CPU time a record took
// (cpu-ns/record, the process's user and system time over the timed
// parts: on a shared machine the wall time depends on the other jobs).
func BenchmarkGroupStateReplay(b *testing.B) {
	units := 1
	if v, err := strconv.Atoi(os.Getenv("COORDHOST_BENCH_STATE_UNITS")); err == nil && v > 0 {
		units = v
	}
	f := groupStateRecords(units)
	path := filepath.Join(b.TempDir(), host.StoreFile)
	appendState(b, path, f)
	cc := host.CoreConfig(nil)
	var cpu time.Duration // CPU time of the process in the timed parts (GC included)
	b.ResetTimer()
	for b.Loop() {
		cpuStart := cpuTime()
		st, err := store.OpenForLoad(path) // as a start opens it; loop.New waits for its check
		if err != nil {
			b.Fatal(err)
		}
		n := st.RecordsAtOpen()
		l, err := loop.New(loop.Deps{NewCore: func() (*core.Coordinator, error) { return core.New(cc) }, Store: st, Partitions: statePartitions})
		if err != nil {
			b.Fatal(err)
		}
		cpu += cpuTime() - cpuStart
		b.StopTimer()
		if n != f.n {
			b.Fatalf("store holds %d records, want %d", n, f.n)
		}
		if err := l.Shutdown(context.Background()); err != nil {
			b.Fatal(err)
		}
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(f.n)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(f.n*b.N), "cpu-ns/record")
}

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
