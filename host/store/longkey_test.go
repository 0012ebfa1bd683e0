package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/coordhost/coordhost/host/runtime"
)

// longEntries is partition p's replay, long keys and values shortened to
// their length and first bytes.
func longEntries(t *testing.T, s *Store, p int) string {
	t.Helper()
	var b strings.Builder
	if err := s.ReplayPartition(p, func(e Entry) error {
		k := string(e.Key)
		if len(k) > 16 {
			k = fmt.Sprintf("%s..(%d)", k[:8], len(k))
		}
		fmt.Fprintf(&b, "%d %s=%s;", e.Seq, k, e.Value)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func storeFormat(t *testing.T, path string) uint32 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var f uint32
	db.View(func(tx *bolt.Tx) error { f = binary.BigEndian.Uint32(tx.Bucket(bucketMeta).Get(keyFormat)); return nil })
	return f
}

// TestLongKeysAreStoredUnderTheirHash: a 40 KiB key (over bbolt's 32 KiB
// key limit) and a short key starting with the reserved byte round-trip
// through the log beside normal keys, in sequence order, across a
// reopen; their tombstones delete them; Salvage (coordhost repair) keeps
// them with their full keys.
func TestLongKeysAreStoredUnderTheirHash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "coordhost.db")
	s := openT(t, path)
	if err := s.Partition(1, testGroup); err != nil {
		t.Fatal(err)
	}
	l, err := NewLog(s)
	if err != nil {
		t.Fatal(err)
	}
	long := append([]byte("g/"), bytes.Repeat([]byte("L"), 40<<10)...)
	long2 := append([]byte("g/"), bytes.Repeat([]byte("M"), 40<<10)...)
	reserved := []byte{hashedKeyPrefix, 'r'}
	app := func(recs ...runtime.Record) {
		t.Helper()
		if err := l.Append(0, recs); err != nil {
			t.Fatal(err)
		}
	}
	app(runtime.Record{Key: []byte("g/a"), Value: []byte("1")})
	l.Close()
	s.Close()
	if f := storeFormat(t, path); f != formatVersionLogs {
		t.Fatalf("format %d, want %d", f, formatVersionLogs)
	}
	s = openT(t, path)
	if l, err = NewLog(s); err != nil {
		t.Fatal(err)
	}
	app(runtime.Record{Key: long, Value: []byte("2")}, runtime.Record{Key: long2, Value: []byte("3")}, runtime.Record{Key: reserved, Value: []byte("4")})
	app(runtime.Record{Key: []byte("g/b"), Value: []byte("5")}, runtime.Record{Key: long, Value: []byte("6")})
	want := "1 g/a=1;3 g/MMMMMM..(40962)=3;4 \xfer=4;5 g/b=5;6 g/LLLLLL..(40962)=6;"
	if got := longEntries(t, s, 0); got != want {
		t.Fatalf("replay:\n got %q\nwant %q", got, want)
	}
	if got := render(replayAll(t, s)); !strings.Contains(got, string(long)+"=6;") {
		t.Fatal("the global replay lost the long key")
	}
	l.Close()
	s.Close()
	if f := storeFormat(t, path); f != formatVersionLogs {
		t.Fatalf("format %d with long keys, want %d", f, formatVersionLogs)
	}

	sal, err := Salvage(path)
	if err != nil || sal.Unreadable != nil || len(sal.Dropped) != 0 {
		t.Fatalf("salvage: %+v %v", sal, err)
	}
	var got []string
	for _, e := range sal.Records {
		got = append(got, fmt.Sprintf("%d:%d:%s", e.Seq, len(e.Key), e.Value))
		if e.Seq == 6 && !bytes.Equal(e.Key, long) {
			t.Fatal("salvage changed the long key")
		}
	}
	if g := strings.Join(got, " "); g != "1:3:1 3:40962:3 4:2:4 5:3:5 6:40962:6" {
		t.Fatalf("salvaged %s", g)
	}

	s = openT(t, path)
	defer s.Close()
	if l, err = NewLog(s); err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if got := longEntries(t, s, 0); got != want {
		t.Fatalf("replay after reopen:\n got %q\nwant %q", got, want)
	}
	app(runtime.Record{Key: long}, runtime.Record{Key: reserved})
	if got, want := longEntries(t, s, 0), "1 g/a=1;3 g/MMMMMM..(40962)=3;5 g/b=5;"; got != want {
		t.Fatalf("after tombstones:\n got %q\nwant %q", got, want)
	}
	err = s.db.View(func(tx *bolt.Tx) error {
		if n := tx.Bucket(bucketKeys).Stats().KeyN; n != 3 {
			return fmt.Errorf("%d stored records after the tombstones, want 3", n)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestLongKeyLimits: an unpartitioned store refuses keys it would have to
// hash (its format cannot say so); a record over a bbolt value is refused
// with ErrInvalidRecord; a log entry whose key the keys index does not
// name under its sequence number fails Open as corruption.
func TestLongKeyLimits(t *testing.T) {
	dir := t.TempDir()
	u := openT(t, filepath.Join(dir, "one.db"))
	defer u.Close()
	if _, err := u.Append([]Record{{Key: bytes.Repeat([]byte("k"), bolt.MaxKeySize+1), Value: []byte("v")}}); !errors.Is(err, runtime.ErrInvalidRecord) {
		t.Fatalf("long key in an unpartitioned store: %v", err)
	}
	if err := u.Validate(Record{Key: []byte("k"), Value: make([]byte, 10)}); err != nil {
		t.Fatal(err)
	}
	u.maxRecord = 100
	if err := u.Validate(Record{Key: bytes.Repeat([]byte("k"), bolt.MaxKeySize+1), Value: []byte("v")}); !errors.Is(err, runtime.ErrInvalidRecord) || !strings.Contains(err.Error(), "more than the 100") {
		t.Fatalf("record over the value limit: %v", err)
	}

	path := filepath.Join(dir, "parts.db")
	s := openT(t, path)
	if err := s.Partition(1, testGroup); err != nil {
		t.Fatal(err)
	}
	long := append([]byte("g/"), bytes.Repeat([]byte("L"), 40<<10)...)
	if err := s.AppendPartitions([]PartitionBatch{{Partition: 0, Records: []Record{{Key: long, Value: []byte("v")}}}}); err != nil {
		t.Fatal(err)
	}
	other := append([]byte("g/"), bytes.Repeat([]byte("X"), 40<<10)...)
	err := s.db.Update(func(tx *bolt.Tx) error { // a valid checksum over another key
		return tx.Bucket(bucketLogs).Bucket(partName(0)).Put(binary.BigEndian.AppendUint64(nil, 1), encodeEntry(other, []byte("v")))
	})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(path); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "keys index") {
		t.Fatalf("open with a log entry the keys index does not name: %v", err)
	}
	sal, err := Salvage(path)
	if err != nil || len(sal.Records) != 0 || len(sal.Dropped) != 1 {
		t.Fatalf("salvage of an entry with another key: %+v %v", sal, err)
	}
}
