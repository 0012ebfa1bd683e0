package core

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// mapDuplicate is the plain rule: the first entry that repeats an
// earlier one, found with a map.
func mapDuplicate(offs []kmsg.TaskOffset) (TaskID, bool) {
	seen := map[TaskID]bool{}
	for _, o := range offs {
		t := TaskID{o.SubtopologyID, o.Partition}
		if seen[t] {
			return t, true
		}
		seen[t] = true
	}
	return TaskID{}, false
}

// TestValidateTaskOffsetsAgreesWithTheMap: on ordered, shuffled and
// duplicated lists (subtopology ids that sort as strings, not numbers,
// among them), the one-pass and sorting paths refuse exactly the lists
// with a repeated task and name the same task as the plain map rule.
func TestValidateTaskOffsetsAgreesWithTheMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	subs := []string{"0", "1", "10", "2", "a"}
	refused := 0
	for i := range 5000 {
		n := rng.IntN(40)
		offs := make([]kmsg.TaskOffset, n)
		for j := range offs {
			offs[j] = kmsg.TaskOffset{SubtopologyID: subs[rng.IntN(len(subs))], Partition: rng.Int32N(12), Offset: rng.Int64N(1000)}
		}
		switch i % 3 {
		case 0: // in task order, repeats removed: the one-pass path
			offs = sortedUnique(offs)
		case 1: // the same, shuffled
			offs = sortedUnique(offs)
			rng.Shuffle(len(offs), func(a, b int) { offs[a], offs[b] = offs[b], offs[a] })
		}
		dup, want := mapDuplicate(offs)
		err := validateTaskOffsets("TaskOffsets", offs)
		if (err != nil) != want {
			t.Fatalf("list %d (%v): error %v, duplicate %v", i, offs, err, want)
		}
		if want {
			refused++
			if msg := fmt.Sprintf("TaskOffsets contains task %s more than once.", dup); err.msg != msg {
				t.Fatalf("list %d: %q, want %q", i, err.msg, msg)
			}
		}
	}
	if refused < 500 || refused > 4000 {
		t.Fatalf("%d of 5000 lists refused: the inputs do not exercise both outcomes", refused)
	}
}

func sortedUnique(offs []kmsg.TaskOffset) []kmsg.TaskOffset {
	seen := map[TaskID]bool{}
	var out []kmsg.TaskOffset
	for _, o := range offs {
		if t := (TaskID{o.SubtopologyID, o.Partition}); !seen[t] {
			seen[t] = true
			out = append(out, o)
		}
	}
	for i := 1; i < len(out); i++ { // insertion sort by (subtopology, partition)
		for j := i; j > 0 && (out[j].SubtopologyID < out[j-1].SubtopologyID ||
			(out[j].SubtopologyID == out[j-1].SubtopologyID && out[j].Partition < out[j-1].Partition)); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// BenchmarkValidateTaskOffsets: a member reporting 500 tasks' offsets,
// in task order and shuffled; "map" is the plain map rule on the same
// list, the baseline.
func BenchmarkValidateTaskOffsets(b *testing.B) {
	var offs []kmsg.TaskOffset
	for s := range 5 {
		for p := range int32(100) {
			offs = append(offs, kmsg.TaskOffset{SubtopologyID: fmt.Sprint(s), Partition: p, Offset: 1000})
		}
	}
	shuffled := append([]kmsg.TaskOffset(nil), offs...)
	rand.New(rand.NewPCG(3, 4)).Shuffle(len(shuffled), func(a, b int) { shuffled[a], shuffled[b] = shuffled[b], shuffled[a] })
	for _, c := range []struct {
		name string
		offs []kmsg.TaskOffset
	}{{"ordered", offs}, {"shuffled", shuffled}} {
		b.Run(c.name+"/map", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, dup := mapDuplicate(c.offs); dup {
					b.Fatal("refused")
				}
			}
		})
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if validateTaskOffsets("TaskOffsets", c.offs) != nil {
					b.Fatal("refused")
				}
			}
		})
	}
}
