package kafkalog_test

import (
	"fmt"
	"testing"

	"github.com/coordhost/coordhost/host/runtime"
)

// TestReplayProgress: ReplayProgress knows nothing before a replay; while
// a replay reads, it reports the offset after the last record read, below
// the last stable offset it reads to; once it is done the two are equal.
// Each transaction ends with a commit marker, so the end is the records
// plus one offset per batch.
func TestReplayProgress(t *testing.T) {
	c := cluster(t)
	l := open(t, c, 2)
	if _, _, ok := l.ReplayProgress(1); ok {
		t.Fatal("progress reported before any replay")
	}
	state(t, l, 1) // take over
	if at, end, ok := l.ReplayProgress(1); !ok || at != 0 || end != 0 {
		t.Fatalf("empty partition replayed: %d of %d, %v", at, end, ok)
	}
	const batches, per = 5, 4
	for b := range batches {
		var recs []runtime.Record
		for i := range per {
			recs = append(recs, rec(fmt.Sprintf("k%d", i), fmt.Sprintf("v%d", b)))
		}
		if err := l.Append(1, recs); err != nil {
			t.Fatal(err)
		}
	}
	const wantEnd = batches * (per + 1)
	other := open(t, c, 2)
	var seen []int64
	if err := other.Replay(1, func(runtime.Record) error {
		at, end, ok := other.ReplayProgress(1)
		if !ok || end != wantEnd || at > end-1 {
			t.Fatalf("during the replay: %d of %d, %v", at, end, ok)
		}
		seen = append(seen, at)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != batches*per || seen[0] != 1 || seen[len(seen)-1] != wantEnd-1 {
		t.Fatalf("progress seen by the records: %v", seen)
	}
	if at, end, ok := other.ReplayProgress(1); !ok || at != end || end != wantEnd {
		t.Fatalf("after the replay: %d of %d, %v", at, end, ok)
	}
	if _, _, ok := other.ReplayProgress(0); ok {
		t.Fatal("progress of a partition never replayed")
	}
}
