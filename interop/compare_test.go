package interop

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The full comparison (`make interop-compare`) is sized by environment
// variables: the applications to run (agg, orders; both by default), the
// number of runs of each measurement (1 by default; the make target asks
// for 3) and a file the result table is written to.
const (
	compareAppsEnv = "COORDHOST_INTEROP_APPS"
	compareRunsEnv = "COORDHOST_INTEROP_RUNS"
	compareOutEnv  = "COORDHOST_INTEROP_COMPARE_OUT"
	// compareDataPlaneEnv picks coordhost's data plane in the comparison:
	// "external" (the default) puts coordhost in front of the same real
	// broker the Kafka side runs on, so both sides' records, transactions
	// and read_committed reads go through one data plane and only the
	// group coordinator differs; "embedded" uses coordhost's own.
	compareDataPlaneEnv = "COORDHOST_INTEROP_COMPARE_DATAPLANE"
	// compareClosesEnv narrows the close modes (leave-group, default;
	// both by default), for a shorter run.
	compareClosesEnv = "COORDHOST_INTEROP_CLOSES"
	// compareSidesEnv narrows the sides: "online" runs only coordhost's
	// online roll (no Kafka baseline, no ratios), for before/after runs of
	// a coordhost change; both sides by default.
	compareSidesEnv = "COORDHOST_INTEROP_COMPARE_SIDES"
)

// measure names one number of the comparison: a phase of a scenario in a
// close mode.
type measure struct {
	app   string
	close closeMode
	phase string // plain-roll-classic, offline-upgrade, rolling-upgrade, ...
}

