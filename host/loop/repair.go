package loop

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/coordhost/coordhost/host/runtime"
	"github.com/coordhost/coordhost/host/store"
)

// RepairStore is the operator's repair of the store file at path (coordhost
// repair): the records of the current store file whose checksum verifies
// are written to a new store, the old file is moved aside (never deleted),
// and w gets exactly what was kept and dropped, per partition and group.
// A missing store file is replaced by an empty store. parts is the
// partition count of the new store when the old one does not record one.
func RepairStore(path string, parts int, w io.Writer) error {
	fmt.Fprintf(w, "repairing store %s\n", path)
	sal := &store.Salvaged{}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintln(w, "  the store file is missing: the new store is empty (every group's state in the lost file is gone)")
	} else {
		if sal, err = store.Salvage(path); err != nil {
			return err
		}
		aside := path + ".damaged-" + time.Now().UTC().Format("20060102T150405Z")
		if err := os.Rename(path, aside); err != nil {
			return fmt.Errorf("moving the damaged store aside: %w", err)
		}
		fmt.Fprintf(w, "  the old file is kept as %s\n", aside)
	}
	if sal.Unreadable != nil {
		fmt.Fprintf(w, "  UNREADABLE: %v: the records in the unreadable part are lost and their count is unknown\n", sal.Unreadable)
	}
	if sal.Partitions > 0 {
		parts = sal.Partitions
	}
	kept, dropped := map[string]int{}, map[string]map[string]int{}
	drop := func(key []byte, why string) {
		g, err := RecordGroup(key)
		if err != nil {
			g = fmt.Sprintf("(unknown group, key %x)", key)
		}
		if dropped[g] == nil {
			dropped[g] = map[string]int{}
		}
		dropped[g][why]++
	}
	for _, d := range sal.Dropped {
		drop(d.Key, d.Why)
	}
	batches := make([]store.PartitionBatch, parts)
	for p := range batches {
		batches[p].Partition = p
	}
	for _, e := range sal.Records {
		g, err := RecordGroup(e.Key)
		if err != nil {
			drop(e.Key, "key names no group")
			continue
		}
		p := runtime.PartitionFor(g, parts)
		batches[p].Records = append(batches[p].Records, store.Record{Key: e.Key, Value: e.Value})
		kept[g]++
	}
	st, err := store.OpenNew(path)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := st.Partition(parts, RecordGroup); err != nil {
		return err
	}
	if err := st.AppendPartitions(batches); err != nil {
		return err
	}
	nKept := 0
	for _, n := range kept {
		nKept += n
	}
	fmt.Fprintf(w, "  kept %d records (checksum verified) in %d groups\n", nKept, len(kept))
	for _, g := range sortedKeys(kept) {
		fmt.Fprintf(w, "    partition %d group %q: %d kept\n", runtime.PartitionFor(g, parts), g, kept[g])
	}
	nDropped := 0
	for _, whys := range dropped {
		for _, n := range whys {
			nDropped += n
		}
	}
	fmt.Fprintf(w, "  dropped %d records\n", nDropped)
	for _, g := range sortedKeys(dropped) {
		for _, why := range sortedKeys(dropped[g]) {
			fmt.Fprintf(w, "    partition %d group %q: %d dropped (%s)\n", runtime.PartitionFor(g, parts), g, dropped[g][why], why)
		}
	}
	fmt.Fprintf(w, "new store written: %s (%d partitions); coordhost can start\n", path, parts)
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
