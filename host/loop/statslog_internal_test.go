package loop

import (
	"testing"
	"time"

	"github.com/coordhost/coordhost/host/runtime"
)

// fixedCostLog is a MemLog reporting every append's cost as took.
type fixedCostLog struct {
	*runtime.MemLog
	took time.Duration
}

func (l fixedCostLog) AppendTimed(p int, recs []runtime.Record) (time.Duration, error) {
	return l.took, l.Append(p, recs)
}

// TestStatsLogPassesAppendCost: the loop's counting wrapper hands the
// runtime the store's cost of an append (so the group quota counts it)
// and 0 for a log that does not say one, and counts both appends.
func TestStatsLogPassesAppendCost(t *testing.T) {
	recs := []runtime.Record{{Key: []byte("k"), Value: []byte("v"), Owner: "g"}}
	for _, c := range []struct {
		log  runtime.Log
		want time.Duration
	}{{fixedCostLog{runtime.NewMemLog(), 3 * time.Millisecond}, 3 * time.Millisecond}, {runtime.NewMemLog(), 0}} {
		sl := &statsLog{Log: c.log, stats: &loopStats{}}
		var tl runtime.TimedLog = sl
		took, err := tl.AppendTimed(0, recs)
		if err != nil || took != c.want {
			t.Fatalf("%T: took %v, %v; want %v", c.log, took, err, c.want)
		}
		if n := sl.stats.appends.Load(); n != 1 {
			t.Fatalf("%T: %d appends counted", c.log, n)
		}
	}
}
