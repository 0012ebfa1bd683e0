package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime/debug"

	bolt "go.etcd.io/bbolt"

	"github.com/coordhost/coordhost/host/runtime"
)

// Partitions: a partitioned store (format 4, logs.go) keeps one log per
// partition, so that a partition replays alone, and records its
// partition count in the meta bucket. The count is fixed when the store
// is partitioned: the partition of a group depends on it. (Formats 2 and
// 3 kept the records in one bucket, with one sequence index per
// partition, partitions/<partition uint32> : seq(8) -> key.)

var (
	bucketPartitions = []byte("partitions")
	keyPartitions    = []byte("partitions")
)

// ErrPartitionCount is wrapped by Partition when the store was created
// with another partition count.
var ErrPartitionCount = errors.New("store partition count differs")

// Partitions returns the store's partition count, 0 if it is not
// partitioned yet.
func (s *Store) Partitions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.parts
}

func (s *Store) initPartitions(tx *bolt.Tx, format uint32) error {
	v := tx.Bucket(bucketMeta).Get(keyPartitions)
	parts := tx.Bucket(bucketPartitions)
	if format == formatVersionLogs {
		parts = tx.Bucket(bucketLogs)
	}
	if len(v) != 4 || parts == nil {
		return s.corrupt("partitioned store without its partition count or indexes")
	}
	s.parts = int(binary.BigEndian.Uint32(v))
	for p := 0; p < s.parts; p++ {
		if parts.Bucket(partName(p)) == nil {
			return s.corrupt(fmt.Sprintf("partition %d has no index", p))
		}
	}
	return nil
}

func partName(p int) []byte { return binary.BigEndian.AppendUint32(nil, uint32(p)) }

// Partition makes the store a log of n partitions. A store that is
// already partitioned must have n partitions: any other count is refused
// with an error wrapping ErrPartitionCount, since every group's partition
// depends on it. A store that is not partitioned yet (new, or written by a
// coordhost before partitions) is converted to format 4 in one
// transaction: group
// names the group of each record key, and the record joins the group's
// partition by Kafka's rule (runtime.PartitionFor). A key group cannot
// name fails the conversion, and the store is left as it was.
func (s *Store) Partition(n int, group func(key []byte) (string, error)) error {
	if n < 1 {
		return fmt.Errorf("store %s: partition count %d: must be at least 1", s.path, n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.parts != 0 {
		if s.parts != n {
			return fmt.Errorf("store %s: %w: it was created with %d partitions and cannot be opened with %d "+
				"(the partition of every group depends on the count; start with %d partitions)", s.path, ErrPartitionCount, s.parts, n, s.parts)
		}
		return nil
	}
	err := s.db.Update(func(tx *bolt.Tx) error {
		bySeq := tx.Bucket(bucketBySeq)
		return s.toLogs(tx, n, func(src int) *bolt.Bucket {
			if src > 0 {
				return nil
			}
			return bySeq
		}, func(_ int, seq, key []byte) (int, error) {
			g, err := group(key)
			if err != nil {
				return 0, fmt.Errorf("converting to %d partitions: record key %x (sequence %d): %w", n, key, binary.BigEndian.Uint64(seq), err)
			}
			return runtime.PartitionFor(g, n), nil
		})
	})
	if err != nil {
		return fmt.Errorf("store %s: %w", s.path, err)
	}
	s.parts = n
	return nil
}

// Validate returns nil for a record the store can hold, and otherwise an
// error wrapping runtime.ErrInvalidRecord. A key of any length is held
// (one too long for bbolt under its hash, longkey.go); key and value
// together must fit in one bbolt value.
func (s *Store) Validate(r Record) error {
	if err := runtime.LimitsError(r, 0, 0); err != nil {
		return err
	}
	size := len(r.Value) + len(r.Key) // a partition log's entry holds both
	if size > s.maxRecord {
		return fmt.Errorf("%w: record of %d bytes (key %d, value %d), more than the %d a store value can hold",
			runtime.ErrInvalidRecord, size, len(r.Key), len(r.Value), s.maxRecord)
	}
	return nil
}

// PartitionBatch is one partition's records in an AppendPartitions call.
type PartitionBatch struct {
	Partition int
	Records   []Record
}

// AppendPartitions writes the batches of several partitions in one
// transaction with one fsync. On error nothing is stored; the error wraps
// runtime.ErrInvalidRecord when a record fails Validate and
// runtime.ErrStorage otherwise.
func (s *Store) AppendPartitions(batches []PartitionBatch) error {
	for _, b := range batches {
		for i, r := range b.Records {
			if err := s.Validate(r); err != nil {
				return fmt.Errorf("store %s: partition %d record %d: %w", s.path, b.Partition, i, err)
			}
		}
	}
	if err := s.Verified(); err != nil { // OpenForLoad: never write a file that fails its check
		return fmt.Errorf("%w: %w", runtime.ErrStorage, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range batches {
		if b.Partition < 0 || b.Partition >= s.parts {
			return fmt.Errorf("store %s: %w: partition %d of %d", s.path, runtime.ErrInvalidRecord, b.Partition, s.parts)
		}
	}
	next := s.nextSeq
	err := s.db.Update(func(tx *bolt.Tx) error {
		for _, b := range batches {
			var err error
			if next, err = s.putLog(tx, b.Partition, b.Records, next); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keyNextSeq, binary.BigEndian.AppendUint64(nil, next))
	})
	if err != nil {
		return fmt.Errorf("store %s: append of %d partition batches: %w: %w", s.path, len(batches), runtime.ErrStorage, err)
	}
	s.nextSeq = next
	return nil
}

// ReplayPartition calls fn for every live record of partition p in the
// order of their last writes, with the checks of Replay.
func (s *Store) ReplayPartition(p int, fn func(Entry) error) error {
	return s.replayPartition(p, false, fn)
}

// LendPartition is ReplayPartition without a copy of each record: the
// Key and Value fn is given are the store file's mapped pages, valid
// only until fn returns (bbolt's memory, valid inside its read
// transaction only, and remapped when a write grows the file). fn must
// keep nothing of them: what it keeps, it copies. Partitions are loaded
// this way (runtime.LendingLog), one allocation and copy a record less.
func (s *Store) LendPartition(p int, fn func(Entry) error) error {
	return s.replayPartition(p, true, fn)
}

func (s *Store) replayPartition(p int, lend bool, fn func(Entry) error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = s.corrupt(fmt.Sprintf("reading partition %d: %v", p, r))
		}
	}()
	return s.db.View(func(tx *bolt.Tx) error {
		root := tx.Bucket(bucketLogs)
		if root == nil || root.Bucket(partName(p)) == nil {
			return fmt.Errorf("store %s: no partition %d", s.path, p)
		}
		return s.replayLog(tx, p, lend, fn)
	})
}