// TestInteropCompare measures, for each application and each close mode
// (the same on both sides), the offline migration and a plain rolling
// restart with each protocol on a real Apache Kafka 4.4 broker, and the
// online roll through coordhost (in front of the same broker unless
// $COORDHOST_INTEROP_COMPARE_DATAPLANE=embedded), and prints the table
// of docs/INTEROP.md: each number the median of the runs, with their
// spread, and the ratios the suite's bars are about.
func TestInteropCompare(t *testing.T) {
	needInterop(t)
	apps := []appSpec{aggApp, ordersApp}
	if v := os.Getenv(compareAppsEnv); v != "" {
		apps = apps[:0]
		for _, name := range strings.Split(v, ",") {
			switch strings.TrimSpace(name) {
			case aggApp.name:
				apps = append(apps, aggApp)
			case ordersApp.name:
				apps = append(apps, ordersApp)
			default:
				t.Fatalf("%s: unknown application %q (agg, orders)", compareAppsEnv, name)
			}
		}
	}
	runs := 1
	if v := os.Getenv(compareRunsEnv); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", compareRunsEnv, v)
		}
		runs = n
	}
	closes := compareCloses(t)
	kafkaSide := compareKafkaSide(t)
	loadBefore, commit := loadAverage(), gitCommit()
	started := time.Now().UTC()
	dir := logDir(t)
	b := startBroker(t, dir)
	plane := compareDataPlane(t)
	dataplane := b.addr
	if plane == "embedded" {
		dataplane = ""
	}
	c := startCoordhost(t, dir, dataplane)
	if err := groupsServed(c.addr, "interop-probe", 30*time.Second); err != nil {
		t.Fatalf("coordhost: %v\n%s", err, c.proc.tail(60))
	}
	stepPhases = true
	defer func() { stepPhases = false }()
	var moves []taskMove // every restart's task hand-overs
	gaps := map[measure][]time.Duration{}
	var rows []phaseRow // every scenario's rows, verdicts included
	for run := 1; run <= runs; run++ {
		for _, app := range apps {
			for _, cm := range closes {
				group := fmt.Sprintf("cmp-%s-%s-%d", app.name, cm, run)
				ok := t.Run(group, func(t *testing.T) {
					var onKafka []phaseRow
					if kafkaSide {
						onKafka = runRealKafka(t, app, cm, true, "real Kafka "+group, group+"-kafka", dir, b.addr, b.proc)
						onKafka = timelineOf(t, &moves, dir, group+"-kafka", onKafka)
					}
					online := runOnlineRollWith(t, app, cm, "coordhost "+group, group+"-online", dir, c.addr, c.proc)
					online = timelineOf(t, &moves, dir, group+"-online", online)
					rows = append(rows, onKafka...)
					rows = append(rows, online...)
					for _, r := range append(onKafka, online...) {
						if r.phase.Name == "total" || r.phase.Name == "startup" || r.phase.Name == "classic" {
							continue
						}
						m := measure{app.name, cm, r.phase.Name}
						gaps[m] = append(gaps[m], r.phase.maxGap())
					}
				})
				if !ok {
					t.FailNow()
				}
			}
		}
	}
	table := compareTable(apps, gaps)
	head := fmt.Sprintf("`make interop-compare` (%d run(s) of each measurement, coordhost's data plane %s), commit %s, %s–%s UTC, load average (1/5/15 min) %s before, %s after.\n\n",
		runs, plane, commit, started.Format("2006-01-02 15:04"), time.Now().UTC().Format("15:04"), loadBefore, loadAverage())
	out := head + table + "\n" + compareConfigs() + "\nEvery scenario's phases and verdicts:\n\n" + formatTable(rows)
	t.Logf("comparison:\n%s", out)
	fmt.Print(out)
	timeline := head + "Where each hand-over's time goes, per scenario and phase:\n\n" + segmentTable(moves) +
		"\nEvery task hand-over, in seconds after its step started (the restarted instance was asked to stop):\n\n" + timelineTable(moves)
	t.Logf("hand-over timeline:\n%s", segmentTable(moves))
	if path := os.Getenv(compareOutEnv); path != "" {
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			t.Error(err)
		}
		if err := os.WriteFile(strings.TrimSuffix(path, ".md")+"-timeline.md", []byte(timeline), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// compareCloses is $COORDHOST_INTEROP_CLOSES as close modes, both when unset.
func compareCloses(t *testing.T) []closeMode {
	v := os.Getenv(compareClosesEnv)
	if v == "" {
		return []closeMode{closeLeave, closeDefault}
	}
	var out []closeMode
	for _, name := range strings.Split(v, ",") {
		switch cm := closeMode(strings.TrimSpace(name)); cm {
		case closeLeave, closeDefault:
			out = append(out, cm)
		default:
			t.Fatalf("%s: unknown close mode %q (leave-group, default)", compareClosesEnv, name)
		}
	}
	return out
}

// compareKafkaSide says whether the Kafka baseline runs:
// $COORDHOST_INTEROP_COMPARE_SIDES unset or "both", not "online".
func compareKafkaSide(t *testing.T) bool {
	switch v := os.Getenv(compareSidesEnv); v {
	case "", "both":
		return true
	case "online":
		return false
	default:
		t.Fatalf("%s=%q: want both or online", compareSidesEnv, v)
		return false
	}
}

// compareDataPlane is $COORDHOST_INTEROP_COMPARE_DATAPLANE: "external"
// (the default) or "embedded".
func compareDataPlane(t *testing.T) string {
	switch v := os.Getenv(compareDataPlaneEnv); v {
	case "", "external":
		return "external"
	case "embedded":
		return v
	default:
		t.Fatalf("%s=%q: want external or embedded", compareDataPlaneEnv, v)
		return ""
	}
}

// timelineOf adds the hand-overs of the scenario on group (its rows' per-
// restart phases, the logs in dir) to moves and returns its rows with one
// row per phase again.
func timelineOf(t *testing.T, moves *[]taskMove, dir, group string, rows []phaseRow) []phaseRow {
	steps, folded := stepsOf(rows, rollEnded)
	ms, err := stepTimeline(dir, group, steps)
	if err != nil {
		t.Errorf("hand-over timeline of %s: %v", group, err)
	}
	*moves = append(*moves, ms...)
	return folded
}

// compareTable renders the comparison: per application and close mode, the
// floor (a plain rolling restart with each protocol, real Kafka), the
// offline migration (real Kafka) and the online roll (coordhost), then the
// ratios: the online upgrade against the plain streams roll and the online
// downgrade against the plain classic roll (bar ≤ 1.0), and online against
// offline in the same direction (bar ≤ 0.3).
func compareTable(apps []appSpec, gaps map[measure][]time.Duration) string {
	var b strings.Builder
	b.WriteString("| app | close mode | plain roll classic (Kafka) | plain roll streams (Kafka) | offline upgrade (Kafka) | offline downgrade (Kafka) | online upgrade (coordhost) | online downgrade (coordhost) | upgrade ÷ plain streams | downgrade ÷ plain classic | online ÷ offline up / down |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, app := range apps {
		for _, cm := range []closeMode{closeLeave, closeDefault} {
			get := func(phase string) []time.Duration { return gaps[measure{app.name, cm, phase}] }
			plainC, plainS := get("plain-roll-classic"), get("plain-roll-streams")
			offUp, offDown := get("offline-upgrade"), get("offline-downgrade")
			onUp, onDown := get("rolling-upgrade"), get("rolling-downgrade")
			if len(onUp)+len(offUp) == 0 {
				continue
			}
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s |\n", app.name, cm,
				spread(plainC), spread(plainS), spread(offUp), spread(offDown), spread(onUp), spread(onDown),
				ratio(onUp, plainS), ratio(onDown, plainC), ratio(onUp, offUp), ratio(onDown, offDown))
		}
	}
	b.WriteString("\nEach cell: the per-partition max processing gap of the phase, median of the runs [min–max]; ratios are of medians.\n")
	return b.String()
}

