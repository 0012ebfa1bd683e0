package dst

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/host/runtime"
)

// epochLossLog is a deliberately broken record log: it persists a streams
// group's metadata record (type 17, which carries the group epoch) only the
// first time its key is written, so every later epoch bump — acknowledged
// to members in heartbeat responses — is lost when the log is replayed. It
// exists only in this test: the runtime, core and the real logs are the
// ones the other tests run.
type epochLossLog struct{ runtime.Log }

const recStreamsGroupMetadata = 17

func (l epochLossLog) Replay(p int, fn func(runtime.Record) error) error {
	seen := map[string]bool{}
	return l.Log.Replay(p, func(r runtime.Record) error {
		if len(r.Key) >= 2 && binary.BigEndian.Uint16(r.Key) == recStreamsGroupMetadata && r.Value != nil {
			if seen[string(r.Key)] {
				return nil // the overwrite was never persisted
			}
			seen[string(r.Key)] = true
		}
		return fn(r)
	})
}

// bugSeeds is how many seeds the harness gets to catch the injected bug.
const bugSeeds = 20

// TestDSTCatchesLostEpoch proves the harness catches a store that loses
// acknowledged epoch bumps, within bugSeeds seeds, and that the real log
// passes the same seeds.
func TestDSTCatchesLostEpoch(t *testing.T) {
	broken := func(o *Options) { o.WrapLog = func(l runtime.Log) runtime.Log { return epochLossLog{l} } }
	first, _, failed := runSeeds(0, bugSeeds, *flagSteps, broken)
	if first == nil {
		t.Fatalf("the injected lost-epoch bug went unnoticed in %d seeds", bugSeeds)
	}
	msg := first.res.Err.Error()
	if !strings.Contains(msg, "replayed") && !strings.Contains(msg, "backwards") && !strings.Contains(msg, "acknowledged") {
		t.Fatalf("seed %d failed for another reason than the lost epoch: %v", first.seed, first.res.Err)
	}
	if !strings.Contains(first.res.Trace, "CRASH") || !strings.Contains(first.res.Trace, "restart") {
		t.Fatalf("seed %d: the rerun's trace does not show the crash and restart:\n%s", first.seed, tail(first.res.Trace, 40))
	}
	t.Logf("caught by %d of %d seeds (first: seed %d, within %d steps): %s", len(failed), bugSeeds, first.seed, first.steps, firstLine(msg))
	if clean, _, _ := runSeeds(first.seed, 1, *flagSteps, nil); clean != nil {
		t.Fatalf("seed %d fails with the real log too: %v", first.seed, clean.res.Err)
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
