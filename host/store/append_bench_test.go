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
	s := benchStore(b)
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

// BenchmarkAppendExpirySlice appends what a slice of a mass expiry
// writes, to one partition of a store holding a group of 4,096 members
// (3 records each, and the group's metadata): an op is a batch of 64
// fenced members, each 3 tombstones and a rewrite of the group's
// metadata record; the store is refilled, untimed, when it runs out of
// members.
func BenchmarkAppendExpirySlice(b *testing.B) {
	s := benchStore(b)
	const members, slice = 4096, 64
	value := make([]byte, 200)
	kinds := []string{"current", "target", "member"}
	key := func(kind string, m int) []byte { return fmt.Appendf(nil, "g/%s-%05d", kind, m) }
	fill := func() {
		var all []Record
		for m := 0; m < members; m++ {
			for _, k := range kinds {
				all = append(all, Record{Key: key(k, m), Value: value})
			}
		}
		all = append(all, Record{Key: []byte("g/metadata"), Value: value})
		if err := s.AppendPartitions([]PartitionBatch{{Records: all}}); err != nil {
			b.Fatal(err)
		}
	}
	fill()
	b.ReportAllocs()
	b.ResetTimer()
	m := 0
	for i := 0; i < b.N; i++ {
		if m == members {
			b.StopTimer()
			fill()
			m = 0
			b.StartTimer()
		}
		batch := make([]Record, 0, 4*slice)
		for end := m + slice; m < end; m++ {
			for _, k := range kinds {
				batch = append(batch, Record{Key: key(k, m)})
			}
			batch = append(batch, Record{Key: []byte("g/metadata"), Value: value})
		}
		if err := s.AppendPartitions([]PartitionBatch{{Records: batch}}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchStore opens a store of one partition, holding group "g", that b
// closes when it ends.
func benchStore(b *testing.B) *Store {
	s, err := Open(filepath.Join(b.TempDir(), "bench.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if err := s.Partition(1, func([]byte) (string, error) { return "g", nil }); err != nil {
		b.Fatal(err)
	}
	return s
}
