package interop

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Load and timing of every scenario: a small continuous load keeps the
// suite's CPU use modest while every partition always has fresh input.
const (
	inputPartitions = 6
	inputKeys       = 60
	recordsPerSec   = 200
	steadyPeriod    = 15 * time.Second // time in each protocol after it is Stable
	startBound      = 3 * time.Minute  // bound on an instance or group getting ready
)

// appSpec is one of the suite's Kafka Streams applications with its load.
type appSpec struct {
	name       string // "agg" (App.java) or "orders" (OrdersApp.java)
	partitions int    // input partitions
	threads    int    // num.stream.threads per instance
	// caughtUp is how many records may lack their output for the output to
	// count as caught up: a record passes two exactly-once commits in the
	// heavier app (before and after its repartition topic), so its steady
	// lag is about twice the light app's.
	caughtUp int64
}

// The suite's two applications: aggApp is the light one every CI scenario
// runs (one sub-topology, one thread); ordersApp the heavier one (a
// stream-table join, a repartition topic, two aggregates, two threads).
var (
	aggApp    = appSpec{name: "agg", partitions: inputPartitions, threads: 1, caughtUp: recordsPerSec / 2}
	ordersApp = appSpec{name: "orders", partitions: 8, threads: 2, caughtUp: recordsPerSec}
)

// phaseRow is one line of the results table.
type phaseRow struct {
	scenario    string
	phase       phaseResult
	wrong       string // wrong aggregates (on the scenario's total row)
	transitions string // group type transitions observed during the phase
	lost        string // lost-task log lines (on the total row)
}

// scenarioRun is the shared state of one scenario: its processes, the
// group observer and a failure report of everything needed to diagnose.
type scenarioRun struct {
	t      *testing.T
	name   string
	dir    string
	group  string
	obs    *observer
	lg     *loadGen
	app    appSpec // zero for the one-instance checks (one thread, light app)
	fleet  *fleet
	others []*proc // broker, coordhost, ...: tails in the failure report
}

// newScenario starts the observer and the load generator for application
// group on bootstrap and arranges a failure report.
func newScenario(t *testing.T, name, dir, bootstrap, group string, others ...*proc) *scenarioRun {
	t.Helper()
	return newScenarioApp(t, aggApp, name, dir, bootstrap, group, others...)
}

// newScenarioApp is newScenario for application app.
func newScenarioApp(t *testing.T, app appSpec, name, dir, bootstrap, group string, others ...*proc) *scenarioRun {
	t.Helper()
	s := &scenarioRun{t: t, name: name, dir: dir, group: group, others: others, app: app}
	obs, err := observe(bootstrap, group, 250*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	s.obs = obs
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(s.failureReport())
		}
		obs.close()
	})
	s.lg = startLoadGen(t, dir, bootstrap, app, topicsOf(group), inputKeys, recordsPerSec)
	s.fleet = newFleet(t, dir, bootstrap, group, 3, topicsOf(group))
	s.fleet.setApp(app)
	return s
}

// startClassic starts every instance with the classic protocol (phase
// "startup") and waits until the group is Stable and the output has caught
// up with the backlog.
func (s *scenarioRun) startClassic() {
	s.t.Helper()
	s.must("phase", s.lg.phase("startup"))
	s.fleet.startAll("classic", 0)
	s.must("classic instances running", s.fleet.waitRunning(startBound))
	s.must("classic group", s.stable("classic", 3))
	s.must("startup backlog", s.caughtUp(startBound))
}

// caughtUp waits (bounded by d) until the output has caught up with the
// input (appSpec.caughtUp).
func (s *scenarioRun) caughtUp(d time.Duration) error {
	lag := s.app.caughtUp
	if lag == 0 {
		lag = recordsPerSec / 2
	}
	return s.lg.caughtUp(lag, d)
}

// must fails the scenario with err, naming the step.
func (s *scenarioRun) must(step string, err error) {
	s.t.Helper()
	if err != nil {
		s.t.Fatalf("%s: %s: %v", s.name, step, err)
	}
}

// stable waits until the group is Stable in protocol kind with n instances:
// every stream thread of an instance is a member of the group.
func (s *scenarioRun) stable(kind string, n int) error {
	n *= max(1, s.app.threads)
	return s.obs.waitFor(startBound, fmt.Sprintf("%s Stable with %d members", kind, n), func(v groupView) bool {
		return v.kind == kind && v.state == "Stable" && v.members == n
	})
}

// failureReport is every process's log tail and the group's observed history.
func (s *scenarioRun) failureReport() string {
	var b strings.Builder
	fmt.Fprintf(&b, "=== %s failure report (full logs in %s)\n", s.name, s.dir)
	fmt.Fprintf(&b, "--- group %s as observed:\n%s", s.group, s.obs.report())
	procs := append([]*proc{}, s.others...)
	if s.lg != nil {
		procs = append(procs, s.lg.p)
	}
	if s.fleet != nil {
		procs = append(procs, s.fleet.all()...)
	}
	for _, p := range procs {
		fmt.Fprintf(&b, "--- %s (exited=%v err=%v), last lines:\n%s", p.name, p.exited(), p.err, p.tail(60))
	}
	return b.String()
}

// finish stops the load, collects the verdict and builds the table rows.
func (s *scenarioRun) finish() ([]phaseRow, loadResult) {
	s.t.Helper()
	r, err := s.lg.finish()
	s.must("verifier result", err)
	hist := s.obs.history()
	var rows []phaseRow
	total := phaseResult{Name: "total"}
	for i, ph := range r.Phases {
		if ph.In == 0 && ph.Out == 0 {
			continue
		}
		end := time.Now()
		if i+1 < len(r.Phases) {
			end = time.UnixMilli(r.Phases[i+1].StartMs)
		}
		rows = append(rows, phaseRow{scenario: s.name, phase: ph,
			transitions: typeTransitions(hist, time.UnixMilli(ph.StartMs), end)})
		s.t.Logf("%s, phase %s: max gap at %s", s.name, ph.Name, ph.worst())
		total.In += ph.In
		total.Out += ph.Out
		total.PartitionGapMs = append(total.PartitionGapMs, ph.maxGap().Milliseconds())
	}
	lost := s.fleet.lostTaskLines()
	rows = append(rows, phaseRow{scenario: s.name, phase: total,
		wrong:       r.verdict(),
		transitions: typeTransitions(hist, time.Time{}, time.Now()),
		lost:        fmt.Sprint(len(lost))})
	if r.badOutputs() != 0 || r.In != r.Out || (r.regionChecked && r.RegionOut != r.In) {
		s.t.Errorf("%s: verifier: in %d out %d wrong %d duplicates %d missing %d wrong finals %d send errors %d; samples %v; regions: out %d wrong %d duplicates %d missing %d, samples %v",
			s.name, r.In, r.Out, r.Wrong, r.Duplicates, r.Missing, r.WrongFinal, r.SendErrors, r.WrongSamples,
			r.RegionOut, r.RegionWrong, r.RegionDuplicates, r.RegionMissing, r.RegionSamples)
	}
	return rows, r
}

// formatTable renders rows as the Markdown table of docs/INTEROP.md.
func formatTable(rows []phaseRow) string {
	var b strings.Builder
	b.WriteString("| scenario | phase | max processing gap | records in/out | wrong aggregates | group type transitions seen | lost-task log lines |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %.1f s | %d/%d | %s | %s | %s |\n", r.scenario, r.phase.Name,
			r.phase.maxGap().Seconds(), r.phase.In, r.phase.Out, orDash(r.wrong), r.transitions, orDash(r.lost))
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
