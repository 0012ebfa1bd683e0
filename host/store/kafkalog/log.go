// Package kafkalog is a record log (runtime.Log) kept in a compacted
// Kafka topic, the state topic: one topic partition per runtime
// partition, each written by one transactional producer whose epoch
// fences the writer it replaced (docs/SCALE-OUT.md).
package kafkalog

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/coordhost/coordhost/host/runtime"
)

// Defaults of Config.
const (
	DefaultTopic = "__coordhost_state"
	// DefaultMaxMessageBytes is the max.message.bytes of a state topic
	// Open creates: the largest record batch, so the largest record the
	// log stores (Validate refuses a larger one).
	DefaultMaxMessageBytes = 8 << 20
	defaultTimeout         = 30 * time.Second
	defaultTxnTimeout      = time.Minute
)

// Config configures Open.
type Config struct {
	// ClientOpts reach the cluster (seed brokers, TLS, SASL).
	ClientOpts []kgo.Opt
	// Topic is the state topic (DefaultTopic when empty).
	Topic string
	// Partitions is the runtime's partition count; the topic must have
	// as many partitions.
	Partitions int
	// ReplicationFactor and MinInsyncReplicas of a topic Open creates
	// (-1 and 0: the broker's defaults).
	ReplicationFactor int
	MinInsyncReplicas int
	// MaxMessageBytes of a topic Open creates (DefaultMaxMessageBytes
	// when 0). An existing topic's own value bounds records.
	MaxMessageBytes int
	// Timeout bounds each operation: an append, a take-over, a replay
	// (30s when 0).
	Timeout time.Duration
	// TransactionalIDPrefix names the partitions' transactional ids,
	// <prefix>-p<N>; default coordhost-<cluster id>-<topic>.
	TransactionalIDPrefix string
}

// Log is a runtime.Log over the state topic. Replay of a partition takes
// the partition over: it fences the partition's previous writer, in this
// process or another, before it reads. Append writes only to partitions
// this Log took over and is no longer fenced from.
type Log struct {
	cfg    Config
	cl     *kgo.Client
	prefix string
	maxMsg int
	parts  []*partition
	closed atomic.Bool
}

// pinnedVersions keeps the transaction protocol this package speaks:
// transactions as Kafka 3.x clients run them (AddPartitionsToTxn v3,
// Produce v11, EndTxn v4), which Kafka 4.4 still serves; with them an
// epoch changes only when a producer id is initialized.
func pinnedVersions() *kversion.Versions {
	v := kversion.Stable()
	v.SetMaxKeyVersion(kmsg.AddPartitionsToTxn.Int16(), 3)
	v.SetMaxKeyVersion(kmsg.Produce.Int16(), 11)
	v.SetMaxKeyVersion(kmsg.EndTxn.Int16(), 4)
	return v
}

// Open connects to the cluster, creates the state topic if it is missing
// (compacted, unclean leader election off) and checks an existing one:
// another partition count or a cleanup policy other than compact fails
// with an error wrapping ErrTopic.
func Open(ctx context.Context, cfg Config) (*Log, error) {
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if cfg.Partitions < 1 {
		return nil, fmt.Errorf("state topic %q: partition count %d: must be at least 1", cfg.Topic, cfg.Partitions)
	}
	if cfg.ReplicationFactor == 0 {
		cfg.ReplicationFactor = -1
	}
	if cfg.MaxMessageBytes == 0 {
		cfg.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = defaultTimeout
	}
	opts := append(append([]kgo.Opt(nil), cfg.ClientOpts...), kgo.MaxVersions(pinnedVersions()))
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("state topic %q: client: %w", cfg.Topic, err)
	}
	cctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	info, err := ensureTopic(cctx, cl, cfg)
	if err != nil {
		cl.Close()
		return nil, err
	}
	l := &Log{cfg: cfg, cl: cl, prefix: cfg.TransactionalIDPrefix, maxMsg: info.maxMessageBytes, parts: make([]*partition, cfg.Partitions)}
	if l.prefix == "" {
		l.prefix = "coordhost-" + info.clusterID + "-" + cfg.Topic
	}
	for p := range l.parts {
		l.parts[p] = &partition{txid: fmt.Sprintf("%s-p%d", l.prefix, p), pid: -1, epoch: -1}
		l.parts[p].leader.Store(-1)
		l.parts[p].replayEnd.Store(-1)
	}
	return l, nil
}

// errClosed answers calls made after Close.
var errClosed = fmt.Errorf("%w: state topic log closed", runtime.ErrStorage)

// MaxMessageBytes returns the state topic's max.message.bytes, the bound
// of one record batch.
func (l *Log) MaxMessageBytes() int { return l.maxMsg }

