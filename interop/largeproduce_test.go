package interop

import (
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// largeProduceHook counts the Produce requests a client wrote, those over
// 1 MiB, and the answers it failed to read and the connections it lost:
// a frame the gateway garbled would not fail the produce, only make the
// client send it again on a new connection.
type largeProduceHook struct{ all, large, failed, lost atomic.Int32 }

func (h *largeProduceHook) OnBrokerRead(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == 0 && err != nil {
		h.failed.Add(1)
	}
}

func (h *largeProduceHook) OnBrokerDisconnect(kgo.BrokerMetadata, net.Conn) { h.lost.Add(1) }

func (h *largeProduceHook) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, n int, _, _ time.Duration, err error) {
	if key == 0 && err == nil {
		h.all.Add(1)
		if n > 1<<20 {
			h.large.Add(1)
		}
	}
}

// runLargeProduce produces records through coordhost's gateway in
// batches large enough that franz-go's Produce requests exceed 1 MiB (the
// gateway forwards those as frames, unpaced), and reads them back from
// the broker itself: every record is there, in order per partition, byte
// for byte, and no request had to be sent again.
func runLargeProduce(t *testing.T, gateway, brokerAddr string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const (
		topic   = "interop-large-produce"
		records = 24000
	)
	createBenchTopic(ctx, t, gateway, topic)
	h := &largeProduceHook{}
	p := benchClient(t, gateway, kgo.DefaultProduceTopic(topic), kgo.WithHooks(h), kgo.ProducerLinger(50*time.Millisecond))
	base := benchValue()
	valueOf := func(i int) []byte {
		v := append([]byte(nil), base...)
		binary.BigEndian.PutUint64(v, uint64(i))
		return v
	}
	for i := range records {
		p.Produce(ctx, &kgo.Record{Key: []byte(fmt.Sprint(i % 97)), Value: valueOf(i)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Errorf("produce through the gateway: %v", err)
			}
		})
	}
	if err := p.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	failed, lost := h.failed.Load(), h.lost.Load()
	p.Close()
	if failed > 0 || lost > 0 {
		t.Fatalf("producing through the gateway: %d Produce answers not read, %d connections lost", failed, lost)
	}
	if h.large.Load() == 0 {
		t.Fatalf("none of the %d Produce requests was over 1 MiB: the test does not reach the large-frame path", h.all.Load())
	}
	c := benchClient(t, brokerAddr, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer c.Close()
	seen := make([]bool, records)
	last := map[int32]int{}
	for n := 0; n < records; {
		fs := c.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("reading back from the broker after %d records: %v", n, err)
		}
		for _, r := range fs.Records() {
			i := int(binary.BigEndian.Uint64(r.Value))
			if i >= records || seen[i] || string(r.Value) != string(valueOf(i)) {
				t.Fatalf("record %d at partition %d offset %d: out of range, seen before or not as sent", i, r.Partition, r.Offset)
			}
			if prev, ok := last[r.Partition]; ok && prev > i {
				t.Fatalf("partition %d: record %d after %d", r.Partition, i, prev)
			}
			seen[i], last[r.Partition] = true, i
			n++
		}
	}
	t.Logf("%d records in %d Produce requests through the gateway, %d of them over 1 MiB, read back whole from the broker", records, h.all.Load(), h.large.Load())
}
