package runtime_test

import (
	"testing"
	"time"

	"github.com/coordhost/coordhost/host/runtime"
)

// timedLog is a MemLog whose every append reports took as its cost
// (runtime.TimedLog).
type timedLog struct {
	*runtime.MemLog
	took time.Duration
}

func (l *timedLog) AppendTimed(p int, recs []runtime.Record) (time.Duration, error) {
	return l.took, l.Append(p, recs)
}

// TestQuotaChargesAppends: the time a TimedLog reports for an append
// counts towards the quota of the key whose records it stored, and only
// it. A key whose steps are quick but whose appends are costly is over
// its share once one of its steps held another key up — not before (the
// quota stays work-conserving), and a key that wrote nothing is not
// charged for others' appends.
func TestQuotaChargesAppends(t *testing.T) {
	sh := &isoShard{}
	log := &timedLog{MemLog: runtime.NewMemLog(), took: 40 * time.Millisecond}
	rt, err := runtime.New(runtime.Config{Partitions: 1, Workers: 1, Log: log, QuotaPercent: 5, MaxThrottle: time.Hour,
		RoundTime: time.Hour, YieldTime: time.Hour, NewShard: func(int) (runtime.Shard, error) { return sh, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.LoadAll(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close(t.Context()) })
	// Two appends of the writer's records: 80 ms, over its 50 ms share
	// of a second, while its steps take microseconds.
	for _, name := range []string{"w1", "w2"} {
		r := newReply()
		submit(t, rt, "writer", iev{name: name, write: true, owner: "writer", reply: r})
		if err := answered(t, r, name); err != nil {
			t.Fatal(err)
		}
	}
	throttledOnceItDelays(t, rt, "writer", "reader")
}
