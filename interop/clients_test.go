package interop

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// runClientVersions checks, against bootstrap, that the client-matrix builds
// of the test application work on their own: Kafka Streams 3.9.1 in a
// classic group and 4.2.0 in a streams group, each until RUNNING and Stable.
// Both read and write the topics of the scenario named by group, tp; run it
// after that scenario's verdict.
func runClientVersions(t *testing.T, dir, bootstrap string, tp topics, others ...*proc) {
	for _, c := range []struct{ project, protocol string }{
		{app391Dir, "classic"},
		{app420Dir, "streams"},
	} {
		group := "interop-" + strings.TrimPrefix(c.project, appDir+"-")
		obs, err := observe(bootstrap, group, 250*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		s := &scenarioRun{t: t, name: group, dir: dir, group: group, obs: obs, others: others}
		s.fleet = newFleet(t, dir, bootstrap, group, 1, tp)
		s.fleet.startVersion(0, c.protocol, 0, c.project)
		err = s.fleet.waitRunning(startBound)
		if err == nil {
			err = s.stable(c.protocol, 1)
		}
		if err == nil {
			err = s.fleet.stopAll()
		}
		obs.close()
		if err != nil {
			t.Fatalf("%s on %s: %v\n%s", c.project, c.protocol, err, s.failureReport())
		}
	}
}

// runClientMatrix is scenario 7 against bootstrap: a Kafka Streams 3.9.1
// classic instance stays classic while a 4.2.0 instance (rolling to the
// streams protocol: StreamsGroupHeartbeat v0, no task offsets) and a 4.4.0
// instance roll to the streams protocol in the same group, under load, and
// back to classic (the 4.4.0 one first). The group is a streams group from
// the first streams member until the last one leaves, then classic again;
// the 3.9.1 instance runs from start to end without a restart, a lost task
// or a dead thread.
func runClientMatrix(t *testing.T, dir, bootstrap string, others ...*proc) []phaseRow {
	s := newScenario(t, "7 client matrix", dir, bootstrap, "interop-matrix", others...)
	s.fleet.leaveOnClose()
	s.must("phase", s.lg.phase("startup"))
	// Instance 1 is a 4.2.0 client from the start: a state directory written
	// by a newer Kafka Streams cannot be opened by an older one (4.4 keeps
	// offsets in a RocksDB column family 4.2 does not know), so the roll
	// changes its protocol, not its client version.
	s.fleet.startVersion(0, "classic", 0, app391Dir)
	old := s.fleet.procs[0]
	s.fleet.startVersion(1, "classic", 0, app420Dir)
	s.fleet.start(2, "classic", 0)
	s.must("classic instances running", s.fleet.waitRunning(startBound))
	s.must("classic group", s.stable("classic", 3))
	s.must("startup backlog", s.caughtUp(startBound))

	s.must("phase", s.lg.phase("mixed-roll"))
	s.restartAs(1, "streams", 1, app420Dir, "streams")
	s.restartAs(2, "streams", 1, "", "streams")
	time.Sleep(steadyPeriod)

	s.must("phase", s.lg.phase("roll-back"))
	back := time.Now()
	s.restartAs(2, "classic", 2, "", "streams")
	s.restartAs(1, "classic", 2, app420Dir, "classic")
	if tr := typeTransitions(s.obs.history(), back, time.Now()); tr != "streams→classic" {
		t.Errorf("group types seen in the roll back: %s, want streams→classic", tr)
	}
	time.Sleep(steadyPeriod)

	rows, _ := s.finish()
	if lost := s.fleet.lostTaskLines(); len(lost) > 0 {
		t.Errorf("lost tasks in the client matrix:\n%s", strings.Join(lost, "\n"))
	}
	if s.fleet.procs[0] != old || old.exited() {
		t.Errorf("the 3.9.1 instance did not run through the whole scenario (exited=%v err=%v)", old.exited(), old.err)
	}
	// App.java's own lines: "STATE <new> <old>" and "CLOSED".
	for _, l := range old.grep("STATE ERROR", "STATE PENDING_SHUTDOWN", "CLOSED") {
		if strings.HasPrefix(l, "STATE ") || l == "CLOSED" {
			t.Errorf("the 3.9.1 instance shut down during the scenario: %s", l)
		}
	}
	s.must("stop instances", s.fleet.stopAll())
	return rows
}

// restartAs stops instance i and starts it again on protocol with the
// client version of project (appConfig.project), then waits until it is
// RUNNING, the group is a Stable group of kind with every member, and the
// output has caught up.
func (s *scenarioRun) restartAs(i int, protocol string, gen int, project, kind string) {
	s.t.Helper()
	s.must(fmt.Sprintf("stop instance %d", i), s.fleet.stop(i))
	s.fleet.startVersion(i, protocol, gen, project)
	s.must(fmt.Sprintf("instance %d running on %s", i, protocol), s.fleet.waitRunning(startBound))
	s.must(fmt.Sprintf("%s group after instance %d", kind, i), s.stable(kind, len(s.fleet.cfgs)))
	s.must(fmt.Sprintf("output after instance %d", i), s.settled())
}

// runOnlineRefused is the negative control of the online roll: on Apache
// Kafka 4.4 a streams-protocol instance cannot join a group that still has
// a classic member — Kafka has no online conversion, which is what coordhost
// adds. The instance must die with Kafka's GROUP_ID_NOT_FOUND ("is not a
// streams group") while the classic member keeps the group.
func runOnlineRefused(t *testing.T, dir, bootstrap string, tp topics, others ...*proc) {
	const group = "interop-refused"
	obs, err := observe(bootstrap, group, 250*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer obs.close()
	s := &scenarioRun{t: t, name: group, dir: dir, group: group, obs: obs, others: others}
	s.fleet = newFleet(t, dir, bootstrap, group, 2, tp)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(s.failureReport())
		}
	})
	s.fleet.start(0, "classic", 0)
	s.must("classic instance running", s.fleet.waitRunning(startBound))
	s.must("classic group", s.stable("classic", 1))
	s.fleet.start(1, "streams", 0)
	refused := s.fleet.procs[1]
	if _, _, err := refused.waitLine("is not a streams group", 0, startBound); err != nil {
		t.Fatalf("streams instance joining a live classic group: %v", err)
	}
	select {
	case <-refused.done:
	case <-time.After(time.Minute):
		t.Fatalf("refused streams instance still running a minute after the error")
	}
	if v := obs.last(); v.kind != "classic" || v.members != 1 {
		t.Errorf("group after the refused join: %v, want classic with 1 member", v)
	}
	s.must("stop", s.fleet.stopAll())
}
