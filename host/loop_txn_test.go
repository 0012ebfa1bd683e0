package host_test

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTransactionalConsumeProduce: a franz-go GroupTransactSession in a
// classic group through coordhost reads a topic and writes each record to
// another inside transactions; its TxnOffsetCommit goes through core and
// the data plane, so the group's committed offset is the number of records
// processed and a read_committed reader sees every output record once.
func TestTransactionalConsumeProduce(t *testing.T) {
	srv := startLoopHost(t, "")
	addr := srv.KafkaAddr()
	ctx := timeout(t)
	admin := newClient(t, addr)
	for _, topic := range []string{"tx-in", "tx-out"} {
		if err := createTopic(ctx, admin, topic, 1); err != nil {
			t.Fatal(err)
		}
	}
	produceSpread(t, addr, "tx-in", 1, 10, "t")
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(addr), kgo.TransactionalID("tx-1"), kgo.ConsumerGroup("txg"),
		kgo.ConsumeTopics("tx-in"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.SessionTimeout(6*time.Second), kgo.HeartbeatInterval(300*time.Millisecond),
		kgo.FetchMaxWait(200*time.Millisecond), kgo.TransactionTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	done := 0
	for done < 10 && ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := sess.PollFetches(pctx)
		cancel()
		var recs []*kgo.Record
		fs.EachRecord(func(r *kgo.Record) { recs = append(recs, r) })
		if len(recs) == 0 {
			continue
		}
		if err := sess.Begin(); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			sess.Produce(ctx, &kgo.Record{Topic: "tx-out", Value: r.Value}, func(_ *kgo.Record, err error) {
				if err != nil {
					t.Errorf("produce: %v", err)
				}
			})
		}
		committed, err := sess.End(ctx, kgo.TryCommit)
		if err != nil {
			t.Fatalf("end transaction: %v", err)
		}
		if committed {
			done += len(recs)
		}
	}
	if done != 10 {
		t.Fatalf("processed %d records in committed transactions, want 10", done)
	}
	off, err := fetchOffset(ctx, admin, "txg", "tx-in")
	if err != nil || off != 10 {
		t.Fatalf("committed offset %d (%v), want 10", off, err)
	}
	rc := newClient(t, addr, kgo.ConsumeTopics("tx-out"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()), kgo.FetchMaxWait(200*time.Millisecond))
	seen := map[string]int{}
	for len(seen) < 10 && ctx.Err() == nil {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		rc.PollFetches(pctx).EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++ })
		cancel()
	}
	for v, n := range seen {
		if n != 1 {
			t.Errorf("output %s seen %d times", v, n)
		}
	}
	if len(seen) != 10 {
		t.Fatalf("read_committed output has %d records, want 10", len(seen))
	}
}
