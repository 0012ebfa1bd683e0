package interop

import (
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
// instance roll to the streams protocol in the same group, under load.
func runClientMatrix(t *testing.T, dir, bootstrap string, others ...*proc) []phaseRow {
	s := newScenario(t, "7 client matrix", dir, bootstrap, "interop-matrix", others...)
	s.fleet.leaveOnClose()
	s.must("phase", s.lg.phase("startup"))
	// Instance 1 is a 4.2.0 client from the start: a state directory written
	// by a newer Kafka Streams cannot be opened by an older one (4.4 keeps
	// offsets in a RocksDB column family 4.2 does not know), so the roll
	// changes its protocol, not its client version.
	s.fleet.startVersion(0, "classic", 0, app391Dir)
	s.fleet.startVersion(1, "classic", 0, app420Dir)
	s.fleet.start(2, "classic", 0)
	s.must("classic instances running", s.fleet.waitRunning(startBound))
	s.must("classic group", s.stable("classic", 3))
	s.must("startup backlog", s.caughtUp(startBound))
	s.must("phase", s.lg.phase("mixed-roll"))
	s.must("stop instance 1", s.fleet.stop(1))
	s.fleet.startVersion(1, "streams", 1, app420Dir)
	s.must("4.2.0 instance running", s.fleet.waitRunning(startBound))
	s.must("group with a 4.2.0 streams member", s.stable("streams", 3))
	s.must("output after the 4.2.0 instance", s.settled())
	s.must("stop instance 2", s.fleet.stop(2))
	s.fleet.start(2, "streams", 1)
	s.must("4.4.0 instance running", s.fleet.waitRunning(startBound))
	s.must("mixed group", s.stable("streams", 3))
	time.Sleep(steadyPeriod)
	rows, _ := s.finish()
	if lost := s.fleet.lostTaskLines(); len(lost) > 0 {
		t.Errorf("lost tasks in the mixed roll:\n%s", strings.Join(lost, "\n"))
	}
	s.must("stop instances", s.fleet.stopAll())
	return rows
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