// TransactionalID returns the transactional id of partition p's writer.
func (l *Log) TransactionalID(p int) string { return l.parts[p].txid }

// Validate implements runtime.Log: a record must fit in one record batch
// of the topic (its max.message.bytes).
func (l *Log) Validate(r runtime.Record) error {
	if err := runtime.LimitsError(r, 0, 0); err != nil {
		return err
	}
	if n := batchOverhead + recordSize(r); n > l.maxMsg {
		return fmt.Errorf("%w: record of %d bytes (key %d, value %d) with its batch framing, more than the state topic's max.message.bytes %d",
			runtime.ErrInvalidRecord, n, len(r.Key), len(r.Value), l.maxMsg)
	}
	return nil
}

func (l *Log) part(p int) (*partition, error) {
	if p < 0 || p >= len(l.parts) {
		return nil, fmt.Errorf("state topic %q: %w: partition %d of %d", l.cfg.Topic, runtime.ErrInvalidRecord, p, len(l.parts))
	}
	if l.closed.Load() {
		return nil, errClosed
	}
	return l.parts[p], nil
}

// Append implements runtime.Log: one transaction holds recs (in record
// batches within max.message.bytes), written with acks=all, and Append
// returns once the transaction committed. A writer fenced by a newer
// epoch gets an error wrapping runtime.ErrFenced; other failures abort the
// transaction and wrap runtime.ErrStorage. A commit that got no answer is
// settled (txn.go): committed, Append succeeds; aborted, ErrStorage; still
// unknown, ErrFenced (the partition must be replayed to learn it).
func (l *Log) Append(p int, recs []runtime.Record) error {
	for i, r := range recs {
		if err := l.Validate(r); err != nil {
			return fmt.Errorf("state topic %q: partition %d record %d: %w", l.cfg.Topic, p, i, err)
		}
	}
	pt, err := l.part(p)
	if err != nil {
		return err
	}
	if len(recs) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Timeout)
	defer cancel()
	pt.mu.Lock()
	defer pt.mu.Unlock()
	if err := l.append(ctx, p, pt, recs); err != nil {
		return fmt.Errorf("state topic %q: partition %d: append of %d records: %w", l.cfg.Topic, p, len(recs), err)
	}
	return nil
}

// Replay implements runtime.Log: it takes partition p over (a new epoch
// for its transactional id, which fences the previous writer and aborts
// its open transaction) and then reads the partition read_committed up
// to its last stable offset. Records come in log order, tombstones
// included; the broker may have compacted the older ones away.
func (l *Log) Replay(p int, fn func(runtime.Record) error) error {
	pt, err := l.part(p)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Timeout)
	defer cancel()
	pt.mu.Lock()
	err = l.takeOver(ctx, pt)
	pt.mu.Unlock()
	if err != nil {
		return fmt.Errorf("state topic %q: partition %d: take-over: %w", l.cfg.Topic, p, err)
	}
	if err := l.read(p, fn); err != nil {
		return fmt.Errorf("state topic %q: partition %d: replay: %w", l.cfg.Topic, p, err)
	}
	return nil
}

// ReplayProgress returns how far the last (or current) replay of
// partition p has read: the offset after the last record it read, and
// the last stable offset it reads to. ok is false before a replay of p
// has learned that offset.
func (l *Log) ReplayProgress(p int) (replayed, end int64, ok bool) {
	if p < 0 || p >= len(l.parts) {
		return 0, 0, false
	}
	pt := l.parts[p]
	end = pt.replayEnd.Load()
	return pt.replayed.Load(), end, end >= 0
}

// Compact implements runtime.Log and does nothing: the broker compacts
// the state topic (cleanup.policy=compact), keeping the latest value of
// each key and dropping tombstones after delete.retention.ms. Replay
// reads whatever the broker has not compacted yet, which gives the same
// state.
func (l *Log) Compact(int) error { return nil }

// Close closes the connections; later calls fail. Closing twice is safe.
func (l *Log) Close() error {
	if l.closed.CompareAndSwap(false, true) {
		l.cl.Close()
	}
	return nil
}

var _ runtime.Log = (*Log)(nil)

// partition is one runtime partition's writer state.
type partition struct {
	mu    sync.Mutex
	txid  string
	pid   int64
	epoch int16
	seq   int32 // sequence of the next record of this producer epoch
	// owned: this Log took the partition over and was not fenced since.
	owned bool
	// recover: the last transaction failed before its commit; the next
	// append bumps the epoch first (aborting it, resetting sequences).
	recover bool
	// leader is the broker leading the topic partition as last learned
	// (-1: ask the metadata).
	leader atomic.Int32
	// replayed and replayEnd are the last replay's progress: the offset
	// after the last record read, and the last stable offset it reads to
	// (-1 until a replay knows it).
	replayed, replayEnd atomic.Int64
}
