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

// recordingAssignor keeps the inputs it was run on.
type recordingAssignor struct{ ins *[]PartitionAssignInput }

func (a recordingAssignor) AssignPartitions(in PartitionAssignInput) ([][]AssignedTopic, error) {
	*a.ins = append(*a.ins, in)
	return rrAssignor{}.AssignPartitions(in)
}

// The assignor input carries the member map as Kafka's target computation
// sees it: the joiner that triggers the run is the request's addition (-1)
// and not counted in the peak; earlier members by insertion, also after a
// replay of the log.
func TestConsumerAssignInputMemberMap(t *testing.T) {
	var ins []PartitionAssignInput
	cfg := consumerTestConfig()
	cfg.Consumer.Assignors[0].Assignor = recordingAssignor{&ins}
	h := newCHarness(t, cfg)
	h.setTopics(TopicMetadata{ID: topicID("a"), Name: "a", Partitions: 6})
	for _, m := range []string{"m3", "m1", "m2"} {
		if resp := h.hb(joinReq("g", m, "a")); resp.ErrorCode != 0 {
			t.Fatalf("join %s: %v", m, resp.ErrorCode)
		}
	}
	if len(ins) != 3 {
		t.Fatalf("%d assignor runs, want one per join", len(ins))
	}
	last := ins[2]
	seq := map[string]int64{}
	for i, m := range last.Members {
		seq[m.MemberID] = last.TableSeq[i]
	}
	if seq["m2"] != -1 || seq["m3"] < 0 || seq["m1"] <= seq["m3"] || last.TablePeak != 2 {
		t.Fatalf("third join's input: seq %v peak %d; want m2 added, m3 before m1, peak 2", seq, last.TablePeak)
	}
	h.checkReplay()
	fresh, err := replayLog(h.cfg, h.log)
	if err != nil {
		t.Fatal(err)
	}
	g := fresh.groups["g"].(*consumerGroup)
	if a, b, c := g.table.seqAt("m3", 0), g.table.seqAt("m1", 0), g.table.seqAt("m2", 0); !(a < b && b < c) || g.table.peakAt(0) != 3 {
		t.Fatalf("replayed map: m3 %d m1 %d m2 %d peak %d; want join order, peak 3", a, b, c, g.table.peakAt(0))
	}
}
