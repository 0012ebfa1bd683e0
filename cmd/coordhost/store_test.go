package main

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/runtime"
	"github.com/coordhost/coordhost/host/store"
	"github.com/coordhost/coordhost/host/store/kafkalog"
)

// TestStoreMigrate: the bbolt store's partitions land in the state topic
// in their replay order (a key overwritten, one deleted, a long key); a
// second migration into the now non-empty topic is refused.
func TestStoreMigrate(t *testing.T) {
	dir := t.TempDir()
	st, err := store.Open(filepath.Join(dir, host.StoreFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Partition(3, func([]byte) (string, error) { return "g", nil }); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("k", 40000) // stored under its hash by bbolt
	batches := []store.PartitionBatch{
		{Partition: 0, Records: []store.Record{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte("1")}}},
		{Partition: 2, Records: []store.Record{{Key: []byte(long), Value: []byte("L")}}},
	}
	if err := st.AppendPartitions(batches); err != nil {
		t.Fatal(err)
	}
	if err := st.AppendPartitions([]store.PartitionBatch{{Partition: 0, Records: []store.Record{{Key: []byte("a"), Value: []byte("2")}, {Key: []byte("b")}}}}); err != nil {
		t.Fatal(err)
	}
	want := make([][]runtime.Record, 3)
	for p := range want {
		if err := st.ReplayPartition(p, func(e store.Entry) error {
			want[p] = append(want[p], runtime.Record{Key: e.Key, Value: e.Value})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()
	if len(want[0]) != 1 || string(want[0][0].Value) != "2" || len(want[2]) != 1 {
		t.Fatalf("store replays %v", want)
	}

	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	args := []string{"migrate", "--to", "kafka", "--data.dir=" + dir, "--dataplane.mode=external", "--dataplane.bootstrap=" + c.ListenAddrs()[0],
		"--store.kafka.topic=state"}
	var out, errb bytes.Buffer
	if code := runStore(args, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "copied 2 records") {
		t.Fatalf("output: %s", out.String())
	}
	l, err := kafkalog.Open(context.Background(), kafkalog.Config{ClientOpts: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, Topic: "state", Partitions: 3, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for p := range want {
		var got []runtime.Record
		if err := l.Replay(p, func(r runtime.Record) error { got = append(got, r); return nil }); err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, want[p], func(a, b runtime.Record) bool {
			return bytes.Equal(a.Key, b.Key) && bytes.Equal(a.Value, b.Value)
		}) {
			t.Fatalf("partition %d: topic replays %d records, store %d", p, len(got), len(want[p]))
		}
	}
	errb.Reset()
	if code := runStore(args, nil, &out, &errb); code != 1 || !strings.Contains(errb.String(), "not empty") {
		t.Fatalf("second migration: exit %d: %s", code, errb.String())
	}
}

// TestStoreMigrateRefuses: no target, another target, or the embedded
// data plane are refused before anything is read.
func TestStoreMigrateRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{}, 2, "usage"},
		{[]string{"migrate", "--data.dir=" + dir}, 2, `--to ""`},
		{[]string{"migrate", "--to=bbolt", "--data.dir=" + dir}, 2, `--to "bbolt"`},
		{[]string{"migrate", "--to", "kafka", "--data.dir=" + dir}, 1, "dataplane.mode=external"},
		{[]string{"migrate", "--to", "kafka", "--data.dir=" + dir, "--dataplane.mode=external", "--dataplane.bootstrap=127.0.0.1:1"}, 1, host.StoreFile},
	} {
		var out, errb bytes.Buffer
		if code := runStore(tc.args, nil, &out, &errb); code != tc.code || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, %q; want %d and %q", tc.args, code, errb.String(), tc.code, tc.want)
		}
	}
}
