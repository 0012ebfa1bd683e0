package interop

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/coordhost/coordhost/host/runtime"
	"github.com/coordhost/coordhost/host/store"
	"github.com/coordhost/coordhost/host/store/kafkalog"
)

// The replay comparison of the state topic on a real broker
// (`make bench-replay`, docs/BENCHMARKS.md). Gated like
// TestBenchMemoryReplay by COORDHOST_INTEROP=1 and
// COORDHOST_INTEROP_BENCH=1.
const (
	benchReplayRecordsEnv = "COORDHOST_INTEROP_BENCH_RECORDS"    // records in the partition (default 1,000,000)
	benchReplayOutEnv     = "COORDHOST_INTEROP_BENCH_REPLAY_OUT" // where the report goes
	replayFillChunk       = 100_000                              // records per Append (one transaction, batches of max.message.bytes)
)

// replayBenchRecords are n distinct keys (so compaction keeps them all)
// of the size host/store/kafkalog's BenchmarkReplay uses: a 27-byte key,
// a 100-byte value; each value names its record, so a replay that
// returned a wrong record fails the check.
func replayBenchRecords(n int) []runtime.Record {
	recs := make([]runtime.Record, n)
	for i := range recs {
		val := make([]byte, 100)
		copy(val, fmt.Appendf(nil, "value-%07d", i))
		recs[i] = runtime.Record{Key: fmt.Appendf(nil, "group-%07d/member-%06d", i/16, i%16), Value: val}
	}
	return recs
}

