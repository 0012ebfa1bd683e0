package runtime

import (
	"errors"
	"fmt"
	"time"
)

// Record is one keyed entry of a partition's log. Key and Value are opaque
// to the runtime (the coordinator defines them); a nil Value is a tombstone
// that deletes Key when the log is compacted.
type Record struct {
	Key   []byte
	Value []byte
	// Owner is the Event.Key whose state the record changes (the group it
	// belongs to); empty: it may change any key's state. The runtime uses
	// it to release a response that depends on no record in flight
	// without waiting for the appends of other keys (Config.Pipeline);
	// logs ignore it.
	Owner string
}

// Log is the record log of the partitions: what a partition's coordinator
// wrote, appended durably in batches, replayed when the partition loads.
// Implementations must allow concurrent calls for different partitions;
// the runtime never calls Append or Replay concurrently for one partition.
type Log interface {
	// Validate checks one record before it joins a batch, so that a record
	// the log cannot store fails alone instead of failing the batch it
	// would share with other groups. It returns an error wrapping
	// ErrInvalidRecord.
	Validate(Record) error
	// Append stores recs at the end of partition p's log and returns once
	// they are durable. On error none of recs is stored; the error wraps
	// ErrFenced, ErrStorage or ErrInvalidRecord.
	Append(p int, recs []Record) error
	// Replay calls fn with partition p's records in log order. A log may
	// hand over its compacted form (the latest value of each key, no
	// tombstones); replaying either form gives the same state.
	Replay(p int, fn func(Record) error) error
	// Compact drops what no longer matters from partition p's log: every
	// value overwritten by a later write of its key, and tombstones.
	Compact(p int) error
}

// LendingLog is a Log that can also replay a partition without copying
// its records out of memory it owns (a memory-mapped file's pages): the
// Key and Value of a record handed to fn are valid only until fn
// returns. The runtime loads partitions through it when its Log offers
// it; Shard.Replay keeps nothing of a record's bytes.
type LendingLog interface {
	Log
	ReplayLent(p int, fn func(Record) error) error
}

// TimedLog is a Log that also says what an append cost: AppendTimed is
// Append, returning the CPU time storing recs took (its share of a write
// it shared with other partitions' records, the kernel's work writing
// and syncing the pages included, the waits for the disk and for the
// write to start not). The runtime charges that time to the keys whose
// records it stored (Record.Owner), by their bytes, towards their quota
// (Config.QuotaPercent), as Kafka's request quota counts the broker's
// time on a request's log append.
type TimedLog interface {
	Log
	AppendTimed(p int, recs []Record) (time.Duration, error)
}

// The errors a Log's Append wraps.
var (
	// ErrFenced: this process no longer owns the partition (another writer
	// took it over); the partition must be unloaded.
	ErrFenced = errors.New("record log: partition fenced by another writer")
	// ErrStorage: the log could not store the batch (disk full, I/O
	// failure); the batch is rolled back and may be retried later.
	ErrStorage = errors.New("record log: storage failed")
	// ErrInvalidRecord: a record the log can never store (empty key, key
	// or value too large).
	ErrInvalidRecord = errors.New("record log: invalid record")
)

// LimitsError returns nil when r fits the limits (maxKey, maxValue in
// bytes; 0: no limit) and otherwise an error wrapping ErrInvalidRecord.
func LimitsError(r Record, maxKey, maxValue int) error {
	switch {
	case len(r.Key) == 0:
		return fmt.Errorf("%w: empty key", ErrInvalidRecord)
	case maxKey > 0 && len(r.Key) > maxKey:
		return fmt.Errorf("%w: key of %d bytes, more than %d", ErrInvalidRecord, len(r.Key), maxKey)
	case maxValue > 0 && len(r.Value) > maxValue:
		return fmt.Errorf("%w: value of %d bytes, more than %d", ErrInvalidRecord, len(r.Value), maxValue)
	}
	return nil
}
