package interop

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The soak's size and seed: COORDHOST_INTEROP_SOAK_KILLS kill -9s of
// coordhost (soakKillsCI unless set; `make soak` sets 20) at moments drawn
// from COORDHOST_INTEROP_SOAK_SEED (soakSeedCI unless set).
const (
	soakKillsEnv = "COORDHOST_INTEROP_SOAK_KILLS"
	soakSeedEnv  = "COORDHOST_INTEROP_SOAK_SEED"
	soakKillsCI  = 5
	soakSeedCI   = 1
)

// soakMaxDelay bounds a kill's seeded moment: it lands within this long
// after the roll step's instance was started (or after the step's previous
// kill was recovered from), so while the new instance starts, joins,
// reconciles its tasks or restores them.
const soakMaxDelay = 8 * time.Second

// soakSteps are the online roll's steps: instance i restarted with protocol
// to; kind is the group's type once the step is done (KIP-848's online
// migration: classic becomes streams at the first streams member, streams
// becomes classic when its last streams member leaves).
var soakSteps = []struct {
	name, to, kind string
	i              int
}{
	{"upgrade-0", "streams", "streams", 0},
	{"upgrade-1", "streams", "streams", 1},
	{"upgrade-2", "streams", "streams", 2},
	{"downgrade-0", "classic", "streams", 0},
	{"downgrade-1", "classic", "streams", 1},
	{"downgrade-2", "classic", "classic", 2},
}

// TestInteropSoak kills coordhost (SIGKILL, restart at once on the same
// data directory) at seeded moments during an online classic → streams →
// classic roll of the exactly-once orders app, coordhost in front of a real
// Apache Kafka 4.4 broker. After every kill no instance may die and the
// output must resume within coordhost's downtime plus restartResumeSlack;
// at the end no output may be wrong, duplicated or missing. CI runs
// soakKillsCI kills, `make soak` 20.
func TestInteropSoak(t *testing.T) {
	needInterop(t)
	dir := logDir(t)
	b := startBroker(t, dir)
	runSoak(t, dir, b.addr, b.proc)
}

// TestInteropSoakEmbedded is TestInteropSoak on the embedded data plane
// (`make soak-embedded`, not in CI). The embedded data plane cannot finish
// a transaction a kill interrupted (docs/RELIABILITY.md), so this run
// measures how often a kill breaks exactly-once there: an instance that
// dies is restarted so the soak goes on, and the summary line counts the
// kills after which something went wrong.
func TestInteropSoakEmbedded(t *testing.T) {
	needInterop(t)
	runSoak(t, logDir(t), "")
}

// killOutcome is what one kill -9 of coordhost did to the application.
type killOutcome struct {
	n        int
	step     string
	down     time.Duration
	died     []string // instances that died after the kill
	resumed  bool     // output caught up within down + restartResumeSlack
	badDelta int64    // wrong + duplicate outputs the verifier counted from this kill to the next
}

func (o killOutcome) bad() bool { return len(o.died) > 0 || !o.resumed || o.badDelta > 0 }

// soakRun is one soak: the scenario, the coordhost it kills, the seeded
// plan and what each kill did.
type soakRun struct {
	*scenarioRun
	c         *coordhost
	rng       *rand.Rand
	protocols []string // each instance's current protocol
	gen       int      // instance name counter
	outcomes  []killOutcome
	downs     map[string]time.Duration // kill phase -> coordhost's downtime
}

func soakEnvInt(t *testing.T, name string, def int64) int64 {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a non-negative integer", name, v)
	}
	return n
}

// soakPlan spreads kills over the roll's steps: how many kills each step
// gets, drawn from rng.
func soakPlan(rng *rand.Rand, kills, steps int) []int {
	plan := make([]int, steps)
	for k := 0; k < kills; k++ {
		plan[rng.Intn(steps)]++
	}
	return plan
}

// runSoak is the soak on one data plane: embedded when dataplane is empty,
// else the Kafka cluster at dataplane (whose processes are others).
func runSoak(t *testing.T, dir, dataplane string, others ...*proc) {
	kills := int(soakEnvInt(t, soakKillsEnv, soakKillsCI))
	seed := soakEnvInt(t, soakSeedEnv, soakSeedCI)
	started := time.Now()
	c := startCoordhost(t, dir, dataplane)
	if err := groupsServed(c.addr, "interop-probe", 30*time.Second); err != nil {
		t.Fatalf("coordhost: %v\n%s", err, c.proc.tail(60))
	}
	s := &soakRun{
		scenarioRun: newScenarioApp(t, ordersApp, "coordhost kill -9 soak", dir, c.addr, "interop-soak", append(others, c.proc)...),
		c:           c,
		rng:         rand.New(rand.NewSource(seed)),
		protocols:   []string{"classic", "classic", "classic"},
		gen:         1,
		downs:       map[string]time.Duration{},
	}
	s.fleet.setClose(closeLeave)
	s.startClassic()
	// How long a roll step waits for the output to catch up: on the
	// embedded data plane a broken transaction can stall it for good, and
	// the soak goes on to measure the later kills.
	bound := startBound
	if dataplane == "" {
		bound = time.Minute
	}
	plan := soakPlan(s.rng, kills, len(soakSteps))
	t.Logf("seed %d, %d kills, per roll step %v", seed, kills, plan)

	for si, st := range soakSteps {
		s.must("phase", s.lg.phase(st.name))
		s.must("stop instance", s.fleet.stop(st.i))
		s.startInstance(st.i, st.to)
		for j := 0; j < plan[si]; j++ {
			time.Sleep(time.Duration(s.rng.Int63n(int64(soakMaxDelay))))
			s.kill(st.name)
		}
		// Roll on as an operator does once the instance is healthy.
		s.check(st.name+": instances running", s.fleet.waitRunning(startBound))
		s.check(st.name+": group", s.stable(st.kind, len(s.fleet.cfgs)))
		time.Sleep(settleDelay)
		s.check(st.name+": output", s.caughtUp(bound))
	}
	s.must("phase", s.lg.phase("end"))
	time.Sleep(11 * time.Second) // two verifier PROGRESS lines
	s.closeOutcome()

	rows, _ := s.finish()
	s.restartVerdict(rows, s.downs)
	s.check("stop instances", s.fleet.stopAll())
	bad, died, stalled, wrong := 0, 0, 0, 0
	for _, o := range s.outcomes {
		if o.bad() {
			bad++
		}
		if len(o.died) > 0 {
			died++
		}
		if !o.resumed {
			stalled++
		}
		if o.badDelta > 0 {
			wrong++
		}
	}
	plane := "external Kafka 4.4"
	if dataplane == "" {
		plane = "embedded"
	}
	table := formatTable(rows)
	t.Logf("results (logs in %s):\n%s", dir, table)
	fmt.Print(table)
	summary := fmt.Sprintf("SOAK %s: seed %d, %d kills in %v: %d followed by a failure (instances died after %d, output not resumed within downtime + %v (×1.5 under CI) after %d, new wrong or duplicate outputs after %d)",
		plane, seed, len(s.outcomes), time.Since(started).Round(time.Second), bad, died, restartResumeSlack, stalled, wrong)
	t.Log(summary)
	fmt.Println(summary)
}

