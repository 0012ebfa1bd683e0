package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/runtime"
	"github.com/coordhost/coordhost/host/store"
	"github.com/coordhost/coordhost/host/store/kafkalog"
)

func init() { commands["store"] = storeCmd }

const storeUsage = "coordhost store migrate --to kafka [serve flags]: copy the bbolt store in data.dir into the state topic " +
	"(store.kafka.topic) of the external cluster; the topic must hold no record, the store file is left as it is"

// storeCmd (coordhost store migrate --to kafka [serve flags]) copies a
// bbolt store's partitions into the state topic, for store.kind=kafka
// (docs/SCALE-OUT.md).
func storeCmd(args []string) int { return runStore(args, os.Environ(), os.Stdout, os.Stderr) }

func runStore(args, environ []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "migrate" {
		fmt.Fprintln(stderr, "usage:", storeUsage)
		return 2
	}
	to, rest := "", []string{}
	for i := 1; i < len(args); i++ { // --to is the migration's own flag; the others are serve's
		switch a := args[i]; {
		case (a == "--to" || a == "-to") && i+1 < len(args):
			to, i = args[i+1], i+1
		case strings.HasPrefix(a, "--to="), strings.HasPrefix(a, "-to="):
			_, to, _ = strings.Cut(a, "=")
		default:
			rest = append(rest, a)
		}
	}
	if to != "kafka" {
		fmt.Fprintf(stderr, "coordhost store migrate: --to %q: the only target is kafka\nusage: %s\n", to, storeUsage)
		return 2
	}
	cfg, err := config.Load(rest, environ, stderr)
	if errors.Is(err, config.ErrHelp) {
		fmt.Fprintln(stderr, storeUsage)
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "coordhost:", err)
		return 2
	}
	if err := migrateToKafka(cfg, stdout); err != nil {
		fmt.Fprintln(stderr, "coordhost store migrate:", err)
		return 1
	}
	return 0
}

// migrateToKafka copies every partition of the store in cfg.DataDir into
// the state topic, one transaction per chunk of records, after checking
// that no partition of the topic holds a record; it then replays the
// topic and compares it with the store.
func migrateToKafka(cfg *config.Config, w io.Writer) error {
	if cfg.DataPlane.Embedded {
		return errors.New(`the state topic lives on an external cluster: set dataplane.mode=external and dataplane.bootstrap`)
	}
	path := filepath.Join(cfg.DataDir, host.StoreFile)
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("store %s: %w", path, err)
	}
	st, err := store.Open(path)
	if err != nil {
		return err
	}
	defer st.Close()
	parts := st.Partitions()
	if parts == 0 {
		return fmt.Errorf("store %s is not partitioned yet: start coordhost once with store.kind=bbolt to convert it, then migrate", path)
	}
	kc, err := host.StateTopicConfig(cfg, parts)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := kafkalog.Open(ctx, kc)
	if err != nil {
		return err
	}
	defer l.Close()
	for p := 0; p < parts; p++ { // takes every partition over, fencing any writer
		n := 0
		if err := l.Replay(p, func(runtime.Record) error { n++; return nil }); err != nil {
			return err
		}
		if n > 0 {
			return fmt.Errorf("state topic %q is not empty (partition %d holds %d records): migrate only into a topic without records", kc.Topic, p, n)
		}
	}
	fmt.Fprintf(w, "copying store %s (%d partitions) into state topic %q\n", path, parts, kc.Topic)
	total := 0
	for p := 0; p < parts; p++ {
		n, err := copyPartition(st, l, p)
		if err != nil {
			return fmt.Errorf("partition %d: %w (the topic now holds part of the store: delete it before migrating again)", p, err)
		}
		total += n
	}
	fmt.Fprintf(w, "copied %d records; the topic replays to the store's records, partition by partition\n", total)
	fmt.Fprintln(w, "start coordhost with store.kind=kafka; the store file is unchanged")
	return nil
}

// migrateChunk is the records of one migration transaction.
const migrateChunk = 4096

// copyPartition appends partition p's records to l and checks that l
// replays them in the same order.
func copyPartition(st *store.Store, l *kafkalog.Log, p int) (int, error) {
	var recs []runtime.Record
	if err := st.ReplayPartition(p, func(e store.Entry) error {
		recs = append(recs, runtime.Record{Key: e.Key, Value: e.Value})
		return nil
	}); err != nil {
		return 0, err
	}
	for start := 0; start < len(recs); start += migrateChunk {
		if err := l.Append(p, recs[start:min(start+migrateChunk, len(recs))]); err != nil {
			return 0, err
		}
	}
	i := 0
	err := l.Replay(p, func(r runtime.Record) error {
		if i >= len(recs) || string(r.Key) != string(recs[i].Key) || string(r.Value) != string(recs[i].Value) {
			return fmt.Errorf("the topic replays record %d (key %x) unlike the store", i, r.Key)
		}
		i++
		return nil
	})
	if err == nil && i != len(recs) {
		err = fmt.Errorf("the topic replays %d records, the store holds %d", i, len(recs))
	}
	return len(recs), err
}
