package core

import (
	"fmt"
	"testing"

	"github.com/coordhost/coordhost/core/records"
)

// The host's store keeps one value per record key (host/store: a later
// write replaces the key's value and takes a new sequence number, a
// tombstone deletes the key) and replays the live keys in the sequence
// order of their last writes. The tests that restart a Coordinator replay
// that compacted log, as production does.

// storedRecord is one live key of the compacted log, as encoded bytes.
type storedRecord struct{ key, value []byte }

// compactLog returns what the store replays after log was appended.
func compactLog(log []records.Record) []storedRecord {
	type slot struct {
		seq   int
		value []byte
	}
	live := map[string]slot{}
	for seq, r := range log {
		k, v := records.EncodeRecord(r)
		if v == nil {
			delete(live, string(k))
			continue
		}
		live[string(k)] = slot{seq, v}
	}
	out := make([]storedRecord, len(log))
	used := make([]bool, len(log))
	for k, s := range live {
		out[s.seq], used[s.seq] = storedRecord{[]byte(k), s.value}, true
	}
	n := 0
	for i := range out {
		if used[i] {
			out[n] = out[i]
			n++
		}
	}
	return out[:n]
}

// replayLog rebuilds a Coordinator from the compacted form of log (a
// restart over the host's store). Call Loaded on it next. Like the
// host's store (host/store LendPartition), it lends ReplayBytes each
// record's bytes for the call only: one buffer holds them, overwritten
// with garbage after each call, so state that kept any of a record's
// bytes instead of a copy differs from the live state the tests compare.
func replayLog(cfg Config, log []records.Record) (*Coordinator, error) {
	fresh, err := New(cfg)
	if err != nil {
		return nil, err
	}
	var lent []byte
	for i, r := range compactLog(log) {
		lent = append(append(lent[:0], r.key...), r.value...)
		err := fresh.ReplayBytes(lent[:len(r.key):len(r.key)], lent[len(r.key):])
		for j := range lent {
			lent[j] = 0xa5
		}
		if err != nil {
			rec, _ := records.DecodeRecord(r.key, r.value)
			return nil, fmt.Errorf("replay failed at stored record %d (%s): %v", i, fmtClassicRecord(rec), err)
		}
	}
	return fresh, nil
}

// TestCompactLog: latest value per key, tombstones delete, order of last
// write.
func TestCompactLog(t *testing.T) {
	meta := func(g string, epoch int32) records.Record {
		return records.Record{Key: records.StreamsGroupMetadataKey{GroupID: g}, Value: records.StreamsGroupMetadataValue{Epoch: epoch}}
	}
	tomb := func(g string) records.Record { return records.Record{Key: records.StreamsGroupMetadataKey{GroupID: g}} }
	got := compactLog([]records.Record{meta("a", 1), meta("b", 1), meta("c", 1), meta("a", 2), tomb("b"), meta("d", 1), tomb("d"), meta("d", 3)})
	var names []string
	for _, r := range got {
		rec, err := records.DecodeRecord(r.key, r.value)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, fmt.Sprintf("%s@%d", rec.Key.Group(), rec.Value.(records.StreamsGroupMetadataValue).Epoch))
	}
	if fmt.Sprint(names) != "[c@1 a@2 d@3]" {
		t.Fatalf("compacted log %v, want [c@1 a@2 d@3]", names)
	}
}
