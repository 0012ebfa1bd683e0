package store

import (
	"bytes"
	"testing"
)

// FuzzDecode: the on-disk record layout decoder rejects damage with an
// error, never a panic, and accepts exactly what encodeValue wrote.
func FuzzDecode(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 1}, []byte("k"), encodeValue(1, []byte("v")))
	f.Add([]byte{1}, []byte("k"), []byte{})
	f.Fuzz(func(t *testing.T, seqKey, key, raw []byte) {
		s := &Store{path: "fuzz.db"}
		e, err := s.decode(seqKey, key, raw)
		if err != nil {
			return
		}
		if !bytes.Equal(encodeValue(e.Seq, e.Value), raw) {
			t.Fatalf("accepted bytes that encodeValue would not write: %x", raw)
		}
	})
}
