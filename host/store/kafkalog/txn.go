package kafkalog

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/runtime"
)

// The transaction protocol of one partition's writer. Every failure is
// classified: a newer epoch (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH) is
// runtime.ErrFenced, everything else runtime.ErrStorage.

// fenced reports whether err says a newer epoch exists.
func fenced(err error) bool {
	return errors.Is(err, kerr.ProducerFenced) || errors.Is(err, kerr.InvalidProducerEpoch)
}

// retriable reports whether a request that failed with err may be sent
// again: a transient broker condition or a transport error.
func retriable(err error) bool {
	if errors.Is(err, kerr.ConcurrentTransactions) {
		return true
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Retriable
	}
	return !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && !errors.Is(err, kgo.ErrClientClosed)
}

// retry calls do until it succeeds, fails for good, or ctx ends.
func retry(ctx context.Context, what string, do func() error) error {
	backoff := 5 * time.Millisecond
	for {
		err := do()
		if err == nil || fenced(err) || !retriable(err) {
			if err != nil {
				err = fmt.Errorf("%s: %w", what, err)
			}
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (gave up: %w)", what, err, ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 250*time.Millisecond)
	}
}

// classify wraps err in the runtime error it stands for.
func classify(err error) error {
	if fenced(err) {
		return fmt.Errorf("%w: %w", runtime.ErrFenced, err)
	}
	return fmt.Errorf("%w: %w", runtime.ErrStorage, err)
}

// initProducer runs InitProducerId for pt's transactional id: with no
// producer (pid -1) it is a take-over, bumping the epoch whoever held it;
// with pt's producer it is a recovery, which fails fenced when another
// writer bumped the epoch since. Either aborts the id's open transaction.
func (l *Log) initProducer(ctx context.Context, pt *partition, pid int64, epoch int16) error {
	req := kmsg.NewPtrInitProducerIDRequest()
	req.TransactionalID = kmsg.StringPtr(pt.txid)
	req.TransactionTimeoutMillis = int32(defaultTxnTimeout.Milliseconds())
	req.ProducerID, req.ProducerEpoch = pid, epoch
	return retry(ctx, "init producer id "+pt.txid, func() error {
		resp, err := req.RequestWith(ctx, l.cl)
		if err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			return err
		}
		pt.pid, pt.epoch, pt.seq = resp.ProducerID, resp.ProducerEpoch, 0
		return nil
	})
}

// takeOver makes this Log the writer of pt.
func (l *Log) takeOver(ctx context.Context, pt *partition) error {
	pt.owned = false
	if err := l.initProducer(ctx, pt, -1, -1); err != nil {
		return classify(err)
	}
	pt.owned, pt.recover = true, false
	return nil
}

// append writes recs to partition p in one transaction; pt is locked.
func (l *Log) append(ctx context.Context, p int, pt *partition, recs []runtime.Record) error {
	if !pt.owned {
		return fmt.Errorf("%w: this process does not hold the partition's writer (not taken over, or fenced since)", runtime.ErrFenced)
	}
	if pt.recover {
		if err := l.initProducer(ctx, pt, pt.pid, pt.epoch); err != nil {
			return l.failed(pt, err)
		}
		pt.recover = false
	}
	if err := l.addPartition(ctx, p, pt); err != nil {
		return l.failed(pt, err)
	}
	seq, first := pt.seq, int64(-1)
	for _, run := range split(recs, l.maxMsg) {
		b := batch{pid: pt.pid, epoch: pt.epoch, seq: seq, now: time.Now().UnixMilli()}
		base, err := l.produce(ctx, p, pt.txid, b.encode(run))
		if err != nil {
			return l.failed(pt, err)
		}
		if first < 0 {
			first = base
		}
		seq += int32(len(run))
	}
	pt.seq = seq
	err := l.endTxn(ctx, pt, true)
	if err == nil {
		return nil
	}
	if fenced(err) {
		pt.owned = false
		return classify(err)
	}
	committed, rerr := l.settle(p, pt, first)
	switch {
	case rerr != nil:
		// Only a replay can tell whether the batch is in the log: the
		// partition is given up as if fenced.
		pt.owned = false
		return fmt.Errorf("%w: commit outcome unknown (%w), the partition must be replayed: %w", runtime.ErrFenced, err, rerr)
	case !committed:
		return fmt.Errorf("%w: commit failed and the transaction was aborted: %w", runtime.ErrStorage, err)
	}
	return nil
}

