package interop

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/coordhost/coordhost/host/runtime"
)

// TestScaleOutStreamsApp runs the suite's Kafka Streams application (the
// exactly-once aggregate, three instances) against three coordhost nodes
// of one cluster in front of the real Apache Kafka 4.4 broker, and
// SIGKILLs the node that owns the application's group partition: with
// every instance on the classic protocol, with every instance on the
// streams protocol, and in the middle of an online classic -> streams
// roll. The instances are seeded with all three nodes and reach the owner
// through FindCoordinator. The input producer and the verifier talk to
// the broker directly, so they measure the application alone. Each
// subtest: no instance dies, the output catches up after the kill, and
// the verifier counts no wrong, duplicate or missing output; the
// processing gap of the kill's phase is logged (SCALEOUT-APP lines) and
// recorded in docs/SCALE-OUT.md.
func TestScaleOutStreamsApp(t *testing.T) {
	needInterop(t)
	dir := logDir(t)
	b := startBroker(t, dir)
	createScaleOutTopic(t, b.addr)
	nodes := startScaleOut(t, dir, b.addr, 3)
	var rows []phaseRow
	var summary []string
	run := func(name string, f func(a *scaleOutApp)) {
		// Every subtest starts on three nodes: one a failed subtest left
		// dead is started again.
		for _, n := range nodes {
			if n.proc.exited() {
				if err := restartScaleOutNode(t, n); err != nil {
					t.Fatal(err)
				}
			}
		}
		waitScaleOut(t, nodes, 2*time.Minute)
		t.Run(name, func(st *testing.T) {
			a := newScaleOutApp(st, dir, b, nodes, "scaleout-app-"+name)
			a.top = t
			f(a)
			r, line := a.finish()
			rows = append(rows, r...)
			summary = append(summary, line)
		})
	}
	run("classic", func(a *scaleOutApp) {
		a.start("classic")
		a.killOwner("kill-owner", "classic")
		a.restartNode()
	})
	run("streams", func(a *scaleOutApp) {
		a.start("streams")
		a.killOwner("kill-owner", "streams")
		a.restartNode()
	})
	run("migration", func(a *scaleOutApp) {
		a.start("classic")
		a.must("phase", a.lg.phase("roll-0"))
		a.restartAs(0, "streams", 1, "", "streams")
		// Instance 1 restarts on the streams protocol; the owner dies
		// while the group is mixed and reconciling it.
		a.must("phase", a.lg.phase("roll-1"))
		a.must("stop instance 1", a.fleet.stop(1))
		a.fleet.start(1, "streams", 1)
		err := a.obs.waitFor(startBound, "streams group with 3 members", func(v groupView) bool {
			return v.kind == "streams" && v.members == 3
		})
		a.must("instance 1 joining", err)
		a.killOwner("kill-owner-mid-roll", "streams")
		a.must("phase", a.lg.phase("roll-2"))
		a.restartAs(2, "streams", 1, "", "streams")
		a.restartNode()
	})
	la, _ := os.ReadFile("/proc/loadavg")
	table := formatTable(rows)
	t.Logf("results (logs in %s, load average %s):\n%s", dir, strings.TrimSpace(string(la)), table)
	fmt.Print(table)
	for _, l := range summary {
		t.Log(l)
		fmt.Println(l)
	}
}

// scaleOutApp is one application's run on the scale-out nodes: the
// scenario (instances, load, verifier, observer) and the node it killed.
type scaleOutApp struct {
	*scenarioRun
	nodes   []*scaleOutNode
	top     *testing.T // the whole test's: a node restarted here outlives the subtest
	started time.Time
	victim  *scaleOutNode
	killed  string        // the kill's phase
	resumed time.Duration // kill -> output caught up
	served  time.Duration // kill -> the group described again
}

// newScaleOutApp prepares application group on nodes: the load generator
// and verifier on the broker, an observer and three instances seeded
// with every node (each instance starts from another one).
func newScaleOutApp(t *testing.T, dir string, b *broker, nodes []*scaleOutNode, group string) *scaleOutApp {
	t.Helper()
	a := &scaleOutApp{nodes: nodes, started: time.Now()}
	s := &scenarioRun{t: t, name: t.Name(), dir: dir, group: group, app: aggApp, others: []*proc{b.proc}}
	for _, n := range nodes {
		s.others = append(s.others, n.proc)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seedsFrom(nodes, 0)...))
	if err != nil {
		t.Fatal(err)
	}
	s.obs = &observer{group: group, cl: cl, stop: make(chan struct{}), done: make(chan struct{})}
	go s.obs.loop(250 * time.Millisecond)
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(s.failureReport())
		}
		s.obs.close()
	})
	s.lg = startLoadGen(t, dir, b.addr, aggApp, topicsOf(group), inputKeys, recordsPerSec)
	s.fleet = newFleet(t, dir, "", group, 3, topicsOf(group))
	for i := range s.fleet.cfgs {
		s.fleet.cfgs[i].bootstrap = strings.Join(seedsFrom(nodes, i), ",")
	}
	s.fleet.setApp(aggApp)
	s.fleet.setClose(closeLeave)
	a.scenarioRun = s
	return a
}