// TestStateTopicReplayRealKafka (`make bench-replay`) writes RECORDS
// records (1,000,000 by default) into partition 0 of the state topic
// (store.kind=kafka) on a real Kafka 4.4 broker and into the bbolt store,
// untimed, then times Replay of that partition from each, alternating,
// RUNS times each (3 by default), after one untimed warm-up replay each.
// Every replay is checked record by record (count, order, keys and
// values); no timing is asserted.
func TestStateTopicReplayRealKafka(t *testing.T) {
	needInterop(t)
	if os.Getenv(benchMemEnv) != "1" {
		t.Skipf("set %s=1 (make bench-replay) to run the state topic replay comparison", benchMemEnv)
	}
	n, runs := envInt(t, benchReplayRecordsEnv, 1_000_000), envInt(t, benchRunsEnv, 3)
	if n < 1 || runs < 1 {
		t.Fatalf("%s=%d, %s=%d: want positive numbers", benchReplayRecordsEnv, n, benchRunsEnv, runs)
	}
	dir := logDir(t)
	started, loadBefore, commit := time.Now().UTC(), loadAverage(), gitCommit()
	recs := replayBenchRecords(n)
	b := startReplayBroker(t, dir)
	logs := []struct {
		name string
		log  runtime.Log
	}{{"state topic (Kafka 4.4)", openReplayStateTopic(t, b.addr)}, {"bbolt", openReplayStore(t)}}
	var fills []string
	for _, l := range logs {
		took := fillReplayLog(t, l.name, l.log, recs)
		fills = append(fills, fmt.Sprintf("%s %.1f s", l.name, took.Seconds()))
	}
	// The broker's log cleaner makes one pass over the new segments (all
	// dirty); wait for it, bounded, so that it does not run beside a
	// timed replay.
	waited := time.Now()
	cleaned := len(b.proc.grepWithin(3*time.Minute, "cleaned log "+kafkalog.DefaultTopic+"-0")) > 0
	cleaner := fmt.Sprintf("the log cleaner's pass over the partition ended %.0f s after the writes", time.Since(waited).Seconds())
	if !cleaned {
		cleaner = "no log cleaner pass over the partition logged within 3 minutes of the writes"
	}
	t.Log(cleaner)
	for _, l := range logs {
		replayChecked(t, l.name, l.log, recs) // warm-up, untimed
	}
	var tb strings.Builder
	tb.WriteString("| run | log | s per replay | records/s | load average after |\n|---|---|---:|---:|---|\n")
	var ratios []string
	for run := 1; run <= runs; run++ {
		var took [2]time.Duration
		for i, l := range logs {
			took[i] = replayChecked(t, l.name, l.log, recs)
			row := fmt.Sprintf("| %d | %s | %.2f | %.0f | %s |\n", run, l.name, took[i].Seconds(), float64(n)/took[i].Seconds(), loadAverage())
			tb.WriteString(row)
			t.Log(strings.TrimSpace(row))
		}
		ratios = append(ratios, fmt.Sprintf("%.2f", took[0].Seconds()/took[1].Seconds()))
	}
	var rep strings.Builder
	fmt.Fprintf(&rep, "Commit %s, %s UTC, replay of one partition of %d records, %d run(s) alternated; load average at start %s.\n"+
		"Writing the records (not timed below, %d per Append): %s; %s; one untimed replay of each before the runs.\n\n%s",
		commit, started.Format("2006-01-02 15:04"), n, runs, loadBefore, replayFillChunk, strings.Join(fills, ", "), cleaner, tb.String())
	fmt.Fprintf(&rep, "\nReplay time state topic : bbolt, run by run: %s.\n\nLoad average at end %s.\n", strings.Join(ratios, ", "), loadAverage())
	if out := os.Getenv(benchReplayOutEnv); out != "" {
		if err := os.WriteFile(out, []byte(rep.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("\n%s", rep.String())
}

// startReplayBroker starts the broker with the JVM options of Kafka's
// start script (as the other comparisons) and its log cleaner's reports
// in the broker's output.
func startReplayBroker(t *testing.T, dir string) *broker {
	t.Helper()
	l4j := brokerLog4j(t, dir)
	f, err := os.OpenFile(l4j, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString("logger.cleaner.name = kafka.log\nlogger.cleaner.level = info\n" +
		"logger.cleaner4.name = org.apache.kafka.storage.internals.log\nlogger.cleaner4.level = info\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	saved := jvmFlags
	jvmFlags = append(append([]string(nil), kafkaJVMFlags...), "-Dlog4j2.configurationFile="+l4j)
	defer func() { jvmFlags = saved }()
	port := freePort(t)
	return launchBroker(t, dir, port, map[string]string{
		"listeners":            fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port),
		"advertised.listeners": fmt.Sprintf("PLAINTEXT://127.0.0.1:%d", port),
	})
}

// openReplayStateTopic opens a one-partition state topic on the broker at
// addr with a timeout that covers a replay of the whole partition.
func openReplayStateTopic(t *testing.T, addr string) *kafkalog.Log {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := kafkalog.Open(ctx, kafkalog.Config{ClientOpts: []kgo.Opt{kgo.SeedBrokers(addr)}, Partitions: 1,
		ReplicationFactor: 1, MinInsyncReplicas: 1, Timeout: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// openReplayStore opens a one-partition bbolt store and its log.
func openReplayStore(t *testing.T) *store.Log {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "coordhost.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.Partition(1, func([]byte) (string, error) { return "g", nil }); err != nil {
		t.Fatal(err)
	}
	l, err := store.NewLog(st)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// fillReplayLog takes partition 0 of l over (a replay of the empty
// partition) and appends recs to it in chunks; it returns how long that
// took.
func fillReplayLog(t *testing.T, name string, l runtime.Log, recs []runtime.Record) time.Duration {
	t.Helper()
	start := time.Now()
	if err := l.Replay(0, func(r runtime.Record) error { return fmt.Errorf("%s: partition 0 not empty: key %q", name, r.Key) }); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(recs); i += replayFillChunk {
		if err := l.Append(0, recs[i:min(i+replayFillChunk, len(recs))]); err != nil {
			t.Fatalf("%s: append of records %d onwards: %v", name, i, err)
		}
	}
	return time.Since(start)
}

// replayChecked replays partition 0 of l, checks that it gives recs in
// order, and returns how long the replay took (the check included: a
// comparison of two short byte strings per record, the same on both
// logs).
func replayChecked(t *testing.T, name string, l runtime.Log, recs []runtime.Record) time.Duration {
	t.Helper()
	i := 0
	start := time.Now()
	err := l.Replay(0, func(r runtime.Record) error {
		if i >= len(recs) {
			return fmt.Errorf("record %d (key %q) beyond the %d written", i, r.Key, len(recs))
		}
		if w := recs[i]; !bytes.Equal(r.Key, w.Key) || !bytes.Equal(r.Value, w.Value) {
			return fmt.Errorf("record %d: key %q value %q, want key %q value %q", i, r.Key, r.Value, w.Key, w.Value)
		}
		i++
		return nil
	})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%s: replay: %v", name, err)
	}
	if i != len(recs) {
		t.Fatalf("%s: replayed %d records of %d", name, i, len(recs))
	}
	return took
}
