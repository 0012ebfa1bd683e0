package kafkalog

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/runtime"
)

// read calls fn with partition p's committed records, from its start to
// the last stable offset at the time of the call.
func (l *Log) read(p int, fn func(runtime.Record) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Timeout)
	defer cancel()
	pt := l.parts[p]
	pt.replayEnd.Store(-1)
	start, err := l.offset(ctx, p, -2)
	if err != nil {
		return err
	}
	// scan reads to this offset too: after the take-over nothing else
	// writes the partition.
	end, err := l.offset(ctx, p, -1)
	if err != nil {
		return err
	}
	pt.replayed.Store(start)
	pt.replayEnd.Store(end)
	err = l.scan(ctx, p, start, func(r *kgo.Record) (bool, error) {
		pt.replayed.Store(r.Offset + 1)
		if r.Attrs.IsControl() {
			return false, nil
		}
		v, err := decodeValue(r.Value)
		if err != nil {
			return false, fmt.Errorf("offset %d: %w", r.Offset, err)
		}
		return false, fn(runtime.Record{Key: r.Key, Value: v})
	})
	if err == nil { // read to the end (the last offsets may be compacted away)
		pt.replayed.Store(max(end, start))
	}
	return err
}

// scan calls fn with partition p's records from offset start to the last
// stable offset, read_committed, commit and abort markers included, until
// fn says stop. It runs when no transaction of the partition is open (after
// a take-over or a recovery), so that offset is the high watermark and the
// record just below it is there: the active segment is never compacted,
// and a marker ends every transaction.
func (l *Log) scan(ctx context.Context, p int, start int64, fn func(*kgo.Record) (stop bool, err error)) error {
	end, err := l.offset(ctx, p, -1)
	if err != nil {
		return err
	}
	if end <= start {
		return nil
	}
	opts := append(append([]kgo.Opt(nil), l.cfg.ClientOpts...),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{l.cfg.Topic: {int32(p): kgo.NewOffset().At(start)}}),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.KeepControlRecords())
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	for {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%w: reading offsets %d to %d: %w", runtime.ErrStorage, start, end, err)
		}
		for _, fe := range fs.Errors() {
			return fmt.Errorf("%w: fetch: %w", runtime.ErrStorage, fe.Err)
		}
		var ferr error
		done := false
		fs.EachRecord(func(r *kgo.Record) {
			if ferr != nil || done || r.Offset >= end {
				done = true
				return
			}
			done, ferr = fn(r)
			done = done || r.Offset >= end-1
		})
		if ferr != nil {
			return ferr
		}
		if done {
			return nil
		}
	}
}

// offset returns partition p's earliest offset (ts -2) or its last stable
// offset (ts -1, read_committed).
func (l *Log) offset(ctx context.Context, p int, ts int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID, req.IsolationLevel = -1, 1
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = l.cfg.Topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = int32(p), ts, -1
	t.Partitions = append(t.Partitions, rp)
	req.Topics = append(req.Topics, t)
	var off int64
	err := retry(ctx, "list offsets", func() error {
		resp, err := req.RequestWith(ctx, l.cl)
		if err != nil {
			return err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return errors.New("list offsets: unexpected answer")
		}
		rp := resp.Topics[0].Partitions[0]
		off = rp.Offset
		return kerr.ErrorForCode(rp.ErrorCode)
	})
	if err != nil {
		return 0, fmt.Errorf("%w: %w", runtime.ErrStorage, err)
	}
	return off, nil
}
