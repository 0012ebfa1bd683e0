package host_test

import (
	"context"
	"encoding/binary"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// largeValue is record i's value: its number, then bytes that depend on
// it and do not compress.
func largeValue(i int) []byte {
	v := make([]byte, 1024)
	binary.BigEndian.PutUint64(v, uint64(i))
	var seed [32]byte
	binary.BigEndian.PutUint64(seed[:], uint64(i))
	rand.NewChaCha8(seed).Read(v[8:])
	return v
}

// TestLargeRecordsThroughGatewayIntact: the requests over 1 MiB of three
// franz-go producers at once, several in flight each, go through the
// gateway to an external cluster (forwarded as they came, their buffers
// read into again by the requests after them, on any connection) and
// every record arrives as it was sent, read back from the cluster
// directly and through the gateway (whose Fetch answers of several MiB
// are streamed to the consumer).
func TestLargeRecordsThroughGatewayIntact(t *testing.T) {
	var largest atomic.Int64
	dp := newObservedCluster(t, kfake.NumBrokers(1), kfake.SeedTopics(6, "big"))
	dp.c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		dp.c.KeepControl()
		n := 0
		for _, tp := range req.(*kmsg.ProduceRequest).Topics {
			for _, p := range tp.Partitions {
				n += len(p.Records)
			}
		}
		if int64(n) > largest.Load() {
			largest.Store(int64(n))
		}
		return nil, nil, false
	})
	srv := startHost(t, "", "--dataplane.mode=external", dp.bootstrap())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const producers, records = 3, 45000 // 44 MiB
	var wg sync.WaitGroup
	for k := range producers {
		p, err := kgo.NewClient(kgo.SeedBrokers(srv.KafkaAddr()), kgo.DefaultProduceTopic("big"),
			kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(50*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		wg.Go(func() {
			for i := k; i < records; i += producers {
				p.Produce(ctx, &kgo.Record{Value: largeValue(i)}, func(_ *kgo.Record, err error) {
					if err != nil {
						t.Errorf("produce: %v", err)
					}
				})
			}
			if err := p.Flush(ctx); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := largest.Load(); n <= 1<<20 {
		t.Fatalf("the largest Produce carried %d bytes of records: none over 1 MiB was forwarded", n)
	}
	readIntact(ctx, t, dp.c.ListenAddrs()[0], records)
	readIntact(ctx, t, srv.KafkaAddr(), records) // Fetch answers streamed through
}

// readIntact consumes topic big from addr until it read records records,
// each once and as largeValue made it.
func readIntact(ctx context.Context, t *testing.T, addr string, records int) {
	t.Helper()
	c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics("big"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seen := make([]bool, records)
	for got := 0; got < records; {
		fs := c.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consuming from %s: %v", addr, err)
		}
		for _, r := range fs.Records() {
			i := int(binary.BigEndian.Uint64(r.Value))
			if i >= records || seen[i] || string(r.Value) != string(largeValue(i)) {
				t.Fatalf("from %s: record %d at %d/%d arrived changed or twice", addr, i, r.Partition, r.Offset)
			}
			seen[i] = true
			got++
		}
	}
}
