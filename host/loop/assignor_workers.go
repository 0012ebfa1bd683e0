package loop

// Assignor workers: the loop hands assignor runs and probing-policy checks
// to a small pool of goroutines and takes their results back as core
// inputs.

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"time"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/experiment"
)

// assignorWorkers bounds concurrent assignor runs: 2, and at most
// GOMAXPROCS-1 (at least 1), the rule the listeners apply to decoding
// large frames and the loop to preparing large topologies. An assignor
// run is CPU-bound for as long as the group is large; with a slot per
// core, one group's rebalances (an assignor run and its group's step)
// would take every core while other partitions' heartbeats wait for one.
var assignorWorkers = min(2, max(1, goruntime.GOMAXPROCS(0)-1))

// workerPool is the loop's pool of assignor workers.
type workerPool = assign.Pool

// newWorkerPool is l's pool: its goroutines end with l.ctx and are waited
// for with l.wg.
func newWorkerPool(l *Loop) *workerPool { return assign.NewPool(l.ctx, &l.wg, assignorWorkers) }

// dispatchRun hands run to the worker pool; its result comes back to the
// group's partition as a core input. Called on the partition's worker.
func (l *Loop) dispatchRun(run core.AssignorRun) {
	l.stats.runs.Add(1)
	l.history.note(run.Group, fmt.Sprintf("assignor %q run requested for epoch %d", run.Assignor, run.Epoch))
	timeout := l.assignorTimeout(run.Group)
	reasons, shadows := l.ab.Reasons(run.Group), l.assignorShadows(run.Group)
	l.onWorker(run.Group, func() func(c *core.Coordinator, now int64) core.Output {
		run.BuildInput() // here, off the partition (core.Coordinator.DeferAssignorInputs)
		res, rec, err := l.runAssignor(run, timeout)
		l.ab.Shadow(run, shadows, timeout) // after the primary: never beside it on this run
		var prep *core.PreparedAssignorResult
		if err != nil {
			l.stats.runErrors.Add(1)
			l.log.Warn("assignor run failed: the group keeps its last target", "group", run.Group, "epoch", run.Epoch, "assignor", run.Assignor, "err", err)
		} else {
			// Checked and turned into targets here, off the partition:
			// its steps then only compare and write.
			prep = core.PrepareAssignorResult(run, res)
		}
		return func(c *core.Coordinator, now int64) core.Output {
			if err == nil {
				l.history.note(run.Group, fmt.Sprintf("target assignment for epoch %d computed by %q", run.Epoch, run.Assignor))
			} else {
				l.history.note(run.Group, fmt.Sprintf("assignor %q failed for epoch %d: %v", run.Assignor, run.Epoch, err))
			}
			out := l.step(c, now, core.AssignorResult{Run: run, Result: res, Err: err, Prepared: prep})
			l.ab.Installed(run.Group, rec, reasons, out.Events)
			return out
		}
	})
}

// onWorker runs work in the background on an assignor worker slot, then
// hands the core input it returns to group's partition. Called on the
// partition's worker. The time work took on its slot (not the wait for
// one) counts towards the group's quota (loop_quota.go), as its steps and
// its heartbeats' preparation do: a group whose rebalances keep the
// assignor busy is throttled for that CPU too.
func (l *Loop) onWorker(group string, work func() func(c *core.Coordinator, now int64) core.Output) {
	l.workers.Go(func() func() {
		start := time.Now()
		in := work()
		l.rt.Charge(l.rt.PartitionFor(group), group, time.Since(start))
		return func() { l.inputGroup(group, in) }
	})
}

// runAssignor computes run's target on a worker; timeout bounds the
// plugin call. The history entry of the target comes with it (nil
// without the plugin host or when the run failed).
func (l *Loop) runAssignor(run core.AssignorRun, timeout time.Duration) (core.AssignResult, *experiment.Target, error) {
	if l.d.Assignors == nil {
		return core.ReferenceAssign(run.Input), nil, nil
	}
	req, ts := assign.ToABI(run)
	ctx, cancel := context.WithTimeout(l.ctx, timeout)
	defer cancel()
	start := time.Now()
	resp, fb, err := l.d.Assignors.RunWithFallback(ctx, run.Assignor, req)
	took := time.Since(start)
	l.stats.runNanos.Add(took.Nanoseconds())
	if err == nil {
		l.NoteFallback(run, fb)
	}
	if err == nil && resp == nil {
		err = errors.New("assignor returned no response")
	}
	var res core.AssignResult
	if err == nil {
		res, err = assign.FromABI(ts, resp, len(run.Input.Members))
	}
	if err != nil {
		l.ab.PrimaryFailed(run, err)
		return core.AssignResult{}, nil, err
	}
	return res, l.ab.Primary(run, req, resp, took), nil
}

// assignorTimeout is the group's streams.assignor.timeout.ms: the bound on
// each plugin call made for it on a worker. Called on the loop goroutine.
func (l *Loop) assignorTimeout(group string) time.Duration {
	l.dynMu.RLock()
	defer l.dynMu.RUnlock()
	return time.Duration(l.groupConfig(group).StreamsAssignorTimeoutMs) * time.Millisecond
}

// assignorShadows is the group's streams.assignor.shadow list.
func (l *Loop) assignorShadows(group string) []string {
	l.dynMu.RLock()
	defer l.dynMu.RUnlock()
	return l.groupConfig(group).StreamsAssignorShadow
}
