package core

import (
	"slices"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// cpuMeter sums the process's CPU time (user and system, the garbage
// collector's included) over the measured steps: on a shared machine a
// step's wall time includes the time its thread waited for a core, its
// CPU time does not.
type cpuMeter struct{ at, sum int64 }

func (m *cpuMeter) start() { m.at = processCPU() }
func (m *cpuMeter) stop()  { m.sum += processCPU() - m.at }
func (m *cpuMeter) report(b *testing.B) {
	b.ReportMetric(float64(m.sum)/float64(b.N), "cpu-ns/op")
}

func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// largeGroupMembers is the size of the large-group benchmarks' group: a
// streams group of that many steady members (memFleet's shape, one
// subtopology of one partition per member).
const largeGroupMembers = 2000

// BenchmarkLargeGroupJoin measures the steps of one partition that a
// large group's rebalance costs, each iteration rolled back so the input
// is fixed: "join" is a new member's join, which starts an assignor run
// and builds its input from every member; "result" is that run's result,
// prepared as the host hands it, whose step orders the members its
// slices write; "slice" is the step of a Tick that writes the first part
// of its targets (the longest a group then waits for while the result is
// written); "second-join" is a join of
// another group's second member with a topology of 80,000 entries, whose
// configuration the group's first heartbeat already computed (Kafka drops
// that heartbeat's soft state, so the second one needs it again). Each
// reports the CPU time of its step beside its wall time.
func BenchmarkLargeGroupJoin(b *testing.B) {
	c := memFleet(b, 1, largeGroupMembers, false)
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.RebalanceTimeoutMillis = 1, "mem-0000", "new-member", 30000
	proc := "new-process"
	req.ProcessID = &proc
	req.Topology = parseTopology(0, "sub 0 sources=src")
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	b.Run("join", func(b *testing.B) {
		var cpu cpuMeter
		defer cpu.report(b)
		for i := 0; i < b.N; i++ {
			cpu.start()
			out, err := c.Step(c.now+1, Request{ID: RequestID(i + 1), Body: req})
			cpu.stop()
			if err != nil || len(out.AssignorRuns) != 1 || len(out.AssignorRuns[0].Input.Members) != largeGroupMembers+1 {
				b.Fatalf("the join started no run over every member: %v %+v", err, out.AssignorRuns)
			}
			b.StopTimer()
			c.Rollback() // which asks for the run in flight before the join again
			b.StartTimer()
		}
	})
	out, err := c.Step(c.now+1, Request{ID: 1, Body: req})
	if err != nil || len(out.AssignorRuns) != 1 {
		b.Fatalf("the join started no run: %v %+v", err, out.AssignorRuns)
	}
	c.Commit()
	run := out.AssignorRuns[0]
	res := ReferenceAssign(run.Input)
	// As the host hands it: checked and turned into targets beside the
	// assignor, off the partition.
	result := AssignorResult{Run: run, Result: res, Prepared: PrepareAssignorResult(run, res)}
	b.Run("result", func(b *testing.B) {
		var cpu cpuMeter
		defer cpu.report(b)
		for i := 0; i < b.N; i++ {
			cpu.start()
			out, err := c.Step(c.now+1, result)
			cpu.stop()
			if err != nil || !slices.ContainsFunc(out.Timers, func(t TimerChange) bool { return t.Key == targetSliceKey(run.Group) }) {
				b.Fatalf("the result started no slices: %v %+v", err, out)
			}
			b.StopTimer()
			c.Rollback()
			b.StartTimer()
		}
	})
	b.Run("slice", func(b *testing.B) {
		// Each iteration writes the next part, committed (a rollback
		// drops the parts left, which are soft state); a new fleet when
		// the result is all written.
		var w *Coordinator
		var cpu cpuMeter
		parts := 0
		for i := 0; i < b.N; i++ {
			if w == nil || !w.hasTimer(targetSliceKey(run.Group)) {
				b.StopTimer()
				w = memFleet(b, 1, largeGroupMembers, false)
				out, err := w.Step(w.now+1, Request{ID: 1, Body: req})
				if err != nil || len(out.AssignorRuns) != 1 {
					b.Fatalf("the join started no run: %v", err)
				}
				w.Commit()
				r := out.AssignorRuns[0]
				rr := ReferenceAssign(r.Input)
				if _, err := w.Step(w.now+1, AssignorResult{Run: r, Result: rr, Prepared: PrepareAssignorResult(r, rr)}); err != nil {
					b.Fatal(err)
				}
				w.Commit()
				b.StartTimer()
			}
			cpu.start()
			out, err := w.Step(w.now+1, Tick{Limit: 1})
			cpu.stop()
			if err != nil {
				b.Fatal(err)
			}
			if slices.ContainsFunc(out.Events, func(e Event) bool { return e.Kind == EventTargetPart || e.Kind == EventTargetAssigned }) {
				parts++
			}
			w.Commit()
		}
		if parts == 0 {
			b.Fatal("no tick wrote a part of the target")
		}
		b.ReportMetric(float64(cpu.sum)/float64(parts), "cpu-ns/part")
	})
	huge := hugeTopologyJoin("huge", "m0")
	huge.Topology.Subtopologies = huge.Topology.Subtopologies[:hugeTopologySubs/2] // sources "in", absent here: the group stays not ready
	if out := c.streamsGroupHeartbeat(c.now+1, 1, ClientInfo{}, huge); len(out.Records) == 0 {
		b.Fatal("the first join stored nothing")
	}
	c.Commit()
	second := hugeTopologyJoin("huge", "m1")
	second.Topology = huge.Topology
	p := PrepareStreamsHeartbeat(second)
	b.Run("second-join", func(b *testing.B) {
		g := c.groups["huge"].(*streamsGroup)
		var cpu cpuMeter
		defer cpu.report(b)
		for i := 0; i < b.N; i++ {
			g.soft.configured = nil // as the first heartbeat left it
			cpu.start()
			out := c.streamsGroupHeartbeatPrepared(c.now+1, RequestID(i+1), ClientInfo{}, p)
			cpu.stop()
			checkHugeJoin(b, out)
			c.Rollback()
		}
	})
}
