package store

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkAppendOverwrites appends batches of 32 records that each
// replace a live key (a large group's target part: every record
// overwrites a member's earlier record) to one partition of a store of
// 4,096 keys: the per-record work and garbage of the append path (its
// allocations are bbolt's cursors and the encoded entries).
func BenchmarkAppendOverwrites(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := s.Partition(1, func([]byte) (string, error) { return "g", nil }); err != nil {
		b.Fatal(err)
	}
	const keys, batch = 4096, 32
	value := make([]byte, 200)
	record := func(i int) Record { return Record{Key: fmt.Appendf(nil, "g/member-%05d", i%keys), Value: value} }
	var all []Record
	for i := 0; i < keys; i++ {
		all = append(all, record(i))
	}
	if err := s.AppendPartitions([]PartitionBatch{{Records: all}}); err != nil {
		b.Fatal(err)
	}
	batches := make([][]Record, keys/batch)
	for i := range batches {
		for j := 0; j < batch; j++ {
			batches[i] = append(batches[i], record(i*batch+j))
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := s.AppendPartitions([]PartitionBatch{{Records: batches[i%len(batches)]}}); err != nil {
			b.Fatal(err)
		}
	}
}