// settle learns the outcome of pt's transaction whose commit got no
// answer, its first record at offset first: a recovery (epoch bump)
// completes the transaction — the commit if the coordinator had
// prepared it, else an abort — and the partition then shows either that
// record or the abort marker at the first offset read_committed returns
// from first.
func (l *Log) settle(p int, pt *partition, first int64) (committed bool, err error) {
	if first < 0 {
		return false, errors.New("no offset of the transaction's first record")
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Timeout)
	defer cancel()
	if err := l.initProducer(ctx, pt, pt.pid, pt.epoch); err != nil {
		return false, classify(err)
	}
	err = l.scan(ctx, p, first, func(r *kgo.Record) (bool, error) {
		// A marker's key is version(2) type(2), type 1 a commit.
		committed = !r.Attrs.IsControl() || len(r.Key) >= 4 && r.Key[3] == 1
		return true, nil
	})
	return committed, err
}

// failed handles a failure before the commit: the transaction is left to
// the recovery of the next append (an epoch bump that aborts it).
func (l *Log) failed(pt *partition, err error) error {
	if fenced(err) {
		pt.owned = false
	} else {
		pt.recover = true
	}
	return classify(err)
}

func (l *Log) addPartition(ctx context.Context, p int, pt *partition) error {
	req := kmsg.NewPtrAddPartitionsToTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch = pt.txid, pt.pid, pt.epoch
	t := kmsg.NewAddPartitionsToTxnRequestTopic()
	t.Topic, t.Partitions = l.cfg.Topic, []int32{int32(p)}
	req.Topics = append(req.Topics, t)
	return retry(ctx, "add partition to transaction", func() error {
		resp, err := req.RequestWith(ctx, l.cl)
		if err != nil {
			return err
		}
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// produce writes one record batch to partition p with acks=all and
// returns its base offset.
func (l *Log) produce(ctx context.Context, p int, txid string, records []byte) (base int64, err error) {
	req := kmsg.NewPtrProduceRequest()
	req.TransactionID, req.Acks, req.TimeoutMillis = kmsg.StringPtr(txid), -1, int32(l.cfg.Timeout.Milliseconds())
	t := kmsg.NewProduceRequestTopic()
	t.Topic = l.cfg.Topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = int32(p), records
	t.Partitions = append(t.Partitions, rp)
	req.Topics = append(req.Topics, t)
	err = retry(ctx, "produce", func() error {
		leader := l.parts[p].leader.Load()
		if leader < 0 {
			var err error
			if leader, err = l.leader(ctx, p); err != nil {
				return err
			}
			l.parts[p].leader.Store(leader)
		}
		var err error
		base, err = l.produceTo(ctx, leader, req)
		if err != nil {
			l.parts[p].leader.Store(-1) // ask the metadata again
		}
		if errors.Is(err, kerr.DuplicateSequenceNumber) {
			return nil // a retry of a batch the broker had written, at base
		}
		return err
	})
	return base, err
}

func (l *Log) produceTo(ctx context.Context, leader int32, req *kmsg.ProduceRequest) (int64, error) {
	kresp, err := l.cl.Broker(int(leader)).Request(ctx, req)
	if err != nil {
		return 0, err
	}
	resp := kresp.(*kmsg.ProduceResponse)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		return 0, fmt.Errorf("%w: produce answered %d topics", kerr.UnknownServerError, len(resp.Topics))
	}
	rp := resp.Topics[0].Partitions[0]
	return rp.BaseOffset, kerr.ErrorForCode(rp.ErrorCode)
}

// leader returns the broker leading partition p, from the cluster's
// metadata.
func (l *Log) leader(ctx context.Context, p int) (int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(l.cfg.Topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, l.cl)
	if err != nil {
		return 0, err
	}
	for _, t := range resp.Topics {
		if err := kerr.ErrorForCode(t.ErrorCode); err != nil {
			return 0, err
		}
		for _, tp := range t.Partitions {
			if int(tp.Partition) == p {
				if err := kerr.ErrorForCode(tp.ErrorCode); err != nil {
					return 0, err
				}
				if tp.Leader < 0 {
					return 0, kerr.LeaderNotAvailable
				}
				return tp.Leader, nil
			}
		}
	}
	return 0, kerr.UnknownTopicOrPartition
}

func (l *Log) endTxn(ctx context.Context, pt *partition, commit bool) error {
	req := kmsg.NewPtrEndTxnRequest()
	req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit = pt.txid, pt.pid, pt.epoch, commit
	return retry(ctx, "end transaction", func() error {
		resp, err := req.RequestWith(ctx, l.cl)
		if err != nil {
			return err
		}
		return kerr.ErrorForCode(resp.ErrorCode)
	})
}
