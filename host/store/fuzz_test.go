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

// FuzzDecode: the on-disk record layout decoder (hashed long keys
// included) rejects damage with an error, never a panic, and accepts
// exactly what encodeValue wrote under the key storeKey gives.
func FuzzDecode(f *testing.F) {
	seq1 := []byte{0, 0, 0, 0, 0, 0, 0, 1}
	f.Add(seq1, []byte("k"), encodeValue(1, []byte("k"), []byte("v")))
	f.Add([]byte{1}, []byte("k"), []byte{})
	long := bytes.Repeat([]byte("m"), 33000)
	f.Add(seq1, storeKey(long), encodeValue(1, long, []byte("v")))
	short := []byte{hashedKeyPrefix, 'k'}
	f.Add(seq1, storeKey(short), encodeValue(1, short, nil))
	f.Fuzz(func(t *testing.T, seqKey, key, raw []byte) {
		s := &Store{path: "fuzz.db"}
		e, err := s.decode(seqKey, key, raw)
		if err != nil {
			return
		}
		if !bytes.Equal(storeKey(e.Key), key) {
			t.Fatalf("accepted record key %x under bbolt key %x", shortKey(e.Key), shortKey(key))
		}
		if !bytes.Equal(encodeValue(e.Seq, e.Key, e.Value), raw) {
			t.Fatalf("accepted bytes that encodeValue would not write: %x", shortKey(raw))
		}
	})
}

// FuzzDamagedFile: a store file with bytes overwritten anywhere fails
// Open with an error or opens (never a crash), and Salvage keeps only
// records that were written, with their values intact.
func FuzzDamagedFile(f *testing.F) {
	f.Add(uint32(2*4096+8), []byte{0xff, 0xff})
	f.Add(uint32(3*4096+40), []byte("xxxx"))
	f.Add(uint32(0), []byte{})
	clean, want := fuzzStoreFile(f)
	f.Fuzz(func(t *testing.T, off uint32, patch []byte) {
		path := patchedFile(t, clean, off, patch)
		if s, err := Open(path); err == nil {
			_ = s.Replay(func(Entry) error { return nil })
			s.Close()
		}
		sal, err := Salvage(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range sal.Records {
			if want[string(e.Key)] != string(e.Value) {
				t.Fatalf("salvage kept %q = %q, never written", e.Key, e.Value)
			}
		}
	})
}

// patchedFile writes clean with patch copied over it at off (when off
// is inside it) as a store file in a new directory, with the marker a
// created store has beside it, and returns its path.
func patchedFile(t *testing.T, clean []byte, off uint32, patch []byte) string {
	b := bytes.Clone(clean)
	if int(off) < len(b) {
		copy(b[off:], patch)
	}
	path := filepath.Join(t.TempDir(), "coordhost.db")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeMarker(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// fuzzStoreFile writes a store of 50 small records and returns its
// bytes and the records.
func fuzzStoreFile(f *testing.F) ([]byte, map[string]string) {
	base := filepath.Join(f.TempDir(), "coordhost.db")
	s, err := Open(base)
	if err != nil {
		f.Fatal(err)
	}
	want := map[string]string{}
	for i := range 50 {
		k, v := fmt.Sprintf("k%02d", i), strings.Repeat(fmt.Sprint(i), 30)
		want[k] = v
		if _, err := s.Append([]Record{{Key: []byte(k), Value: []byte(v)}}); err != nil {
			f.Fatal(err)
		}
	}
	s.Close()
	clean, err := os.ReadFile(base)
	if err != nil {
		f.Fatal(err)
	}
	return clean, want
}

// FuzzOpenPageHeader: a store file with one page header's overflow
// field (and, if setCount, its count) overwritten fails Open with ErrCorrupt naming the
// file, or opens and replays (never a crash); and a page in use that
// says it spans pages past the high-water mark is always refused.
// bbolt's own check loops once per page such a header claims, so
// before Open bounded it, the freelist seed opened after about 9 s of
// looping and the leaf seed failed after about 13 s.
func FuzzOpenPageHeader(f *testing.F) {
	f.Add(uint16(5), uint32(0x3fffff), false, uint16(0))  // a leaf page of the records
	f.Add(uint16(12), uint32(0x3fffff), false, uint16(0)) // the freelist page
	f.Add(uint16(2), uint32(1), true, uint16(0xffff))
	f.Add(uint16(3), uint32(0), true, uint16(1))
	clean, _ := fuzzStoreFile(f)
	inUse, hwm := pagesInUse(f, clean)
	f.Fuzz(func(t *testing.T, page uint16, overflow uint32, setCount bool, count uint16) {
		pageSize := os.Getpagesize()
		if int(page) < 2 || int(page) >= len(clean)/pageSize {
			return
		}
		b := bytes.Clone(clean)
		h := b[int(page)*pageSize:]
		if setCount { // bbolt's page header: id, flags, count, overflow
			binary.LittleEndian.PutUint16(h[10:], count)
		}
		binary.LittleEndian.PutUint32(h[12:], overflow)
		path := filepath.Join(t.TempDir(), "coordhost.db")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(path)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), path) {
				t.Fatalf("page %d overflow %d: %v, want ErrCorrupt naming the file", page, overflow, err)
			}
			return
		}
		defer s.Close()
		if inUse[int(page)] && int64(page)+int64(overflow) >= int64(hwm) {
			t.Fatalf("page %d in use, overflow %d past the high-water mark %d: opened", page, overflow, hwm)
		}
		_ = s.Replay(func(Entry) error { return nil })
	})
}

// pagesInUse reads a clean store file's pages that are neither meta nor
// free pages, and its high-water mark.
func pagesInUse(f *testing.F, file []byte) (map[int]bool, int) {
	path := filepath.Join(f.TempDir(), "clean.db")
	if err := os.WriteFile(path, file, 0o600); err != nil {
		f.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	inUse := map[int]bool{}
	var hwm int
	err = db.View(func(tx *bolt.Tx) error {
		hwm = int(tx.Size() / int64(db.Info().PageSize))
		for id := 2; id < hwm; id++ {
			p, err := tx.Page(id)
			if err != nil {
				return err
			}
			if p.OverflowCount != 0 {
				return fmt.Errorf("page %d spans %d pages: the test reads every page as one", id, p.OverflowCount+1)
			}
			inUse[id] = p.Type != "free"
		}
		return nil
	})
	if err != nil {
		f.Fatal(err)
	}
	return inUse, hwm
}

// FuzzSplitEntry: the partition log entry decoder (format 4) rejects
// damage with an error, never a panic, and accepts exactly what
// encodeEntry wrote.
func FuzzSplitEntry(f *testing.F) {
	f.Add(encodeEntry([]byte("k"), []byte("v")))
	f.Add(encodeEntry(bytes.Repeat([]byte("m"), 33000), nil))
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 9, 'k'})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, raw []byte) {
		k, v, err := splitEntry(raw)
		if err != nil {
			return
		}
		if !bytes.Equal(encodeEntry(k, v), raw) {
			t.Fatalf("accepted bytes that encodeEntry would not write: %x", shortKey(raw))
		}
	})
}
