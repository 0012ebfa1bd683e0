package store

import (
	"errors"
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coordhost/coordhost/host/runtime"
)

// Log is the record log of the partitions on a partitioned Store
// (runtime.Log). One committer goroutine writes the batches of every
// partition waiting at that moment in one transaction with one fsync, so
// partitions committing at once share the cost of the disk. Each
// partition's records are validated before they join a shared write, so
// one partition's bad record fails only that partition's append.
type Log struct {
	s       *Store
	reqs    chan *appendReq
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	commits atomic.Int64
}

type appendReq struct {
	batch PartitionBatch
	done  chan error
	// took is the batch's share of its transaction's CPU time, set
	// before done is sent.
	took time.Duration
}

// maxCommitBatches bounds the partition batches of one transaction.
const maxCommitBatches = 256

// NewLog starts the committer of a partitioned store. Close stops it; the
// store itself stays open.
func NewLog(s *Store) (*Log, error) {
	if s.Partitions() == 0 {
		return nil, fmt.Errorf("store %s: not partitioned", s.path)
	}
	l := &Log{s: s, reqs: make(chan *appendReq, maxCommitBatches), stop: make(chan struct{}), done: make(chan struct{})}
	go l.commit()
	return l, nil
}

// errClosed answers appends made after Close.
var errClosed = fmt.Errorf("%w: store log closed", runtime.ErrStorage)

// Validate implements runtime.Log.
func (l *Log) Validate(r runtime.Record) error { return l.s.Validate(r) }

// Append implements runtime.Log: it waits for the transaction that holds
// recs to be fsynced.
func (l *Log) Append(p int, recs []runtime.Record) error {
	_, err := l.AppendTimed(p, recs)
	return err
}

// AppendTimed implements runtime.TimedLog: Append, also returning recs'
// share, by bytes, of the CPU time the committer's thread spent on the
// transaction that held them (building every batch into pages, the
// kernel writing and syncing them; not the wait for the disk, nor for
// the transaction to start). 0 where a thread's CPU time cannot be read.
func (l *Log) AppendTimed(p int, recs []runtime.Record) (time.Duration, error) {
	for i, r := range recs {
		if err := l.s.Validate(r); err != nil {
			return 0, fmt.Errorf("store %s: partition %d record %d: %w", l.s.path, p, i, err)
		}
	}
	if len(recs) == 0 {
		return 0, nil
	}
	req := &appendReq{batch: PartitionBatch{Partition: p, Records: recs}, done: make(chan error, 1)}
	select {
	case l.reqs <- req:
	case <-l.stop:
		return 0, errClosed
	}
	select {
	case err := <-req.done:
		return req.took, err
	case <-l.done:
		return 0, errClosed
	}
}

// shares splits took, one transaction's time, among its batches by the
// bytes of their records.
func shares(took time.Duration, reqs []*appendReq) {
	bytes, total := make([]int, len(reqs)), 0
	for i, r := range reqs {
		for _, rec := range r.batch.Records {
			bytes[i] += len(rec.Key) + len(rec.Value)
		}
		total += bytes[i]
	}
	for i, r := range reqs {
		r.took = time.Duration(float64(took) * float64(bytes[i]) / float64(max(total, 1)))
	}
}

// commit is the committer goroutine. It keeps its thread, so that the
// thread's CPU time measures its transactions (AppendTimed).
func (l *Log) commit() {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	defer close(l.done)
	for {
		var reqs []*appendReq
		select {
		case <-l.stop:
			return
		case r := <-l.reqs:
			reqs = append(reqs, r)
		}
	more:
		for len(reqs) < maxCommitBatches {
			select {
			case r := <-l.reqs:
				reqs = append(reqs, r)
			default:
				break more
			}
		}
		batches := make([]PartitionBatch, len(reqs))
		for i, r := range reqs {
			batches[i] = r.batch
		}
		cpu0 := threadCPU()
		err := l.s.AppendPartitions(batches)
		shares(threadCPU()-cpu0, reqs)
		l.commits.Add(1)
		for _, r := range reqs {
			r.done <- err
		}
	}
}

// Commits returns the number of transactions (fsyncs) the committer made.
func (l *Log) Commits() int64 { return l.commits.Load() }

// Replay implements runtime.Log: partition p's live records (the store
// keeps only the latest value of each key, so this is the compacted log).
func (l *Log) Replay(p int, fn func(runtime.Record) error) error {
	return l.s.ReplayPartition(p, func(e Entry) error { return fn(runtime.Record{Key: e.Key, Value: e.Value}) })
}

// ReplayLent implements runtime.LendingLog: Replay, handing fn the
// store's mapped pages instead of copies (Store.LendPartition).
func (l *Log) ReplayLent(p int, fn func(runtime.Record) error) error {
	return l.s.LendPartition(p, func(e Entry) error { return fn(runtime.Record{Key: e.Key, Value: e.Value}) })
}

// Compact implements runtime.Log. The store overwrites a key's value in
// place and deletes tombstoned keys, so it is always compacted.
func (l *Log) Compact(int) error { return nil }

// Close stops the committer; appends waiting for it fail.
func (l *Log) Close() error {
	l.once.Do(func() { close(l.stop) })
	<-l.done
	return nil
}

// IsInvalidRecord reports whether err is a record the log refused.
func IsInvalidRecord(err error) bool { return errors.Is(err, runtime.ErrInvalidRecord) }