// start starts every instance on protocol and waits until the group is
// stable and the output has caught up, then runs steadily for a while.
func (a *scaleOutApp) start(protocol string) {
	a.t.Helper()
	a.must("phase", a.lg.phase("startup"))
	a.fleet.startAll(protocol, 0)
	a.must("instances running", a.fleet.waitRunning(startBound))
	a.must("group", a.stable(protocol, 3))
	a.must("startup backlog", a.caughtUp(startBound))
	a.must("phase", a.lg.phase("steady"))
	time.Sleep(steadyPeriod)
}

// killOwner SIGKILLs the node that owns the group's store partition (as
// its /v1/cluster shows) in phase, then waits until the group is
// described again (the new owner serves it), the output has caught up
// and the group is stable in kind with every instance.
func (a *scaleOutApp) killOwner(phase, kind string) {
	a.t.Helper()
	p := runtime.PartitionFor(a.group, scaleOutParts)
	victim, st := ownerNode(a.t, a.nodes, p)
	a.must("phase", a.lg.phase(phase))
	a.t.Logf("%s: group %s is on partition %d, owned by %s (broker id %d); SIGKILL", phase, a.group, p, st.Node, st.BrokerID)
	killed := time.Now()
	victim.proc.kill()
	a.victim, a.killed = victim, phase
	probe := probeClient(a.t, seedsFrom(a.nodes, 0)...)
	ctx, cancel := context.WithTimeout(context.Background(), startBound)
	defer cancel()
	for err := groupServed(ctx, probe, a.group, kind == "streams"); err != nil; err = groupServed(ctx, probe, a.group, kind == "streams") {
		if ctx.Err() != nil {
			a.t.Fatalf("%s: group %s not described again within %v of the kill: %v", phase, a.group, startBound, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	a.served = time.Since(killed)
	a.must("output after the kill", a.caughtUp(startBound))
	a.resumed = time.Since(killed)
	a.must("group after the kill", a.stable(kind, 3))
	a.must("instances alive after the kill", a.fleet.alive(5*time.Second))
	a.t.Logf("%s: group described again %v after the kill, output caught up %v after it", phase, a.served.Round(time.Millisecond), a.resumed.Round(time.Millisecond))
}

// restartNode starts the killed node again on its address and waits
// until the three nodes split the partitions evenly again (the group's
// partition may move back: a clean hand-over under the running app),
// and the output has caught up.
func (a *scaleOutApp) restartNode() {
	a.t.Helper()
	a.must("phase", a.lg.phase("node-back"))
	v := a.victim
	a.others = append(a.others, v.proc)
	a.must("restart the killed node", restartScaleOutNode(a.top, v))
	a.others = append(a.others, v.proc)
	waitScaleOut(a.t, a.nodes, 2*time.Minute)
	time.Sleep(settleDelay)
	a.must("output after the node is back", a.caughtUp(startBound))
	a.must("instances alive", a.fleet.alive(5*time.Second))
}

// finish ends the load, checks the verifier's verdict (scenarioRun.finish
// fails the test on any wrong, duplicate or missing output) and returns
// the rows and a summary line with the kill phase's processing gap.
func (a *scaleOutApp) finish() ([]phaseRow, string) {
	a.t.Helper()
	a.must("phase", a.lg.phase("end"))
	time.Sleep(5 * time.Second)
	rows, r := a.scenarioRun.finish()
	var gap time.Duration
	worst := ""
	for _, row := range rows {
		if row.phase.Name == a.killed {
			gap, worst = row.phase.maxGap(), row.phase.worst()
		}
	}
	lost := a.fleet.lostTaskLines()
	if len(lost) > 0 {
		a.t.Logf("lost-task log lines:\n%s", strings.Join(lost, "\n"))
	}
	a.must("stop instances", a.fleet.stopAll())
	return rows, fmt.Sprintf("SCALEOUT-APP %s: %v in all; kill -> group described %v, -> output caught up %v; max processing gap of the kill phase %v (%s); in %d out %d, %s; lost-task lines %d",
		a.name, time.Since(a.started).Round(time.Second), a.served.Round(time.Millisecond), a.resumed.Round(time.Millisecond),
		gap, worst, r.In, r.Out, r.verdict(), len(lost))
}

// restartScaleOutNode starts node n again on its address and data
// directory, its process bound to t (ended with t's cleanup).
func restartScaleOutNode(t *testing.T, n *scaleOutNode) error {
	n.proc = startProc(t, "coordhost", n.logDir, coordhostBinary(t), n.args...)
	if _, _, err := n.proc.waitLine("coordhost is serving", 0, time.Minute); err != nil {
		return fmt.Errorf("restarted node: %v\n%s", err, n.proc.tail(60))
	}
	return nil
}
