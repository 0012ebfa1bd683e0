package interop

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The repeated roll comparison (`make consumer-roll-compare`) is sized by
// environment variables: the number of paired rolls (default 1) and the
// file the table is written to.
const (
	rollRunsEnv = "COORDHOST_INTEROP_ROLL_RUNS"
	rollOutEnv  = "COORDHOST_INTEROP_ROLL_OUT"
)

// rollRun is one paired roll's numbers, or why it failed.
type rollRun struct {
	loadFrom, loadTo string // the 1-minute load average before and after
	kafka, through   cmResult
	failed           bool
}

// TestInteropConsumerRollCompare runs TestInteropConsumerMigrationRoll's
// paired roll (the same roll at once on the real broker and through
// coordhost in front of it) $COORDHOST_INTEROP_ROLL_RUNS times on one
// broker and one coordhost, each run on groups and topics of its own, and
// writes per run and as medians the roll's assignment callbacks, the
// longest processing gap and the median handover of both sides, then
// each step's callbacks per consumer, to $COORDHOST_INTEROP_ROLL_OUT. It
// measures; the CI gates stay in
// TestInteropConsumerMigrationRoll, and each run's line says whether it
// would have passed them.
func TestInteropConsumerRollCompare(t *testing.T) {
	needInterop(t)
	runs := 1
	if v := os.Getenv(rollRunsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", rollRunsEnv, v)
		}
		runs = n
	}
	loadBefore, commit := loadAverage(), gitCommit()
	started := time.Now().UTC()
	dir, b, ch, admin := rollSetup(t)
	var rs []rollRun
	for run := 1; run <= runs; run++ {
		r := rollRun{loadFrom: oneMinuteLoad()}
		r.failed = !t.Run(fmt.Sprintf("run-%d", run), func(t *testing.T) {
			r.kafka, r.through = rollPair(t, dir, fmt.Sprintf("-%d", run), b.addr, ch.addr, admin)
		})
		r.loadTo = oneMinuteLoad()
		rs = append(rs, r)
		if !r.failed && os.Getenv("COORDHOST_INTEROP_ROLL_TRACE") == "1" {
			logRollTrace(t, r.kafka.perStep, r.through.perStep)
		}
		t.Logf("run %d: load %s–%s, kafka %d rebalances, gap %v; coordhost %d, %v", run, r.loadFrom, r.loadTo,
			r.kafka.rebalances, r.kafka.maxGap, r.through.rebalances, r.through.maxGap)
	}
	// Asked after the rolls, as TestInteropConsumerMigrationRoll does: the
	// broker's offsets topic exists by then.
	hbDiff := max(0, consumerHeartbeatInterval(t, ch.addr)-consumerHeartbeatInterval(t, b.addr))
	head := fmt.Sprintf("`make consumer-roll-compare RUNS=%d`, commit %s, %s–%s UTC, load average (1/5/15 min) %s before, %s after; both coordinators' consumer heartbeat interval 250 ms (coordhost's %v longer); each step begins %v (the assignment interval) and a random part of one heartbeat interval after the previous one settled.\n\n",
		runs, commit, started.Format("2006-01-02 15:04"), time.Now().UTC().Format("15:04"), loadBefore, loadAverage(), hbDiff, cmAssignmentInterval(t))
	out := head + rollTable(rs, hbDiff) + stepTable(rs)
	t.Log("\n" + out)
	if path := os.Getenv(rollOutEnv); path != "" {
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// oneMinuteLoad is /proc/loadavg's first field.
func oneMinuteLoad() string { return strings.Fields(loadAverage() + " ?")[0] }

// row is the run's table line: load, rebalances, longest gap, median
// handover and the producer's longest pause (Kafka / coordhost), and the
// CI gates' verdict.
func (r rollRun) row(run int, hbDiff time.Duration) string {
	if r.failed {
		return fmt.Sprintf("| %d | %s–%s | failed (see the log) | | | | |", run, r.loadFrom, r.loadTo)
	}
	k, c := r.kafka, r.through
	var gates []string
	if c.rebalances > k.rebalances+cmRebalanceSlack {
		gates = append(gates, "rebalances over")
	}
	if c.maxGap > k.maxGap*3/2+hbDiff {
		gates = append(gates, "gap over")
	}
	verdict := "pass"
	if len(gates) > 0 {
		verdict = strings.Join(gates, ", ")
	}
	return fmt.Sprintf("| %d | %s–%s | %d / %d | %s / %s | %s / %s | %s / %s | %s |", run, r.loadFrom, r.loadTo,
		k.rebalances, c.rebalances, seconds(k.maxGap), seconds(c.maxGap),
		millis(k.medianHandover()), millis(c.medianHandover()), millis(k.producerPause), millis(c.producerPause), verdict)
}

// rollTable is the per-run table, then the medians over the runs that
// completed and how often each side was lower.
func rollTable(rs []rollRun, hbDiff time.Duration) string {
	var b strings.Builder
	b.WriteString("| run | load (1 min) | rebalances Kafka / coordhost | longest gap | median handover | producer's longest pause | CI gates |\n|---|---|---|---|---|---|---|\n")
	var ok []rollRun
	for i, r := range rs {
		b.WriteString(r.row(i+1, hbDiff) + "\n")
		if !r.failed {
			ok = append(ok, r)
		}
	}
	if len(ok) == 0 {
		b.WriteString("\nNo run completed.\n")
		return b.String()
	}
	// Rebalances go through the durations' median in thousandths, so
	// that the mean of two middle counts keeps its half.
	reb := func(r cmResult) time.Duration { return time.Duration(r.rebalances) * 1000 }
	gap := func(r cmResult) time.Duration { return r.maxGap }
	hand := func(r cmResult) time.Duration { return r.medianHandover() }
	fmt.Fprintf(&b, "\nOver the %d completed run(s) of %d (median of the runs; the mean of the middle two for an even count):\n\n", len(ok), len(rs))
	b.WriteString("| | Kafka | coordhost | coordhost ≤ Kafka | runs coordhost lower / equal / Kafka lower |\n|---|---|---|---|---|\n")
	for _, m := range []struct {
		name   string
		f      func(cmResult) time.Duration
		format func(time.Duration) string
	}{
		{"rebalances", reb, func(d time.Duration) string { return strconv.FormatFloat(float64(d)/1000, 'f', -1, 64) }},
		{"longest gap", gap, seconds},
		{"median handover", hand, millis},
		// The handover's two parts: the coordinators' (the old owner's
		// last commit to the new owner's assignment callback) and the
		// clients' and data path's (to the new owner's first commit).
		{"handover to the assignment", func(r cmResult) time.Duration {
			return r.medianHandoverBy(func(h cmHandover) time.Duration { return h.toAssigned })
		}, millis},
		{"then to the first commit", func(r cmResult) time.Duration {
			return r.medianHandoverBy(func(h cmHandover) time.Duration { return h.toCommit })
		}, millis},
	} {
		km, cm := medianOver(ok, func(r rollRun) time.Duration { return m.f(r.kafka) }), medianOver(ok, func(r rollRun) time.Duration { return m.f(r.through) })
		lower, equal, higher := 0, 0, 0
		for _, r := range ok {
			switch k, c := m.f(r.kafka), m.f(r.through); {
			case c < k:
				lower++
			case c == k:
				equal++
			default:
				higher++
			}
		}
		yes := "yes"
		if cm > km {
			yes = "no"
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %d / %d / %d |\n", m.name, m.format(km), m.format(cm), yes, lower, equal, higher)
	}
	b.WriteString("\nWhere each run's longest gap was: the step it ended in, the partition, the consumer of the commit before it → of the one that ended it, and in ms after the commit before it the old owner's callback that gave the partition up, the new owner's assignment callback and the commit that ended it (- when none fell in the gap):\n\n| run | Kafka | coordhost |\n|---|---|---|\n")
	for i, r := range rs {
		if !r.failed {
			fmt.Fprintf(&b, "| %d | %s | %s |\n", i+1, r.kafka.longest, r.through.longest)
		}
	}
	return b.String()
}

// stepTable is, over the completed runs, each step's assignment
// callbacks on both sides (the roll's; the classic group's formation
// before it is left out, as from the rebalances), how many runs
// coordhost's consumers saw more, as many or fewer in it, and which
// consumers saw the difference; then, per run, the consumers whose
// callbacks differed in a step.
func stepTable(rs []rollRun) string {
	ok := map[int]rollRun{} // by run number
	for i, r := range rs {
		if !r.failed && len(r.kafka.perStep) == len(r.through.perStep) {
			ok[i+1] = r
		}
	}
	if len(ok) == 0 {
		return ""
	}
	nums := slices.Sorted(maps.Keys(ok))
	var b strings.Builder
	fmt.Fprintf(&b, "\nPer step over the %d completed run(s): assignment callbacks in all, runs in which coordhost's consumers saw more / as many / fewer, and per consumer coordhost's callbacks minus Kafka's in all:\n\n", len(ok))
	b.WriteString("| step | Kafka | coordhost | runs coordhost more / equal / fewer | per consumer, coordhost − Kafka |\n|---|---|---|---|---|\n")
	var runs strings.Builder
	for i, st := range ok[nums[0]].kafka.perStep {
		if !st.roll() {
			continue
		}
		kt, ct, more, equal, fewer := 0, 0, 0, 0, 0
		diff := map[string]int{}
		for _, n := range nums {
			r := ok[n]
			k, c := r.kafka.perStep[i], r.through.perStep[i]
			kt, ct = kt+k.rebalances, ct+c.rebalances
			switch {
			case c.rebalances > k.rebalances:
				more++
			case c.rebalances == k.rebalances:
				equal++
			default:
				fewer++
			}
			if d := clientDiff(k.byClient, c.byClient); d != "" {
				fmt.Fprintf(&runs, "- run %d, %s: %s\n", n, st.name, d)
			}
			for cl, x := range c.byClient {
				diff[cl] += x
			}
			for cl, x := range k.byClient {
				diff[cl] -= x
			}
		}
		var per []string
		for _, cl := range slices.Sorted(maps.Keys(diff)) {
			if diff[cl] != 0 {
				per = append(per, fmt.Sprintf("%s %+d", cl, diff[cl]))
			}
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d / %d / %d | %s |\n", st.name, kt, ct, more, equal, fewer, strings.Join(per, ", "))
	}
	if runs.Len() > 0 {
		b.WriteString("\nPer run, the consumers whose callbacks differed in a step (Kafka / coordhost):\n\n" + runs.String())
	}
	return b.String()
}

// clientDiff names the consumers whose callback counts differ between
// the two sides, with both counts ("n1 2 / 3"), or is "".
func clientDiff(kafka, through map[string]int) string {
	names := map[string]bool{}
	for cl := range kafka {
		names[cl] = true
	}
	for cl := range through {
		names[cl] = true
	}
	var out []string
	for _, cl := range slices.Sorted(maps.Keys(names)) {
		if kafka[cl] != through[cl] {
			out = append(out, fmt.Sprintf("%s %d / %d", cl, kafka[cl], through[cl]))
		}
	}
	return strings.Join(out, ", ")
}

// medianOver is the median of f over rs: the middle value, or the mean
// of the middle two.
func medianOver(rs []rollRun, f func(rollRun) time.Duration) time.Duration {
	vs := make([]time.Duration, len(rs))
	for i, r := range rs {
		vs[i] = f(r)
	}
	slices.Sort(vs)
	if n := len(vs); n%2 == 0 {
		return (vs[n/2-1] + vs[n/2]) / 2
	}
	return vs[len(vs)/2]
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

func millis(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }
