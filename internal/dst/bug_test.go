package dst

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/core/records"
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

// conversionLossLog is a deliberately broken record log: in the batch of
// a conversion from a classic group to a streams group (the one that
// holds the classic group's tombstone), it drops the current assignments
// of the converted classic members (the simulation's classic Streams
// clients are named cs<n>, and so are their member ids) — the tasks each
// of them keeps running. The coordinator that wrote the batch still has them; one
// replayed from the log after a crash has lost them, and would hand the
// tasks to other members while the classic members still run them.
type conversionLossLog struct{ runtime.Log }

func (l conversionLossLog) Append(p int, recs []runtime.Record) error {
	converting := false
	for _, r := range recs {
		if rec, err := records.DecodeRecord(r.Key, r.Value); err == nil && r.Value == nil {
			if _, ok := rec.Key.(records.GroupMetadataKey); ok {
				converting = true
			}
		}
	}
	if !converting {
		return l.Log.Append(p, recs)
	}
	var kept []runtime.Record
	for _, r := range recs {
		if rec, err := records.DecodeRecord(r.Key, r.Value); err == nil {
			if k, ok := rec.Key.(records.StreamsGroupCurrentMemberAssignmentKey); ok && strings.HasPrefix(k.MemberID, "cs") {
				continue
			}
		}
		kept = append(kept, r)
	}
	return l.Log.Append(p, kept)
}

// conversionBugSeeds is how many seeds the harness gets to catch the
// conversion bug: it needs an online conversion of a group whose classic
// members run tasks.
const conversionBugSeeds = 150

// TestDSTCatchesConversionLoss proves the harness catches a conversion
// whose records lose the converted members' assignments, within
// conversionBugSeeds seeds, and that the real log passes the same seed.
func TestDSTCatchesConversionLoss(t *testing.T) {
	broken := func(o *Options) { o.WrapLog = func(l runtime.Log) runtime.Log { return conversionLossLog{l} } }
	first, _, failed := runSeeds(0, conversionBugSeeds, *flagSteps, broken)
	if first == nil {
		t.Fatalf("the injected conversion bug went unnoticed in %d seeds", conversionBugSeeds)
	}
	msg := first.res.Err.Error()
	if !strings.Contains(msg, "replayed") && !strings.Contains(msg, "still runs") && !strings.Contains(msg, "lost by the restart") {
		t.Fatalf("seed %d failed for another reason than the lost assignments: %v", first.seed, first.res.Err)
	}
	if !strings.Contains(first.res.Trace, "online-classic-to-streams") {
		t.Fatalf("seed %d: the rerun's trace does not show the conversion:\n%s", first.seed, tail(first.res.Trace, 40))
	}
	t.Logf("caught by %d of %d seeds (first: seed %d, within %d steps): %s", len(failed), conversionBugSeeds, first.seed, first.steps, firstLine(msg))
	if clean, _, _ := runSeeds(first.seed, 1, *flagSteps, nil); clean != nil {
		t.Fatalf("seed %d fails with the real log too: %v", first.seed, clean.res.Err)
	}
}
