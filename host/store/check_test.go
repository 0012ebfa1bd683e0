package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/host/runtime"
)

// TestOpenForLoadChecksInBackground: a file that only bbolt's
// consistency check refuses (one page more in use than the tree and the
// free list hold) is refused by Open at once; OpenForLoad opens it and
// lends its partitions, and then Verified refuses it with ErrCorrupt
// naming the file, and every write fails so, leaving the file as it
// was. The undamaged file verifies and takes writes.
func TestOpenForLoadChecksInBackground(t *testing.T) {
	path := filepath.Join(t.TempDir(), "coordhost.db")
	s := openT(t, path)
	if err := s.Partition(2, testGroup); err != nil {
		t.Fatal(err)
	}
	batches := []PartitionBatch{{Partition: runtime.PartitionFor("g0", 2), Records: []Record{{Key: []byte("g0/m0"), Value: []byte("v")}}}}
	if err := s.AppendPartitions(batches); err != nil {
		t.Fatal(err)
	}
	s.Close()
	clean, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	good := filepath.Join(t.TempDir(), "coordhost.db")
	if err := os.WriteFile(good, clean, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = OpenForLoad(good)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Verified(); err != nil {
		t.Fatalf("undamaged store: %v", err)
	}
	if err := s.AppendPartitions(batches); err != nil {
		t.Fatalf("undamaged store: append: %v", err)
	}
	s.Close()

	bad := filepath.Join(t.TempDir(), "coordhost.db")
	damaged := unreachablePage(t, clean)
	if err := os.WriteFile(bad, damaged, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeMarker(bad); err != nil {
		t.Fatal(err)
	}
	refused := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "unreachable unfreed") {
			t.Fatalf("%s: %v, want ErrCorrupt naming the file and the unreachable page", what, err)
		}
	}
	if s, err := Open(bad); err == nil {
		s.Close()
		t.Fatal("Open accepted a file that fails bbolt's check")
	} else {
		refused("Open", err)
	}
	s, err = OpenForLoad(bad)
	if err != nil {
		t.Fatalf("OpenForLoad refused at open what only the background check finds: %v", err)
	}
	lent := 0
	for p := range 2 {
		if err := s.LendPartition(p, func(Entry) error { lent++; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	if lent != 1 {
		t.Fatalf("lent %d records, want 1", lent)
	}
	refused("Verified", s.Verified())
	err = s.AppendPartitions(batches)
	refused("AppendPartitions", err)
	if !errors.Is(err, runtime.ErrStorage) {
		t.Fatalf("AppendPartitions: %v, want ErrStorage", err)
	}
	s.Close()
	if after, err := os.ReadFile(bad); err != nil || !bytes.Equal(after, damaged) {
		t.Fatalf("the refused file changed (%v)", err)
	}
}

// unreachablePage returns a bbolt file like clean with its newer meta
// page's high-water mark raised over one more page, zeroed (the meta's
// checksum made again): a page that no bucket reaches and the free list
// does not hold, which only bbolt's consistency check notices.
func unreachablePage(t *testing.T, clean []byte) []byte {
	t.Helper()
	pageSize := os.Getpagesize()
	b := bytes.Clone(clean)
	// bbolt's meta, after the 16-byte page header: magic, version, page
	// size, flags (4 bytes each), root bucket (16), freelist page (8),
	// high-water mark (8), txid (8), then the FNV-64a checksum of all
	// that.
	const meta, pgidAt, txidAt, sumAt = 16, 40, 48, 56
	newer := 0
	if binary.LittleEndian.Uint64(b[pageSize+meta+txidAt:]) > binary.LittleEndian.Uint64(b[meta+txidAt:]) {
		newer = 1
	}
	hwm := int(binary.LittleEndian.Uint64(b[newer*pageSize+meta+pgidAt:]))
	if len(b) < (hwm+1)*pageSize {
		b = append(b, make([]byte, (hwm+1)*pageSize-len(b))...)
	}
	clear(b[hwm*pageSize : (hwm+1)*pageSize])
	m := b[newer*pageSize+meta:]
	binary.LittleEndian.PutUint64(m[pgidAt:], uint64(hwm+1))
	h := fnv.New64a()
	h.Write(m[:sumAt])
	binary.LittleEndian.PutUint64(m[sumAt:], h.Sum64())
	return b
}
