package interop

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestInteropRealKafka runs the scenarios that need only the real Apache
// Kafka 4.4 broker: scenario 5, the offline-migration baseline, scenario 6's
// group tools, a check that scenario 7's older clients run, and the negative
// control: Kafka itself refuses the online roll. Run it with COORDHOST_INTEROP=1 (docs/INTEROP.md).
func TestInteropRealKafka(t *testing.T) {
	needInterop(t)
	dir := logDir(t)
	b := startBroker(t, dir)
	rows := runOfflineMigration(t, dir, b.addr, b.proc)
	offlineGap = maxGapOf(rows, "offline-")
	t.Run("tools", func(t *testing.T) { runGroupTools(t, dir, b.addr, "interop-baseline", b.proc) })
	t.Run("client-versions", func(t *testing.T) { runClientVersions(t, dir, b.addr, topicsOf("interop-baseline"), b.proc) })
	t.Run("online-refused", func(t *testing.T) { runOnlineRefused(t, dir, b.addr, topicsOf("interop-baseline"), b.proc) })
	table := formatTable(rows)
	t.Logf("results (logs in %s):\n%s", dir, table)
	fmt.Print(table)
}

// offlineGap is the baseline's processing gap (the larger of its offline
// upgrade and downgrade) when TestInteropRealKafka ran earlier in this test
// binary; the online scenarios must stay within a tenth of it.
var offlineGap time.Duration

// maxGapOf is the largest gap among rows whose phase name starts with prefix.
func maxGapOf(rows []phaseRow, prefix string) time.Duration {
	var m time.Duration
	for _, r := range rows {
		if strings.HasPrefix(r.phase.Name, prefix) {
			m = max(m, r.phase.maxGap())
		}
	}
	return m
}

// runOfflineMigration is scenario 5: three classic instances under
// continuous load, then the migration Kafka documents — stop all, wait the
// session timeout, restart all with group.protocol=streams — and back the
// same way. bootstrap is the address every client uses.
//
// The instances close with Kafka Streams' default (stay in the group until
// the session expires), the case Kafka's documented procedure is written
// for; TestInteropCompare runs it with each close mode (runRealKafka).
func runOfflineMigration(t *testing.T, dir, bootstrap string, others ...*proc) []phaseRow {
	return runRealKafka(t, aggApp, closeDefault, false, "5 baseline (offline, real Kafka)", "interop-baseline", dir, bootstrap, others...)
}

// runRealKafka is the offline migration of app on a real Kafka broker with
// instances closing in mode cm; with plain, each protocol also gets a plain
// rolling restart (the same protocol again, one instance at a time, paced
// like the online roll): the floor any roll pays.
func runRealKafka(t *testing.T, app appSpec, cm closeMode, plain bool, name, group, dir, bootstrap string, others ...*proc) []phaseRow {
	s := newScenarioApp(t, app, name, dir, bootstrap, group, others...)
	f := s.fleet
	f.setClose(cm)
	s.startClassic()
	s.must("phase", s.lg.phase("classic"))
	time.Sleep(steadyPeriod)

	if plain {
		s.rollingSwitch("plain-roll-classic", "classic", "classic", 1)
	}
	s.offlineSwitch("offline-upgrade", "streams", 2)
	if plain {
		s.rollingSwitch("plain-roll-streams", "streams", "streams", 3)
	}
	s.offlineSwitch("offline-downgrade", "classic", 4)

	rows, _ := s.finish()
	s.must("stop instances", f.stopAll())
	return rows
}

// offlineSwitch stops every instance, waits until the group can change
// protocol and restarts all of them with protocol, then, once the output
// has caught up, runs steadily for a while. Instances that closed with Kafka Streams' default stay members
// until their sessions expire, so it waits out the session timeout; after a
// leave-group close it waits (at most as long) for the group to be empty.
func (s *scenarioRun) offlineSwitch(phase, protocol string, gen int) {
	s.t.Helper()
	s.must("phase", s.lg.phase(phase))
	s.must("stop all", s.fleet.stopAll())
	wait := sessionTimeoutMs*time.Millisecond + time.Second
	if s.fleet.cfgs[0].leave {
		_ = s.obs.waitFor(wait, "group empty", func(v groupView) bool { return v.members == 0 })
	} else {
		time.Sleep(wait)
	}
	s.fleet.startAll(protocol, gen)
	s.must(protocol+" instances running", s.fleet.waitRunning(startBound))
	s.must(protocol+" group", s.stable(protocol, 3))
	// The backlog of the stop is this phase's: a gap counts in the phase
	// its output is read in, so the next phase (a plain roll) must not
	// begin before the output caught up, as after every rolling restart.
	s.must("output after "+phase, s.settled())
	time.Sleep(steadyPeriod)
}
