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
func runOfflineMigration(t *testing.T, dir, bootstrap string, others ...*proc) []phaseRow {
	s := newScenario(t, "5 baseline (offline, real Kafka)", dir, bootstrap, "interop-baseline", others...)
	f := s.fleet
	s.must("phase", s.lg.phase("startup"))
	f.startAll("classic", 0)
	s.must("classic instances running", f.waitRunning(startBound))
	s.must("classic group", s.stable("classic", 3))
	s.must("startup backlog", s.lg.caughtUp(recordsPerSec/2, startBound))
	s.must("phase", s.lg.phase("classic"))
	time.Sleep(steadyPeriod)

	s.offlineSwitch("offline-upgrade", "streams", 1)
	s.offlineSwitch("offline-downgrade", "classic", 2)

	rows, _ := s.finish()
	s.must("stop instances", f.stopAll())
	return rows
}

// offlineSwitch stops every instance, waits out the session timeout and
// restarts all of them with protocol, then runs steadily for a while.
func (s *scenarioRun) offlineSwitch(phase, protocol string, gen int) {
	s.t.Helper()
	s.must("phase", s.lg.phase(phase))
	s.must("stop all", s.fleet.stopAll())
	time.Sleep(sessionTimeoutMs*time.Millisecond + time.Second)
	s.fleet.startAll(protocol, gen)
	s.must(protocol+" instances running", s.fleet.waitRunning(startBound))
	s.must(protocol+" group", s.stable(protocol, 3))
	time.Sleep(steadyPeriod)
}
