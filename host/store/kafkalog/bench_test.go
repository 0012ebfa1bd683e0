package kafkalog_test

import (
	"flag"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/coordhost/coordhost/host/runtime"
	"github.com/coordhost/coordhost/host/store"
)

var replayRecords = flag.Int("replay.records", 1_000_000, "records in the partition BenchmarkReplay replays")

// benchRecords are n distinct keys (so compaction keeps them all) of a
// core-like size: a 27-byte key, a 100-byte value.
func benchRecords(n int) []runtime.Record {
	recs := make([]runtime.Record, n)
	val := make([]byte, 100)
	for i := range recs {
		recs[i] = runtime.Record{Key: fmt.Appendf(nil, "group-%07d/member-%06d", i/16, i%16), Value: val}
	}
	return recs
}

// BenchmarkReplay: one partition of -replay.records records replayed from
// the state topic (on kfake, in process) and from the bbolt store, in the
// same run (docs/BENCHMARKS.md). Writing the records is not timed.
func BenchmarkReplay(b *testing.B) {
	recs := benchRecords(*replayRecords)
	const chunk = 10000
	logs := map[string]func(b *testing.B) runtime.Log{
		"bbolt": func(b *testing.B) runtime.Log {
			st, err := store.Open(filepath.Join(b.TempDir(), "coordhost.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			if err := st.Partition(1, func([]byte) (string, error) { return "g", nil }); err != nil {
				b.Fatal(err)
			}
			for i := 0; i < len(recs); i += chunk {
				if err := st.AppendPartitions([]store.PartitionBatch{{Records: recs[i:min(i+chunk, len(recs))]}}); err != nil {
					b.Fatal(err)
				}
			}
			l, err := store.NewLog(st)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { l.Close() })
			return l
		},
		"kafka": func(b *testing.B) runtime.Log {
			l := open(b, cluster(b), 1)
			state(b, l, 0)
			for i := 0; i < len(recs); i += chunk {
				if err := l.Append(0, recs[i:min(i+chunk, len(recs))]); err != nil {
					b.Fatal(err)
				}
			}
			return l
		},
	}
	for _, name := range []string{"bbolt", "kafka"} {
		b.Run(name, func(b *testing.B) {
			l := logs[name](b)
			b.ResetTimer()
			for range b.N {
				n := 0
				if err := l.Replay(0, func(runtime.Record) error { n++; return nil }); err != nil {
					b.Fatal(err)
				}
				if n != len(recs) {
					b.Fatalf("replayed %d records of %d", n, len(recs))
				}
			}
			b.ReportMetric(float64(len(recs))*float64(b.N)/b.Elapsed().Seconds(), "records/s")
		})
	}
}