// median of ds (0 when empty).
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// spread is "median [min–max]" in seconds, or "-" without runs.
func spread(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	if len(ds) == 1 {
		return fmt.Sprintf("%.1f s", ds[0].Seconds())
	}
	return fmt.Sprintf("%.1f s [%.1f–%.1f]", median(ds).Seconds(), slices.Min(ds).Seconds(), slices.Max(ds).Seconds())
}

// ratio of the medians of a and b, or "-".
func ratio(a, b []time.Duration) string {
	if len(a) == 0 || len(b) == 0 || median(b) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", median(a).Seconds()/median(b).Seconds())
}

// compareConfigs lists the settings of both sides next to each other.
func compareConfigs() string {
	var b strings.Builder
	b.WriteString("Configurations, side by side:\n\n| | real Kafka 4.4 broker | coordhost |\n|---|---|---|\n")
	keys := make([]string, 0, len(brokerConfig))
	for k := range brokerConfig {
		if strings.HasPrefix(k, "group.") {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var broker []string
	for _, k := range keys {
		broker = append(broker, "`"+k+"="+brokerConfig[k]+"`")
	}
	var ch []string
	for _, f := range coordhostFlags {
		ch = append(ch, "`"+f+"`")
	}
	fmt.Fprintf(&b, "| group coordinator | %s | %s |\n", strings.Join(broker, " "), strings.Join(ch, " "))
	fmt.Fprintf(&b, "| applications (both sides) | agg: App.java, %d input partitions, %d thread; orders: OrdersApp.java, %d input partitions, %d threads | the same |\n",
		aggApp.partitions, aggApp.threads, ordersApp.partitions, ordersApp.threads)
	fmt.Fprintf(&b, "| instances (both sides) | 3, exactly_once_v2, commit.interval.ms=100, num.standby.replicas=1, session.timeout.ms=%d, heartbeat.interval.ms=%d | the same |\n",
		sessionTimeoutMs, heartbeatIntervalMs)
	fmt.Fprintf(&b, "| load (both sides) | %d records/s over %d keys, read back read_committed | the same |\n", recordsPerSec, inputKeys)
	return b.String()
}

// loadAverage is /proc/loadavg's first three fields, or "unknown".
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(raw)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

// gitCommit is the checked-out commit (with "+dirty" for local changes), or "unknown".
func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		c += "+dirty"
	}
	return c
}
