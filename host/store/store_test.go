package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func openT(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func replayAll(t *testing.T, s *Store) []Entry {
	t.Helper()
	var out []Entry
	if err := s.Replay(func(e Entry) error { out = append(out, e); return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

func render(es []Entry) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "%d %s=%s;", e.Seq, e.Key, e.Value)
	}
	return b.String()
}

// TestSurvivesReopenAndReplaysInOrder: a key's latest write wins and moves
// to its new sequence position; tombstones delete; the order is the order
// of last writes, across batches and across a close and reopen.
func TestSurvivesReopenAndReplaysInOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "coordhost.db")
	s := openT(t, path)
	must := func(batch ...Record) {
		if _, err := s.Append(batch); err != nil {
			t.Fatal(err)
		}
	}
	must(Record{Key: []byte("a"), Value: []byte("1")}, Record{Key: []byte("b"), Value: []byte("2")}, Record{Key: []byte("c"), Value: []byte("3")})
	must(Record{Key: []byte("a"), Value: []byte("4")}, Record{Key: []byte("b"), Value: nil})
	must(Record{Key: []byte("d"), Value: []byte{}}) // empty value is a value, not a tombstone
	want := "3 c=3;4 a=4;6 d=;"
	if got := render(replayAll(t, s)); got != want {
		t.Fatalf("before reopen: %s, want %s", got, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, path)
	defer s.Close()
	if got := render(replayAll(t, s)); got != want {
		t.Fatalf("after reopen: %s, want %s", got, want)
	}
	last, err := s.Append([]Record{{Key: []byte("e"), Value: []byte("5")}})
	if err != nil || last != 7 {
		t.Fatalf("sequence after reopen: %d, %v; want 7", last, err)
	}
}

func TestRejectsEmptyKey(t *testing.T) {
	s := openT(t, filepath.Join(t.TempDir(), "s.db"))
	defer s.Close()
	if _, err := s.Append([]Record{{Key: nil, Value: []byte("x")}}); err == nil {
		t.Fatal("empty key accepted")
	}
}

// TestRefusesCorruption: every kind of damage fails Open or Replay with
// ErrCorrupt and a message naming the file; nothing is reset.
func TestRefusesCorruption(t *testing.T) {
	t.Run("garbage file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "s.db")
		os.WriteFile(path, bytes.Repeat([]byte("not a database "), 4096), 0o600)
		expectCorrupt(t, path)
	})
	t.Run("truncated file", func(t *testing.T) {
		path := writeSome(t)
		raw, _ := os.ReadFile(path)
		os.WriteFile(path, raw[:len(raw)/3], 0o600)
		expectCorrupt(t, path)
	})
	t.Run("flipped value byte", func(t *testing.T) {
		path := writeSome(t)
		raw, _ := os.ReadFile(path)
		n := 0
		for i := bytes.Index(raw, []byte("VALUE-MARKER-025")); i >= 0; i = bytes.Index(raw, []byte("VALUE-MARKER-025")) {
			raw[i] ^= 0x01 // every copy, live or in a freed page
			n++
		}
		if n == 0 {
			t.Fatal("marker not found in file")
		}
		os.WriteFile(path, raw, 0o600)
		expectCorrupt(t, path)
	})
	t.Run("bbolt file of another program", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "s.db")
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("other")); return err })
		db.Close()
		expectCorrupt(t, path)
	})
}

func writeSome(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.db")
	s := openT(t, path)
	for i := 0; i < 50; i++ {
		if _, err := s.Append([]Record{{Key: []byte(fmt.Sprintf("key-%03d", i)), Value: []byte(fmt.Sprintf("VALUE-MARKER-%03d", i))}}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	return path
}

func expectCorrupt(t *testing.T, path string) {
	t.Helper()
	raw, _ := os.ReadFile(path)
	s, err := Open(path)
	if err == nil {
		err = s.Replay(func(Entry) error { return nil })
		s.Close()
	}
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Fatalf("want ErrCorrupt naming %s, got %v", path, err)
	}
	after, _ := os.ReadFile(path)
	if !bytes.Equal(raw, after) {
		t.Fatal("the corrupted file was modified")
	}
}

func TestSecondOpenIsRefusedWhileLocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s := openT(t, path)
	defer s.Close()
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "locked") {
		t.Fatalf("second open: %v, want a lock error", err)
	}
}

// TestOpenRefusesLostOrEmptyStore: a store file that is gone while its
// marker shows it existed, or a 0-byte store file, fails Open with an
// error naming the file and the repair; OpenNew replaces a lost file
// with an empty store.
func TestOpenRefusesLostOrEmptyStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "coordhost.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	_, err = Open(path)
	if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "coordhost repair") {
		t.Fatalf("open of a lost store: %v", err)
	}
	s, err = OpenNew(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "0 bytes") {
		t.Fatalf("open of a 0-byte store: %v", err)
	}
}

// TestOpenDamagedLeafPages: damaged pages other than the meta and free
// pages fail Open with ErrCorrupt (not a panic), and Salvage keeps the
// records of the pages it can still read.
func TestOpenDamagedLeafPages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "coordhost.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 200 {
		if _, err := s.Append([]Record{{Key: fmt.Appendf(nil, "k%03d", i), Value: bytes.Repeat([]byte{byte(i)}, 200)}}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps := os.Getpagesize()
	damaged := 0
	for off := 2 * ps; off+ps <= len(b); off += ps {
		flags := binary.LittleEndian.Uint16(b[off+8:])
		if flags == 0x02 { // leaf pages only: the freelist is loaded at open and fails there
			b[off+8], b[off+9] = 0xff, 0xff
			damaged++
			if damaged == 2 {
				break
			}
		}
	}
	if damaged == 0 {
		t.Fatal("no leaf page found")
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("open with damaged leaf pages: %v", err)
	}
	sal, err := Salvage(path)
	if err != nil {
		t.Fatal(err)
	}
	if sal.Unreadable == nil || len(sal.Records) >= 200 {
		t.Fatalf("salvage of damaged leaf pages: %d records, unreadable %v", len(sal.Records), sal.Unreadable)
	}
}

// TestSalvageRefusesAStoreInUse: Salvage of a store another handle holds
// (a running coordhost) fails instead of reporting it unreadable, so a
// repair never replaces a live store.
func TestSalvageRefusesAStoreInUse(t *testing.T) {
	path := filepath.Join(t.TempDir(), "coordhost.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := Salvage(path); err == nil || !strings.Contains(err.Error(), "locked by another process") {
		t.Fatalf("salvage of a store in use: %v", err)
	}
}
