package kafkalog_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/coordhost/coordhost/host/runtime"
	"github.com/coordhost/coordhost/host/store/kafkalog"
)

func cluster(t testing.TB, opts ...kfake.Opt) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func open(t testing.TB, c *kfake.Cluster, parts int, mod ...func(*kafkalog.Config)) *kafkalog.Log {
	t.Helper()
	cfg := kafkalog.Config{ClientOpts: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, Partitions: parts, Timeout: 10 * time.Second}
	for _, m := range mod {
		m(&cfg)
	}
	l, err := kafkalog.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func rec(k, v string) runtime.Record { return runtime.Record{Key: []byte(k), Value: []byte(v)} }

func tomb(k string) runtime.Record { return runtime.Record{Key: []byte(k)} }

// state replays partition p into a map.
func state(t testing.TB, l runtime.Log, p int) map[string]string {
	t.Helper()
	m := map[string]string{}
	if err := l.Replay(p, func(r runtime.Record) error {
		if r.Value == nil {
			delete(m, string(r.Key))
		} else {
			m[string(r.Key)] = string(r.Value)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestLogMatchesMemLog: appends with overwrites, tombstones and an empty
// value replay to the state MemLog replays, before and after the broker
// compacts the topic, and partitions stay apart.
func TestLogMatchesMemLog(t *testing.T) {
	c := cluster(t)
	l := open(t, c, 3)
	ml := runtime.NewMemLog()
	for p := 0; p < 3; p++ {
		state(t, l, p) // take over
	}
	for round := 0; round < 20; round++ {
		for p := 0; p < 3; p++ {
			batch := []runtime.Record{rec(fmt.Sprintf("k%d", round%7), fmt.Sprintf("v%d-%d", p, round)), rec("empty", "")}
			if round%5 == 4 {
				batch = append(batch, tomb(fmt.Sprintf("k%d", (round+3)%7)))
			}
			for _, lg := range []runtime.Log{l, ml} {
				if err := lg.Append(p, batch); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	check := func(when string, l runtime.Log) {
		for p := 0; p < 3; p++ {
			got, want := state(t, l, p), state(t, ml, p)
			if !maps.Equal(got, want) {
				t.Fatalf("%s: partition %d replayed %v, want %v", when, p, got, want)
			}
			if v, ok := got["empty"]; !ok || v != "" {
				t.Fatalf("%s: an empty value replayed as %q, %v", when, v, ok)
			}
		}
	}
	check("written", l)
	c.Compact()
	check("compacted", l)
	check("another log", open(t, c, 3))
}

// TestFencing: a second writer's take-over fences the first, whose
// append fails ErrFenced and never shows in a replay; the open
// transaction of the first writer is aborted by the take-over.
func TestFencing(t *testing.T) {
	c := cluster(t)
	a, b := open(t, c, 2), open(t, c, 2)
	state(t, a, 1)
	if err := a.Append(1, []runtime.Record{rec("g/1", "a1")}); err != nil {
		t.Fatal(err)
	}
	if got := state(t, b, 1); !maps.Equal(got, map[string]string{"g/1": "a1"}) {
		t.Fatalf("b took over and replayed %v", got)
	}
	err := a.Append(1, []runtime.Record{rec("g/1", "a2"), rec("g/2", "a2")})
	if !errors.Is(err, runtime.ErrFenced) || errors.Is(err, runtime.ErrStorage) {
		t.Fatalf("append of the fenced writer: %v", err)
	}
	if err := a.Append(1, []runtime.Record{rec("g/3", "a3")}); !errors.Is(err, runtime.ErrFenced) {
		t.Fatalf("second append of the fenced writer: %v", err)
	}
	if err := a.Append(0, []runtime.Record{rec("g/0", "a")}); !errors.Is(err, runtime.ErrFenced) {
		t.Fatalf("append to a partition a never took over: %v", err)
	}
	if err := b.Append(1, []runtime.Record{rec("g/1", "b1")}); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"g/1": "b1"}
	if got := state(t, open(t, c, 2), 1); !maps.Equal(got, want) {
		t.Fatalf("replayed %v, want %v", got, want)
	}
	// b was fenced by that replay too; a takes the partition back.
	if err := b.Append(1, []runtime.Record{rec("g/1", "b2")}); !errors.Is(err, runtime.ErrFenced) {
		t.Fatalf("b after a third writer's take-over: %v", err)
	}
	if got := state(t, a, 1); !maps.Equal(got, want) {
		t.Fatalf("a took back and replayed %v, want %v", got, want)
	}
	if err := a.Append(1, []runtime.Record{rec("g/1", "a4")}); err != nil {
		t.Fatalf("a after taking back: %v", err)
	}
}

// TestTakeOverAbortsOpenTransaction: a writer that dies inside a
// transaction (records produced, no commit) leaves nothing a take-over
// replays, and the take-over does not wait for the transaction timeout.
func TestTakeOverAbortsOpenTransaction(t *testing.T) {
	c := cluster(t)
	seeds := kgo.SeedBrokers(c.ListenAddrs()...)
	l := open(t, c, 1)
	state(t, l, 0)
	if err := l.Append(0, []runtime.Record{rec("g/1", "committed")}); err != nil {
		t.Fatal(err)
	}
	// A producer on the partition's transactional id that never commits.
	cl, err := kgo.NewClient(seeds, kgo.TransactionalID(l.TransactionalID(0)), kgo.DefaultProduceTopic(kafkalog.DefaultTopic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Key: []byte("g/1"), Value: []byte{1, 'x'}}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	got := state(t, open(t, c, 1), 0)
	if !maps.Equal(got, map[string]string{"g/1": "committed"}) {
		t.Fatalf("replayed %v", got)
	}
	if d := time.Since(start); d > 9*time.Second {
		t.Fatalf("take-over took %v", d)
	}
}

// TestValidateBoundsRecords: a record larger than the topic's
// max.message.bytes fails Validate and Append as invalid, alone; a batch
// larger than it (each record fitting) is split and stored whole.
func TestValidateBoundsRecords(t *testing.T) {
	c := cluster(t)
	l := open(t, c, 1, func(cfg *kafkalog.Config) { cfg.MaxMessageBytes = 4096 })
	if l.MaxMessageBytes() != 4096 {
		t.Fatalf("max.message.bytes %d", l.MaxMessageBytes())
	}
	state(t, l, 0)
	big := rec("g/big", strings.Repeat("x", 4096))
	if err := l.Validate(big); !errors.Is(err, runtime.ErrInvalidRecord) {
		t.Fatalf("validate: %v", err)
	}
	if err := l.Validate(runtime.Record{Value: []byte("v")}); !errors.Is(err, runtime.ErrInvalidRecord) {
		t.Fatalf("empty key: %v", err)
	}
	if err := l.Append(0, []runtime.Record{rec("g/a", "1"), big}); !errors.Is(err, runtime.ErrInvalidRecord) {
		t.Fatalf("append: %v", err)
	}
	var batch []runtime.Record
	want := map[string]string{}
	for i := 0; i < 10; i++ {
		r := rec(fmt.Sprintf("g/%d", i), strings.Repeat(fmt.Sprint(i), 1000))
		batch = append(batch, r)
		want[string(r.Key)] = string(r.Value)
	}
	if err := l.Append(0, batch); err != nil {
		t.Fatal(err)
	}
	if got := state(t, l, 0); !maps.Equal(got, want) {
		t.Fatalf("replayed %d keys, want %d", len(got), len(want))
	}
}

// TestOpenRefusesTopic: an existing topic with another partition count or
// without compaction is refused; a missing one is created compacted, even
// on a cluster that creates topics a Metadata request names.
func TestOpenRefusesTopic(t *testing.T) {
	c := cluster(t, kfake.AllowAutoTopicCreation())
	open(t, c, 4)
	admin, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	req := kmsg.NewPtrDescribeConfigsRequest()
	r := kmsg.NewDescribeConfigsRequestResource()
	r.ResourceType, r.ResourceName = kmsg.ConfigResourceTypeTopic, kafkalog.DefaultTopic
	req.Resources = append(req.Resources, r)
	resp, err := req.RequestWith(context.Background(), admin)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, c := range resp.Resources[0].Configs {
		if c.Value != nil {
			got[c.Name] = *c.Value
		}
	}
	if got["cleanup.policy"] != "compact" || got["unclean.leader.election.enable"] != "false" ||
		got["max.message.bytes"] != fmt.Sprint(kafkalog.DefaultMaxMessageBytes) {
		t.Fatalf("created topic's configs: %v", got)
	}
	cfg := kafkalog.Config{ClientOpts: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, Partitions: 5, Timeout: 5 * time.Second}
	if _, err := kafkalog.Open(context.Background(), cfg); !errors.Is(err, kafkalog.ErrTopic) || !strings.Contains(err.Error(), "has 4 partitions") {
		t.Fatalf("partition count: %v", err)
	}
	ct := kmsg.NewPtrCreateTopicsRequest()
	tt := kmsg.NewCreateTopicsRequestTopic()
	tt.Topic, tt.NumPartitions, tt.ReplicationFactor = "plain", 5, 1
	ct.Topics = append(ct.Topics, tt)
	if _, err := ct.RequestWith(context.Background(), admin); err != nil {
		t.Fatal(err)
	}
	cfg.Topic = "plain"
	if _, err := kafkalog.Open(context.Background(), cfg); !errors.Is(err, kafkalog.ErrTopic) || !strings.Contains(err.Error(), "cleanup.policy") {
		t.Fatalf("not compacted: %v", err)
	}
}

// TestReplayRefusesUnknownFormat: a value of another format version fails
// the replay instead of being misread.
func TestReplayRefusesUnknownFormat(t *testing.T) {
	c := cluster(t)
	l := open(t, c, 1)
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.DefaultProduceTopic(kafkalog.DefaultTopic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Key: []byte("g/1"), Value: []byte{9, 'x'}}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	err = l.Replay(0, func(runtime.Record) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "version 9") {
		t.Fatalf("replay: %v", err)
	}
}

// TestClosed: calls after Close fail as storage errors; Close twice is
// safe.
func TestClosed(t *testing.T) {
	l := open(t, cluster(t), 1)
	state(t, l, 0)
	l.Close()
	l.Close()
	if err := l.Append(0, []runtime.Record{rec("g/1", "v")}); !errors.Is(err, runtime.ErrStorage) {
		t.Fatalf("append after close: %v", err)
	}
}

// TestStorageFailureAbortsAndRecovers: a produce the broker refuses fails
// the append with ErrStorage; its records never replay, and the next
// append (after an epoch bump that aborts the open transaction) is
// stored. A commit that gets no answer is settled: an epoch bump
// completes the transaction and the partition shows whether it
// committed (Append succeeds) or aborted (ErrStorage).
func TestStorageFailureAbortsAndRecovers(t *testing.T) {
	c := cluster(t)
	l := open(t, c, 1, func(cfg *kafkalog.Config) { cfg.Timeout = time.Second })
	state(t, l, 0)
	if err := l.Append(0, []runtime.Record{rec("g/0", "kept")}); err != nil {
		t.Fatal(err)
	}
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		pr := req.(*kmsg.ProduceRequest)
		resp := pr.ResponseKind().(*kmsg.ProduceResponse)
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = pr.Topics[0].Topic
		rp := kmsg.NewProduceResponseTopicPartition()
		rp.ErrorCode = kerr.InvalidRecord.Code
		rt.Partitions = append(rt.Partitions, rp)
		resp.Topics = append(resp.Topics, rt)
		return resp, nil, true
	})
	err := l.Append(0, []runtime.Record{rec("g/1", "lost")})
	if !errors.Is(err, runtime.ErrStorage) || errors.Is(err, runtime.ErrFenced) {
		t.Fatalf("refused produce: %v", err)
	}
	if err := l.Append(0, []runtime.Record{rec("g/2", "after")}); err != nil {
		t.Fatalf("append after the failure: %v", err)
	}
	want := map[string]string{"g/0": "kept", "g/2": "after"}
	if got := state(t, open(t, c, 1), 0); !maps.Equal(got, want) {
		t.Fatalf("replayed %v, want %v", got, want)
	}

	// Commits that get no answer: the append learns their outcome.
	state(t, l, 0) // take back from the log that replayed
	var failing atomic.Bool
	failing.Store(true)
	c.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !failing.Load() || req.GetVersion() == 3 { // the test's own commit below
			return nil, nil, false
		}
		return nil, errors.New("connection lost"), true
	})
	err = l.Append(0, []runtime.Record{rec("g/3", "aborted")})
	if !errors.Is(err, runtime.ErrStorage) || !strings.Contains(err.Error(), "aborted") {
		t.Fatalf("unanswered commit, transaction aborted: %v", err)
	}
	// Another client commits the transaction for the log while the log's
	// own commits get no answer.
	committer, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.MaxVersions(kversion.V3_0_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer committer.Close()
	committed := make(chan error, 1)
	c.ControlKey(int16(kmsg.AddPartitionsToTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		add := req.(*kmsg.AddPartitionsToTxnRequest)
		go func() {
			time.Sleep(200 * time.Millisecond) // the log's produce goes first
			end := kmsg.NewPtrEndTxnRequest()
			end.TransactionalID, end.ProducerID, end.ProducerEpoch, end.Commit = add.TransactionalID, add.ProducerID, add.ProducerEpoch, true
			resp, err := end.RequestWith(context.Background(), committer)
			if err == nil {
				err = kerr.ErrorForCode(resp.ErrorCode)
			}
			committed <- err
		}()
		return nil, nil, false
	})
	if err := l.Append(0, []runtime.Record{rec("g/4", "committed")}); err != nil {
		t.Fatalf("unanswered commit, transaction committed: %v", err)
	}
	if err := <-committed; err != nil {
		t.Fatalf("the test's commit: %v", err)
	}
	failing.Store(false)
	if err := l.Append(0, []runtime.Record{rec("g/5", "next")}); err != nil {
		t.Fatalf("append after a settled commit: %v", err)
	}
	want = map[string]string{"g/0": "kept", "g/2": "after", "g/4": "committed", "g/5": "next"}
	if got := state(t, open(t, c, 1), 0); !maps.Equal(got, want) {
		t.Fatalf("replayed %v, want %v", got, want)
	}
}

// TestOpenWaitsForCreatedTopic: a broker's metadata may list a topic just
// created only a moment later; Open waits for it instead of refusing to
// start.
func TestOpenWaitsForCreatedTopic(t *testing.T) {
	c := cluster(t)
	var created atomic.Bool
	var hidden atomic.Int32
	c.ControlKey(int16(kmsg.CreateTopics), func(kmsg.Request) (kmsg.Response, error, bool) {
		created.Store(true)
		return nil, nil, false
	})
	c.ControlKey(int16(kmsg.Metadata), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mr := req.(*kmsg.MetadataRequest)
		if !created.Load() || len(mr.Topics) != 1 || hidden.Load() >= 3 {
			return nil, nil, false
		}
		hidden.Add(1)
		resp := mr.ResponseKind().(*kmsg.MetadataResponse)
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic, rt.ErrorCode = mr.Topics[0].Topic, kerr.UnknownTopicOrPartition.Code
		resp.Topics = append(resp.Topics, rt)
		return resp, nil, true
	})
	l := open(t, c, 3)
	if hidden.Load() != 3 {
		t.Fatalf("the topic was hidden from %d readings, want 3", hidden.Load())
	}
	state(t, l, 2) // take the partition over
	if err := l.Append(2, []runtime.Record{rec("g/0", "v")}); err != nil {
		t.Fatal(err)
	}
}
