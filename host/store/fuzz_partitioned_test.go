package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/host/runtime"
)

// fuzzParts is the partition count of FuzzDamagedPartitionedFile's store.
const fuzzParts = 4

// FuzzDamagedPartitionedFile: a partitioned store file (format 4) with
// bytes overwritten anywhere either fails Open with ErrCorrupt naming
// the file, or opens and replays every partition to exactly the records
// written (never fewer, never another value); a replay may fail only
// with ErrCorrupt naming the file. Salvage, the repair's reader, never
// panics, keeps only records that were written with their values, and
// never returns fewer records than were written without saying so (a
// dropped record or an unreadable part).
func FuzzDamagedPartitionedFile(f *testing.F) {
	clean, want, ever := fuzzPartitionedFile(f)
	pageSize := uint32(os.Getpagesize())
	f.Add(uint32(0*pageSize+20), []byte{0xff})              // meta page 0, past its header
	f.Add(uint32(1*pageSize+64), []byte{1, 2, 3, 4})        // meta page 1: the txid
	f.Add(uint32(3*pageSize+8), []byte{0xff, 0xff})         // a page's element count
	f.Add(uint32(4*pageSize+40), []byte("xxxx"))            // inside a page
	f.Add(uint32(len(clean))-pageSize/2, []byte("damaged")) // the last page
	f.Add(uint32(0), []byte{})
	for p := uint32(2); p*pageSize < uint32(len(clean)); p++ {
		f.Add(p*pageSize+uint32(16+8*p%64), []byte{0x5a})
	}
	f.Fuzz(func(t *testing.T, off uint32, patch []byte) {
		path := patchedFile(t, clean, off, patch)
		opened := checkOpenWhole(t, path, want)
		checkOpenForLoad(t, path, opened)
		checkSalvageHonest(t, path, want, ever)
	})
}

// checkOpenWhole: Open refuses the file with ErrCorrupt naming it, or
// every partition replays to exactly want (keyed by partition, then key).
// It returns whether Open opened the file.
func checkOpenWhole(t *testing.T, path string, want []map[string]string) bool {
	t.Helper()
	refused := func(what string, err error) bool {
		if err == nil {
			return false
		}
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
			t.Fatalf("%s: %v, want ErrCorrupt naming the file", what, err)
		}
		return true
	}
	s, err := Open(path)
	if refused("open", err) {
		return false
	}
	defer s.Close()
	total := 0
	for _, m := range want {
		total += len(m)
	}
	if s.RecordsAtOpen() != total {
		t.Fatalf("opened with %d records, %d were written", s.RecordsAtOpen(), total)
	}
	for p, m := range want {
		got := map[string]string{}
		last := uint64(0)
		err := s.ReplayPartition(p, func(e Entry) error {
			if e.Seq <= last {
				return fmt.Errorf("sequence %d after %d", e.Seq, last)
			}
			last = e.Seq
			got[string(e.Key)] = string(e.Value)
			return nil
		})
		if refused(fmt.Sprintf("partition %d replay", p), err) {
			continue
		}
		if fmt.Sprint(got) != fmt.Sprint(m) {
			t.Fatalf("partition %d replayed %d records unlike the %d written:\n got %v\nwant %v", p, len(got), len(m), got, m)
		}
	}
	return true
}

// checkOpenForLoad: OpenForLoad, its partitions lent while bbolt's
// check runs in the background, then Verified, refuses the file (at
// open or at Verified, with ErrCorrupt naming it) exactly when Open
// did, and never crashes.
func checkOpenForLoad(t *testing.T, path string, opened bool) {
	t.Helper()
	s, err := OpenForLoad(path)
	if err == nil {
		for p := range fuzzParts {
			_ = s.LendPartition(p, func(Entry) error { return nil })
		}
		err = s.Verified()
		s.Close()
	}
	if (err == nil) != opened {
		t.Fatalf("Open opened the file: %v; OpenForLoad and Verified: %v", opened, err)
	}
	if err != nil && (!errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path)) {
		t.Fatalf("OpenForLoad: %v, want ErrCorrupt naming the file", err)
	}
}

// checkSalvageHonest: Salvage keeps only written records with their
// latest values (an earlier one only when it reports a part of the file
// unreadable), and reports a loss whenever it keeps fewer than were
// written.
func checkSalvageHonest(t *testing.T, path string, want []map[string]string, ever map[string]bool) {
	t.Helper()
	sal, err := Salvage(path)
	if err != nil {
		t.Fatal(err)
	}
	all := map[string]string{}
	for _, m := range want {
		for k, v := range m {
			all[k] = v
		}
	}
	kept := map[string]bool{}
	for _, e := range sal.Records {
		if v, ok := all[string(e.Key)]; !ok || v != string(e.Value) {
			if sal.Unreadable == nil || !ever[string(e.Key)+"="+string(e.Value)] {
				t.Fatalf("salvage kept %q = %q, not its latest value (unreadable: %v)", e.Key, e.Value, sal.Unreadable)
			}
		}
		kept[string(e.Key)] = true
	}
	if len(kept) < len(all) && len(sal.Dropped) == 0 && sal.Unreadable == nil {
		t.Fatalf("salvage kept %d of the %d records and reported nothing dropped or unreadable", len(kept), len(all))
	}
}

// fuzzPartitionedFile writes a store of fuzzParts partitions in several
// transactions (overwrites and tombstones among them, a value that
// spans pages) and returns its bytes and the live records of each
// partition, and every key=value ever written.
func fuzzPartitionedFile(f *testing.F) ([]byte, []map[string]string, map[string]bool) {
	base := filepath.Join(f.TempDir(), "coordhost.db")
	s, err := Open(base)
	if err != nil {
		f.Fatal(err)
	}
	if err := s.Partition(fuzzParts, testGroup); err != nil {
		f.Fatal(err)
	}
	want, ever := make([]map[string]string, fuzzParts), map[string]bool{}
	for p := range want {
		want[p] = map[string]string{}
	}
	for round := range 6 {
		var batches []PartitionBatch
		for g := range 8 {
			group := fmt.Sprintf("g%d", g)
			p := runtime.PartitionFor(group, fuzzParts)
			var recs []Record
			for m := range 4 {
				k := fmt.Sprintf("%s/m%d", group, m)
				switch {
				case round == 4 && m == g%4: // a tombstone
					recs = append(recs, Record{Key: []byte(k)})
					delete(want[p], k)
				default:
					v := strings.Repeat(fmt.Sprintf("%s-r%d.", k, round), 3+m)
					if round == 5 && g == 0 && m == 0 {
						v = strings.Repeat("big.", 2500) // more than a page
					}
					recs = append(recs, Record{Key: []byte(k), Value: []byte(v)})
					want[p][k] = v
					ever[k+"="+v] = true
				}
			}
			batches = append(batches, PartitionBatch{Partition: p, Records: recs})
		}
		if err := s.AppendPartitions(batches); err != nil {
			f.Fatal(err)
		}
	}
	s.Close()
	clean, err := os.ReadFile(base)
	if err != nil {
		f.Fatal(err)
	}
	return clean, want, ever
}
