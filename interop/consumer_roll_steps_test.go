package interop

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestStepTable checks the compare's per-step section: the classic
// formation is left out, a failed run is skipped, the totals and the
// runs more / equal / fewer are per step, and each consumer's difference
// is summed over the runs and listed per run under the run's own number.
func TestStepTable(t *testing.T) {
	steps := func(formation int, join map[string]int) []cmStep {
		n := 0
		for _, x := range join {
			n += x
		}
		return []cmStep{{name: "classic", rebalances: formation, byClient: map[string]int{"c0": formation}},
			{name: "upgrade-0-join", rebalances: n, byClient: join}, {name: "after"}}
	}
	rs := []rollRun{
		{failed: true},
		{kafka: cmResult{perStep: steps(3, map[string]int{"n0": 2, "c1": 3})},
			through: cmResult{perStep: steps(6, map[string]int{"n0": 3, "c1": 3})}},
		{kafka: cmResult{perStep: steps(3, map[string]int{"n0": 3, "c1": 3})},
			through: cmResult{perStep: steps(3, map[string]int{"n0": 2, "c1": 2})}},
	}
	out := stepTable(rs)
	for _, want := range []string{
		"Per step over the 2 completed run(s)",
		"| upgrade-0-join | 11 | 10 | 1 / 0 / 1 | c1 -1 |\n",
		"| after | 0 | 0 | 0 / 2 / 0 |  |\n",
		"- run 2, upgrade-0-join: n0 2 / 3\n",
		"- run 3, upgrade-0-join: c1 3 / 2, n0 3 / 2\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("step table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "| classic |") {
		t.Errorf("the classic formation is in the step table:\n%s", out)
	}
}

// TestStepPace checks that a step begins no sooner than the assignment
// interval after the previous one settled, that the first waits for
// nothing, and that the interval is the one the suite gives both
// coordinators (1 s when neither sets it).
func TestStepPace(t *testing.T) {
	if got := cmAssignmentInterval(t); got != time.Second {
		t.Errorf("assignment interval %v, want the 1 s default", got)
	}
	s := &cmSide{t: t, pace: 300 * time.Millisecond}
	began := time.Now()
	s.begin("first")
	if d := time.Since(began); d >= s.pace {
		t.Errorf("the first step waited %v", d)
	}
	s.settledAt = time.Now()
	s.begin("second")
	if from := time.UnixMilli(s.steps[1].from); from.Before(s.settledAt.Add(s.pace).Truncate(time.Millisecond)) {
		t.Errorf("the second step began %v after the first settled, want at least %v", from.Sub(s.settledAt), s.pace)
	}
}

// TestRollLongestGap checks where the replay puts a side's longest gap:
// the step its closing commit fell in, the partition, the old and the new
// owner, and the old owner's release, the new owner's assignment callback
// and the closing commit after the commit that opened it; and that the
// compare's table prints it per run.
func TestRollLongestGap(t *testing.T) {
	line := func(client, event string, ts int64, rest string) string {
		return `{"client":"` + client + `","event":"` + event + `"` + rest + `,"ts":` + strconv.FormatInt(ts, 10) + `}`
	}
	ranges := func(off int, parts ...int) string {
		var rs []string
		for _, p := range parts {
			rs = append(rs, fmt.Sprintf(`"t-%d":[%d,%d]`, p, off, off))
		}
		return `,"error":null,"ranges":{` + strings.Join(rs, ",") + `}`
	}
	s := &cmSide{t: t, name: "test", java: &proc{lines: []string{
		line("c0", "assigned", 100, `,"partitions":["t-0","t-1","t-2","t-3","t-4","t-5"],"generation":1`),
		line("c0", "commit", 200, ranges(0, 0, 1, 2, 3, 4, 5)),
		line("c0", "commit", 300, ranges(1, 0, 1, 2, 3, 4, 5)),
		line("c0", "assigned", 1100, `,"partitions":["t-0","t-1","t-2"],"generation":2`),
		line("c0", "commit", 1150, ranges(2, 0)),
		line("n0", "assigned", 1400, `,"partitions":["t-3","t-4","t-5"],"generation":3`),
		line("n0", "commit", 1600, ranges(2, 4, 5)),
		line("n0", "commit", 1700, ranges(2, 3)),
	}}, steps: []cmStep{{name: "classic"}, {name: "upgrade-0-join", from: 1000}}}
	r := s.check(250, 10_000)
	if r.maxGap != 1400*time.Millisecond {
		t.Errorf("longest gap %v, want 1.4s", r.maxGap)
	}
	want := "upgrade-0-join 3 c0 → n0 (revoked +800, assigned +1100, commit +1400)"
	if got := r.longest.String(); got != want {
		t.Errorf("longest gap %q, want %q", got, want)
	}
	out := rollTable([]rollRun{{failed: true}, {kafka: r, through: cmResult{}}}, 0)
	if row := "| 2 | " + want + " | none |\n"; !strings.Contains(out, row) {
		t.Errorf("the table lacks %q:\n%s", row, out)
	}
}
