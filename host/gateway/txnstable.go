package gateway

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// pendingTxnOffsets gives the embedded data plane Kafka's per-partition
// answer to OffsetFetch with RequireStable (KIP-447).
//
// Kafka answers UNSTABLE_OFFSET_COMMIT only for the partitions that have a
// transactional offset commit still pending. The embedded cluster (kfake)
// answers it for every partition of the group as soon as any open
// transaction holds an offset for the group. Under exactly-once processing
// some member's transaction is almost always open, so a task that moves
// to a new owner waits for a moment when no transaction of any other
// member is open (close to a second in the interop suite) before it can
// read its starting offset.
//
// Every TxnOffsetCommit reaches the data plane through coordhost, so the
// gateway knows which partitions each producer has pending; it sees the
// EndTxn that resolves them and the InitProducerId that fences (and so
// aborts) an older transaction on its way to the data plane. A transaction
// the data plane aborts on its own (transaction timeout) is forgotten when
// its timeout has passed since its last offset commit.
type pendingTxnOffsets struct {
	mu       sync.Mutex
	byPID    map[int64]*pidOffsets
	timeouts map[int64]time.Duration // transaction timeout per producer id, from InitProducerId
	now      func() time.Time
}

// pidOffsets are one producer's pending transactional offsets.
type pidOffsets struct {
	parts    map[string]map[string]map[int32]struct{} // group → topic → partitions
	deadline time.Time                                // the data plane aborts the transaction by then
}

// defaultTxnTimeout bounds a pending offset when the producer's
// transaction timeout is unknown (Kafka's transaction.timeout.ms default).
const defaultTxnTimeout = time.Minute

// maxKnownTimeouts bounds the producer ids whose timeout is remembered.
const maxKnownTimeouts = 100000

func newPendingTxnOffsets() *pendingTxnOffsets {
	return &pendingTxnOffsets{byPID: map[int64]*pidOffsets{}, timeouts: map[int64]time.Duration{}, now: time.Now}
}

// observe learns from a request forwarded to the data plane and its answer.
func (p *pendingTxnOffsets) observe(req kmsg.Request, resp kmsg.Response) {
	switch q := req.(type) {
	case *kmsg.EndTxnRequest:
		if r, ok := resp.(*kmsg.EndTxnResponse); ok && r.ErrorCode == 0 {
			p.end(q.ProducerID)
		}
	case *kmsg.InitProducerIDRequest:
		r, ok := resp.(*kmsg.InitProducerIDResponse)
		if !ok || r.ErrorCode != 0 || q.TransactionalID == nil {
			return
		}
		// A new epoch for a transactional id completes (aborts) whatever
		// transaction the producer had open.
		p.end(r.ProducerID)
		p.mu.Lock()
		if len(p.timeouts) >= maxKnownTimeouts {
			clear(p.timeouts) // bounded memory; unknown timeouts fall back to defaultTxnTimeout
		}
		p.timeouts[r.ProducerID] = time.Duration(q.TransactionTimeoutMillis) * time.Millisecond
		p.mu.Unlock()
	}
}

// committed records the partitions a TxnOffsetCommit stored in the
// producer's open transaction.
func (p *pendingTxnOffsets) committed(req *kmsg.TxnOffsetCommitRequest, resp *kmsg.TxnOffsetCommitResponse) {
	p.mu.Lock()
	defer p.mu.Unlock()
	po := p.byPID[req.ProducerID]
	if po == nil {
		po = &pidOffsets{parts: map[string]map[string]map[int32]struct{}{}}
		p.byPID[req.ProducerID] = po
	}
	timeout, ok := p.timeouts[req.ProducerID]
	if !ok || timeout <= 0 {
		timeout = defaultTxnTimeout
	}
	po.deadline = p.now().Add(timeout)
	topics := po.parts[req.Group]
	if topics == nil {
		topics = map[string]map[int32]struct{}{}
		po.parts[req.Group] = topics
	}
	for _, t := range resp.Topics {
		for _, rp := range t.Partitions {
			if rp.ErrorCode != 0 {
				continue
			}
			if topics[t.Topic] == nil {
				topics[t.Topic] = map[int32]struct{}{}
			}
			topics[t.Topic][rp.Partition] = struct{}{}
		}
	}
}

func (p *pendingTxnOffsets) end(pid int64) {
	p.mu.Lock()
	delete(p.byPID, pid)
	p.mu.Unlock()
}

// pending reports whether some open transaction holds an offset for
// group's topic-partition.
func (p *pendingTxnOffsets) pending(group, topic string, partition int32) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	for pid, po := range p.byPID {
		if now.After(po.deadline) {
			delete(p.byPID, pid) // the data plane has aborted it by now
			continue
		}
		if _, ok := po.parts[group][topic][partition]; ok {
			return true
		}
	}
	return false
}

// markUnstable answers UNSTABLE_OFFSET_COMMIT, as Kafka does, for the
// partitions of g (already named by topic) with a pending transactional
// offset.
func (p *pendingTxnOffsets) markUnstable(g *kmsg.OffsetFetchResponseGroup) {
	for ti := range g.Topics {
		t := &g.Topics[ti]
		for pi := range t.Partitions {
			sp := &t.Partitions[pi]
			if sp.ErrorCode == 0 && p.pending(g.Group, t.Topic, sp.Partition) {
				sp.ErrorCode, sp.Offset, sp.LeaderEpoch, sp.Metadata = kerr.UnstableOffsetCommit.Code, -1, -1, nil
			}
		}
	}
}
