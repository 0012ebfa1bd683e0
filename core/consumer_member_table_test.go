package core

import "testing"

// The member map seen by a target computation: earlier entry points'
// members by insertion, the running one's as additions that do not count
// towards the peak; removals keep the peak (Kafka's table never shrinks).
func TestMemberTableSeenByEntry(t *testing.T) {
	var tb memberTable
	tb.put("a", 0) // replayed
	tb.put("b", 1)
	tb.put("c", 1)
	if got := tb.peakAt(2); got != 3 {
		t.Fatalf("peak seen by a later entry = %d, want 3", got)
	}
	tb.remove("b")
	tb.put("d", 2)
	tb.put("b", 2) // rejoins: inserted anew
	if got := tb.peakAt(2); got != 3 {
		t.Fatalf("peak seen by the inserting entry = %d, want 3 (its own additions not counted)", got)
	}
	if got := tb.peakAt(3); got != 4 {
		t.Fatalf("peak seen after the entry = %d, want 4", got)
	}
	for id, want := range map[string]int64{"a": 0, "c": 2, "d": -1, "b": -1} {
		if got := tb.seqAt(id, 2); got != want {
			t.Errorf("seqAt(%s) in the inserting entry = %d, want %d", id, got, want)
		}
	}
	if a, d, b := tb.seqAt("a", 3), tb.seqAt("d", 3), tb.seqAt("b", 3); !(a < d && d < b) {
		t.Errorf("insertion order after the entry: a=%d d=%d b=%d, want ascending", a, d, b)
	}
	tb.put("a", 3) // an update keeps the place
	if got := tb.seqAt("a", 3); got != 0 {
		t.Errorf("updated member's seq = %d, want 0", got)
	}
}
