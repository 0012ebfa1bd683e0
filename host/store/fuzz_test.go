package store

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
	f.Fuzz(func(t *testing.T, off uint32, patch []byte) {
		b := bytes.Clone(clean)
		if int(off) < len(b) {
			copy(b[off:], patch)
		}
		path := filepath.Join(t.TempDir(), "coordhost.db")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
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
