package interop

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/coordhost/coordhost/host/runtime"
	"github.com/coordhost/coordhost/host/store/kafkalog"
)

// TestStateTopicRealKafka runs the state topic log (store.kind=kafka)
// against the real Apache Kafka 4.4 broker: the topic is created, appends
// commit in transactions, a second writer's take-over fences the first
// (whose append fails ErrFenced and never replays), and a replay gives the
// state an in-memory log gives. Not part of CI's interop step; run it with
// COORDHOST_INTEROP=1 go test -count=1 -v -run TestStateTopicRealKafka ./interop
func TestStateTopicRealKafka(t *testing.T) {
	needInterop(t)
	b := startBroker(t, logDir(t))
	open := func() *kafkalog.Log {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		l, err := kafkalog.Open(ctx, kafkalog.Config{ClientOpts: []kgo.Opt{kgo.SeedBrokers(b.addr)}, Partitions: 3,
			ReplicationFactor: 1, MinInsyncReplicas: 1, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		return l
	}
	replay := func(l runtime.Log, p int) map[string]string {
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
	a, ml := open(), runtime.NewMemLog()
	for p := 0; p < 3; p++ {
		replay(a, p)
	}
	for i := 0; i < 300; i++ {
		p := i % 3
		batch := []runtime.Record{{Key: fmt.Appendf(nil, "g%d/k%d", p, i%17), Value: fmt.Appendf(nil, "v%d", i)}}
		if i%10 == 9 {
			batch = append(batch, runtime.Record{Key: fmt.Appendf(nil, "g%d/k%d", p, (i+5)%17)})
		}
		for _, l := range []runtime.Log{a, ml} {
			if err := l.Append(p, batch); err != nil {
				t.Fatalf("append %d: %v", i, err)
			}
		}
	}
	bl := open()
	for p := 0; p < 3; p++ {
		if got, want := replay(bl, p), replay(ml, p); !maps.Equal(got, want) {
			t.Fatalf("partition %d: replayed %d keys %v, want %d keys %v", p, len(got), got, len(want), want)
		}
	}
	err := a.Append(1, []runtime.Record{{Key: []byte("g1/fenced"), Value: []byte("x")}})
	if !errors.Is(err, runtime.ErrFenced) {
		t.Fatalf("append of the fenced writer: %v", err)
	}
	if err := bl.Append(1, []runtime.Record{{Key: []byte("g1/new"), Value: []byte("y")}}); err != nil {
		t.Fatal(err)
	}
	got := replay(open(), 1)
	if _, ok := got["g1/fenced"]; ok || got["g1/new"] != "y" {
		t.Fatalf("after fencing: %v", got)
	}
}
