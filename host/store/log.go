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
	// took is the batch's share of its transaction's time, set before
	// done is sent.
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

// AppendTimed is Append, also returning the part of its transaction's
// work that recs took: the CPU time the transaction used (work) — building
// the batches of every partition it holds into the file's pages, writing
// and fsyncing them, without the wait for the disk — shared among its
// batches by their bytes. The wait for the transaction to start is no
// part of it either.
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

// work measures the CPU time of a transaction on the committer's
// thread: user and system time, so the kernel's work writing the pages
// and fsyncing them is in, the wait for the disk is not. Where the
// thread's CPU time cannot be read, the transaction's wall time without
// the disk's part (bbolt's page writes and fsyncs) stands in for it.
type work struct {
	start time.Time
	cpu   time.Duration
	ok    bool
}

func startWork() work {
	w := work{start: time.Now()}
	w.cpu, w.ok = threadCPU()
	return w
}

// done returns the work's time since startWork; disk is the part of its
// wall time bbolt spent writing.
func (w work) done(disk time.Duration) time.Duration {
	if cpu, ok := threadCPU(); w.ok && ok {
		return cpu - w.cpu
	}
	return max(time.Since(w.start)-disk, 0)
}

// shares splits took, the time of one transaction, among its batches by
// the bytes of their records.
func shares(took time.Duration, batches []PartitionBatch) []time.Duration {
	bytes, total := make([]int, len(batches)), 0
	for i, b := range batches {
		for _, r := range b.Records {
			bytes[i] += len(r.Key) + len(r.Value)
		}
		total += bytes[i]
	}
	out := make([]time.Duration, len(batches))
	for i, n := range bytes {
		out[i] = time.Duration(float64(took) * float64(n) / float64(max(total, 1)))
	}
	return out
}

// commit is the committer goroutine. It keeps its thread, so that the
// thread's CPU time measures its transactions (work).
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
		w := startWork()
		disk, err := l.s.appendPartitions(batches)
		took := shares(w.done(disk), batches)
		l.commits.Add(1)
		for i, r := range reqs {
			r.took = took[i]
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
