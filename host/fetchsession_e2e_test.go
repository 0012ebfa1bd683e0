package host_test

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestFetchSessionAcrossRestart: a consumer in an incremental fetch session
// (KIP-227, topic ids from Fetch v13) keeps receiving records from every
// partition after coordhost stops (SIGTERM, or SIGKILL) and restarts on the
// same data directory. The consumer behaves as Java's FetchSessionHandler
// does when it had no fetch in flight during the restart: its next fetch
// carries its session id and epoch and only the partitions whose position
// moved; it drops response topics whose id it does not know and resets
// the session on FETCH_SESSION_ID_NOT_FOUND.
func TestFetchSessionAcrossRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the coordhost binary")
	}
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
	}{{"SIGTERM", syscall.SIGTERM}, {"SIGKILL", syscall.SIGKILL}} {
		t.Run(tc.name, func(t *testing.T) { fetchAcrossRestart(t, tc.sig) })
	}
}

func fetchAcrossRestart(t *testing.T, sig syscall.Signal) {
	const topic, parts = "fs", 4
	dataDir, port := t.TempDir(), freePort(t)
	p := startProc(t, dataDir, port, 0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cl := newClient(t, p.addr, kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.DefaultProduceTopic(topic))
	if err := createTopic(ctx, cl, topic, parts); err != nil {
		t.Fatal(err)
	}
	produce := func(ps ...int32) {
		t.Helper()
		for _, part := range ps {
			r := &kgo.Record{Partition: part, Value: []byte(fmt.Sprint(part))}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatalf("produce to partition %d: %v", part, err)
			}
		}
	}
	md, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	f := &sessionFetcher{br: cl.Broker(0), topicID: md.Topics[0].TopicID, next: map[int32]int64{}, sent: map[int32]int64{}}
	for i := int32(0); i < parts; i++ {
		f.next[i] = 0
	}
	if f.topicID == ([16]byte{}) {
		t.Fatalf("metadata of %s: %+v", topic, md.Topics)
	}
	produce(0, 1, 2, 3)
	if err := f.until(ctx, 30*time.Second, 0, 1, 2, 3); err != nil {
		t.Fatal(err)
	}
	// Only partition 0 moves before the restart, and the session learns
	// its new position: the first fetch after the restart names no
	// partition.
	produce(0)
	if err := f.until(ctx, 30*time.Second, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := f.fetch(ctx); err != nil {
		t.Fatal(err)
	}
	if f.epoch == 0 {
		t.Fatal("the fetches before the restart made no incremental session")
	}
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Wait(); err != nil && sig == syscall.SIGTERM {
		t.Fatalf("coordhost after SIGTERM: %v", err)
	}
	startProc(t, dataDir, port, 1)
	produce(0, 1, 2, 3)
	if err := f.until(ctx, 15*time.Second, 1, 2, 3); err != nil {
		t.Fatalf("after %v and a restart (%d response topics with an unknown id dropped): %v", sig, f.dropped, err)
	}
}

// sessionFetcher is a one-topic KIP-227 fetch session client.
type sessionFetcher struct {
	br        *kgo.Broker
	topicID   [16]byte
	sessionID int32
	epoch     int32
	next      map[int32]int64 // partition -> next offset to fetch
	sent      map[int32]int64 // partition -> offset the session holds
	dropped   int
}

// until fetches until every partition of ps has given a record, or d passes.
func (f *sessionFetcher) until(ctx context.Context, d time.Duration, ps ...int32) error {
	deadline := time.Now().Add(d)
	got := make(map[int32]bool, len(ps))
	for {
		moved, err := f.fetch(ctx)
		if err != nil && time.Now().After(deadline) {
			return err
		}
		for p := range moved {
			got[p] = true
		}
		var missing []int32
		for _, p := range ps {
			if !got[p] {
				missing = append(missing, p)
			}
		}
		if len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no record within %v from partitions %v", d, missing)
		}
		if err != nil {
			time.Sleep(100 * time.Millisecond) // coordhost restarting
		}
	}
}

// fetch sends one fetch: every partition for a new session, the partitions
// whose position moved for an incremental one. It returns the partitions
// that gave records.
func (f *sessionFetcher) fetch(ctx context.Context) (map[int32]bool, error) {
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 200, 1, 1<<20
	req.SessionID, req.SessionEpoch = f.sessionID, f.epoch
	rt := kmsg.NewFetchRequestTopic()
	rt.TopicID = f.topicID
	for p, off := range f.next {
		if f.epoch > 0 && f.sent[p] == off {
			continue
		}
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch, rp.LastFetchedEpoch = p, off, 1<<20, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	if len(rt.Partitions) > 0 {
		req.Topics = append(req.Topics, rt)
	}
	kresp, err := f.br.Request(ctx, req)
	if err != nil {
		return nil, err
	}
	resp := kresp.(*kmsg.FetchResponse)
	if resp.Version < 13 {
		return nil, fmt.Errorf("fetch v%d, want v13+ (topic ids)", resp.Version)
	}
	switch resp.ErrorCode {
	case 0:
	case kerr.FetchSessionIDNotFound.Code, kerr.InvalidFetchSessionEpoch.Code:
		f.sessionID, f.epoch = 0, 0
		return nil, nil
	default:
		return nil, kerr.ErrorForCode(resp.ErrorCode)
	}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			f.sent[p.Partition] = p.FetchOffset
		}
	}
	f.sessionID, f.epoch = resp.SessionID, f.epoch+1
	moved := make(map[int32]bool)
	for _, t := range resp.Topics {
		if t.TopicID != f.topicID {
			f.dropped++ // as Java's client does: a topic it did not ask for
			continue
		}
		for _, p := range t.Partitions {
			if next := nextOffset(p.RecordBatches); next > f.next[p.Partition] {
				f.next[p.Partition] = next
				moved[p.Partition] = true
			}
		}
	}
	return moved, nil
}

// nextOffset is the offset after the last record of the batches in raw (-1
// when there is none).
func nextOffset(raw []byte) int64 {
	next := int64(-1)
	for len(raw) >= 12 {
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw); err != nil {
			break
		}
		next = b.FirstOffset + int64(b.LastOffsetDelta) + 1
		n := 12 + int(b.Length)
		if n > len(raw) {
			break
		}
		raw = raw[n:]
	}
	return next
}
