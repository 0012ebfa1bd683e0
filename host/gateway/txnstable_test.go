package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnProducer is a transactional producer driven by hand through a Link,
// the way a client's requests reach the data plane through coordhost.
type txnProducer struct {
	t    *testing.T
	d    *DataPlane
	link *Link
	txID string
	pid  int64
	ep   int16
}

func newTxnProducer(t *testing.T, ctx context.Context, d *DataPlane, link *Link, txID string, timeoutMs int32) *txnProducer {
	p := &txnProducer{t: t, d: d, link: link, txID: txID}
	p.init(ctx, timeoutMs)
	return p
}

func (p *txnProducer) init(ctx context.Context, timeoutMs int32) {
	ip := kmsg.NewPtrInitProducerIDRequest()
	ip.TransactionalID, ip.TransactionTimeoutMillis = kmsg.StringPtr(p.txID), timeoutMs
	r, err := p.link.Forward(ctx, nil, ip)
	if err != nil || r.(*kmsg.InitProducerIDResponse).ErrorCode != 0 {
		p.t.Fatalf("init producer id %s: %+v %v", p.txID, r, err)
	}
	p.pid, p.ep = r.(*kmsg.InitProducerIDResponse).ProducerID, r.(*kmsg.InitProducerIDResponse).ProducerEpoch
}

// commitOffset adds group's offset for in-partition to the open transaction.
func (p *txnProducer) commitOffset(ctx context.Context, group string, partition int32, offset int64) {
	ao := kmsg.NewPtrAddOffsetsToTxnRequest()
	ao.TransactionalID, ao.ProducerID, ao.ProducerEpoch, ao.Group = p.txID, p.pid, p.ep, group
	if r, err := p.link.Forward(ctx, nil, ao); err != nil || r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode != 0 {
		p.t.Fatalf("add offsets to txn: %+v %v", r, err)
	}
	tc := kmsg.NewPtrTxnOffsetCommitRequest()
	tc.SetVersion(4)
	tc.TransactionalID, tc.Group, tc.ProducerID, tc.ProducerEpoch = p.txID, group, p.pid, p.ep
	tc.Topics = []kmsg.TxnOffsetCommitRequestTopic{{Topic: "in", Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{{Partition: partition, Offset: offset, LeaderEpoch: -1}}}}
	if r, err := p.d.TxnCommitOffsets(ctx, tc); err != nil || r.Topics[0].Partitions[0].ErrorCode != 0 {
		p.t.Fatalf("txn offset commit: %+v %v", r, err)
	}
}

func (p *txnProducer) end(ctx context.Context, commit bool) {
	et := kmsg.NewPtrEndTxnRequest()
	et.TransactionalID, et.ProducerID, et.ProducerEpoch, et.Commit = p.txID, p.pid, p.ep, commit
	if r, err := p.link.Forward(ctx, nil, et); err != nil || r.(*kmsg.EndTxnResponse).ErrorCode != 0 {
		p.t.Fatalf("end txn: %+v %v", r, err)
	}
}

// stableFetch is OffsetFetch v8 with RequireStable for partitions 0-2 of
// "in": per partition, the offset or -2 for UNSTABLE_OFFSET_COMMIT.
func stableFetch(t *testing.T, ctx context.Context, d *DataPlane, group string) [3]int64 {
	t.Helper()
	f := kmsg.NewPtrOffsetFetchRequest()
	f.SetVersion(8)
	f.RequireStable = true
	f.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group, Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "in", Partitions: []int32{0, 1, 2}}}}}
	r, err := d.FetchOffsets(ctx, f)
	if err != nil || len(r.Groups) != 1 || r.Groups[0].ErrorCode != 0 || len(r.Groups[0].Topics) != 1 {
		t.Fatalf("fetch: %+v %v", r, err)
	}
	var out [3]int64
	for _, p := range r.Groups[0].Topics[0].Partitions {
		switch p.ErrorCode {
		case 0:
			out[p.Partition] = p.Offset
		case kerr.UnstableOffsetCommit.Code:
			out[p.Partition] = -2
		default:
			t.Fatalf("partition %d: %v", p.Partition, kerr.ErrorForCode(p.ErrorCode))
		}
	}
	return out
}

// TestRequireStablePerPartition: as in Kafka, OffsetFetch with
// RequireStable answers UNSTABLE_OFFSET_COMMIT only for the partitions with
// a pending transactional offset, not for every partition of the group
// (the embedded data plane alone does the latter); EndTxn, fencing by a new
// InitProducerId and the transaction timeout each resolve a pending offset.
func TestRequireStablePerPartition(t *testing.T) {
	d, ctx := openEmbedded(t), ctxT(t)
	if _, err := d.CreateTopics(ctx, []TopicSpec{{Name: "in", Partitions: 3, ReplicationFactor: -1}}); err != nil {
		t.Fatal(err)
	}
	link, err := d.Dial(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer link.Close()
	waitFor := func(what string, want [3]int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for got := stableFetch(t, ctx, d, "app"); got != want; got = stableFetch(t, ctx, d, "app") {
			if time.Now().After(deadline) {
				t.Fatalf("%s: offsets %v, want %v (-2: unstable)", what, got, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// Committed offsets for all three partitions, then a: p0 and b: p1 pending.
	a := newTxnProducer(t, ctx, d, link, "tx-a", 60000)
	for p := range int32(3) {
		a.commitOffset(ctx, "app", p, 10)
	}
	a.end(ctx, true)
	waitFor("all committed", [3]int64{10, 10, 10})
	a.commitOffset(ctx, "app", 0, 20)
	b := newTxnProducer(t, ctx, d, link, "tx-b", 60000)
	b.commitOffset(ctx, "app", 1, 30)
	if got := stableFetch(t, ctx, d, "app"); got != [3]int64{-2, -2, 10} {
		t.Fatalf("with p0 and p1 pending: %v, want [-2 -2 10]", got)
	}

	a.end(ctx, true) // resolves p0 only
	waitFor("a committed", [3]int64{20, -2, 10})
	b.init(ctx, 60000) // fencing aborts b's transaction
	waitFor("b fenced", [3]int64{20, 10, 10})

	// A transaction the data plane times out is forgotten after its timeout.
	c := newTxnProducer(t, ctx, d, link, "tx-c", 1000)
	c.commitOffset(ctx, "app", 2, 40)
	if got := stableFetch(t, ctx, d, "app"); got != [3]int64{20, 10, -2} {
		t.Fatalf("with p2 pending: %v", got)
	}
	d.txns.now = func() time.Time { return time.Now().Add(2 * time.Second) }
	if got := stableFetch(t, ctx, d, "app"); got[2] == -2 {
		t.Fatalf("pending offset outlived its transaction timeout: %v", got)
	}
}
