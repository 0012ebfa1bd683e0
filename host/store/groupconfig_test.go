package store

import (
	"bytes"
	"errors"
	"maps"
	"path/filepath"
	"testing"
)

// TestGroupConfigRecords: group-config records round-trip, live in the
// same log as other records (latest write wins, a tombstone deletes) and
// survive a reopen; their keys never look like a core record's.
func TestGroupConfigRecords(t *testing.T) {
	path := filepath.Join(t.TempDir(), "coordhost.db")
	s := openT(t, path)
	v1 := map[string]string{"streams.num.standby.replicas": "1", "group.max.size": "3"}
	v2 := map[string]string{"streams.session.timeout.ms": "50000"}
	core := []byte{0, 17, 0, 1, 'a'} // a core key: record type 17
	for _, b := range [][]Record{
		{{Key: GroupConfigKey("a"), Value: EncodeGroupConfig(v1)}, {Key: core, Value: []byte("x")}},
		{{Key: GroupConfigKey("b"), Value: EncodeGroupConfig(v2)}},
		{{Key: GroupConfigKey("a"), Value: EncodeGroupConfig(nil)}}, // empty set: tombstone
		{{Key: GroupConfigKey("b"), Value: EncodeGroupConfig(v1)}},
	} {
		if _, err := s.Append(b); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s = openT(t, path)
	defer s.Close()
	got := map[string]map[string]string{}
	for _, e := range replayAll(t, s) {
		g, ok := GroupConfigGroup(e.Key)
		if !ok {
			if !bytes.Equal(e.Key, core) {
				t.Fatalf("unexpected record %x", e.Key)
			}
			continue
		}
		v, err := DecodeGroupConfig(e.Value)
		if err != nil {
			t.Fatal(err)
		}
		got[g] = v
	}
	if len(got) != 1 || !maps.Equal(got["b"], v1) {
		t.Fatalf("replayed group configs: %v, want only b = %v", got, v1)
	}
	if _, ok := GroupConfigGroup(core); ok {
		t.Fatal("a core key read as a group-config key")
	}
	if _, err := DecodeGroupConfig([]byte{0, 1, 1, 'a'}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("truncated value: %v, want ErrCorrupt", err)
	}
}

// FuzzDecodeGroupConfig: damaged group-config values are errors, never a
// panic, and what is accepted is exactly what EncodeGroupConfig writes.
func FuzzDecodeGroupConfig(f *testing.F) {
	f.Add(EncodeGroupConfig(map[string]string{"streams.num.standby.replicas": "1", "group.max.size": "3"}))
	f.Add([]byte{0, 1, 1, 'a', 1, 'b'})
	f.Add([]byte{1})
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeGroupConfig(b)
		if err != nil {
			return
		}
		if !bytes.Equal(EncodeGroupConfig(v), b) {
			t.Fatalf("accepted bytes that EncodeGroupConfig would not write: %x", b)
		}
	})
}