// check reports err as a failure of step without ending the soak: a soak
// that goes on measures what every later kill does.
func (s *soakRun) check(step string, err error) {
	s.t.Helper()
	if err != nil {
		s.t.Errorf("%s: %s: %v", s.name, step, err)
	}
}

// startInstance starts instance i with protocol under a fresh name.
func (s *soakRun) startInstance(i int, protocol string) {
	s.protocols[i] = protocol
	s.fleet.start(i, protocol, s.gen)
	s.gen++
}

// verifierBad is the verifier's latest count of wrong and duplicate outputs
// (its PROGRESS line, printed every 5 s).
func (s *soakRun) verifierBad() int64 {
	lines := s.lg.p.grep("PROGRESS ")
	if len(lines) == 0 {
		return 0
	}
	var n int64
	for _, f := range strings.Fields(lines[len(lines)-1]) {
		for _, key := range []string{"wrong=", "duplicates="} {
			if v, ok := strings.CutPrefix(f, key); ok {
				x, _ := strconv.ParseInt(v, 10, 64)
				n += x
			}
		}
	}
	return n
}

// closeOutcome charges the verifier's new wrong and duplicate outputs since
// the last kill to that kill (the verifier prints its counts every 5 s, so
// a count may land on the next kill; the run's verdict counts them all).
func (s *soakRun) closeOutcome() {
	if len(s.outcomes) == 0 {
		return
	}
	o := &s.outcomes[len(s.outcomes)-1]
	o.badDelta = s.verifierBad() - o.badDelta
	if o.badDelta > 0 {
		s.t.Errorf("kill %d (%s): the verifier counted %d new wrong or duplicate outputs after it", o.n, o.step, o.badDelta)
	}
}

// kill SIGKILLs coordhost during step and restarts it at once, then checks
// that no instance died (restarting any that did, so the soak goes on) and
// that the output resumes within the downtime plus restartResumeSlack
// (resumeGate).
func (s *soakRun) kill(step string) {
	s.t.Helper()
	s.closeOutcome()
	n := len(s.outcomes) + 1
	phase := fmt.Sprintf("kill-%d", n)
	s.must("phase", s.lg.phase(phase))
	o := killOutcome{n: n, step: step, badDelta: s.verifierBad()}
	down, old, err := s.c.restart(false)
	s.others = append(s.others, old)
	s.must(phase+": restart coordhost", err)
	s.others = append(s.others, s.c.proc)
	o.down = down
	s.downs[phase] = down
	s.t.Logf("%s during %s: coordhost down %v", phase, step, down.Round(time.Millisecond))

	back := time.Now()
	if err := s.caughtUp(resumeGate(down) - down); err != nil {
		s.t.Errorf("%s: output did not resume within %v of the kill (coordhost's downtime %v + %v, ×1.5 under CI): %v",
			phase, resumeGate(down).Round(time.Millisecond), down.Round(time.Millisecond), restartResumeSlack, err)
	} else {
		o.resumed = true
	}
	// An instance whose transaction the kill broke dies within a few
	// seconds of coordhost's return (its commit fails).
	time.Sleep(time.Until(back.Add(5 * time.Second)))
	for i, p := range s.fleet.procs {
		if p == nil {
			continue
		}
		if dead := p.grep("UNCAUGHT"); len(dead) > 0 || p.exited() {
			o.died = append(o.died, p.name)
			s.t.Errorf("%s: instance %d (%s) died: %s\n%s", phase, i, p.name, strings.Join(dead, "; "), strings.Join(p.grep("Caused by"), "\n"))
			s.check(phase+": stop the dead instance", s.fleet.stop(i))
			s.startInstance(i, s.protocols[i])
		}
	}
	if !o.resumed {
		if err := s.caughtUp(30 * time.Second); err != nil {
			s.t.Logf("%s: still behind 30 s later: %v", phase, err)
		}
	}
	s.outcomes = append(s.outcomes, o)
	s.must("phase", s.lg.phase(step+"-after-"+phase))
}
