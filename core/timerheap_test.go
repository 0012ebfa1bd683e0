package core

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// The heap hands entries back in (deadline, key) order whatever the order
// of pushes, after init as after pushes.
func TestTimerHeapOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var want []timerEntry
	var h timerHeap
	for i := 0; i < 500; i++ {
		e := timerEntry{deadline: int64(r.IntN(20)), key: sessionTimerKey("g"+strconv.Itoa(r.IntN(7)), "m"+strconv.Itoa(i))}
		want = append(want, e)
		h.push(e)
	}
	built := slices.Clone(want)
	timerHeap(built).init()
	slices.SortFunc(want, func(a, b timerEntry) int {
		if a.deadline != b.deadline {
			return int(a.deadline - b.deadline)
		}
		return compareKeys(a.key, b.key)
	})
	for name, hp := range map[string]*timerHeap{"pushed": &h, "init": (*timerHeap)(&built)} {
		for i, w := range want {
			if (*hp)[0] != w {
				t.Fatalf("%s: entry %d = %+v, want %+v", name, i, (*hp)[0], w)
			}
			hp.pop()
		}
		if len(*hp) != 0 {
			t.Fatalf("%s: %d entries left", name, len(*hp))
		}
	}
}
