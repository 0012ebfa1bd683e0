package experiment

// Shadow runs: every assignor run of a group whose streams.assignor.shadow
// names other assignors is also handed to each of them, on the identical
// input, off the critical path. Each shadow assignor has one bounded queue
// and one goroutine; a run that finds the queue full is dropped and
// counted. At most shadowSlots shadow runs compute at once, whatever the
// number of shadows. A shadow that is a wasm plugin runs in the shadow
// process (host/shadowproc, on Linux): its own Go runtime and collector,
// at nice 19, so a collection in coordhost never waits for a shadow's
// wasm call. A native shadow (Go code, which the runtime can preempt)
// runs here on an OS thread of the lowest priority. A shadow's result is
// measured (abi/metrics) and kept for /v1/ab, never handed to core; its
// failures (trap, timeout, invalid output, a panic, the shadow process
// crashing) are counted and logged, nothing else.

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/metrics"
	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/assign"
	"github.com/coordhost/coordhost/host/plugin"
	"github.com/coordhost/coordhost/host/shadowproc"
)

// shadowQueueLen bounds the runs waiting for one shadow assignor.
const shadowQueueLen = 8

// shadowSlots bounds the shadow runs computing at once.
const shadowSlots = 1

// shadowJob is one run handed to a shadow assignor.
type shadowJob struct {
	run     core.AssignorRun
	timeout time.Duration
}

// shadowQueue is one shadow assignor's queue.
type shadowQueue struct {
	name string
	jobs chan shadowJob
}

// shadow hands run to each shadow assignor but the primary, without
// blocking: a full queue drops the run (counted). Called on the worker
// once the primary's run is done.
func (a *Runtime) Shadow(run core.AssignorRun, shadows []string, timeout time.Duration) {
	if a == nil || a.asg == nil {
		return
	}
	for _, name := range shadows {
		if name == run.Assignor {
			continue
		}
		q := a.queue(name)
		select {
		case q.jobs <- shadowJob{run: run, timeout: timeout}:
		default:
			a.count(name, roleShadow, func(s *assignorStats) { s.Dropped++ })
		}
	}
}

// queue returns the named shadow's queue, starting its goroutine the
// first time.
func (a *Runtime) queue(name string) *shadowQueue {
	a.mu.Lock()
	defer a.mu.Unlock()
	q := a.queues[name]
	if q == nil {
		q = &shadowQueue{name: name, jobs: make(chan shadowJob, shadowQueueLen)}
		a.queues[name] = q
		a.wg.Add(1)
		go a.shadowWorker(q)
	}
	return q
}

func (a *Runtime) shadowWorker(q *shadowQueue) {
	defer a.wg.Done()
	if err := shadowThread(); err != nil {
		a.log.Warn("shadow runs keep the normal thread priority", "assignor", q.name, "err", err)
	}
	for {
		select {
		case <-a.ctx.Done():
			return
		case j := <-q.jobs:
			select {
			case a.slots <- struct{}{}:
			case <-a.ctx.Done():
				return
			}
			a.runShadow(q.name, j)
			<-a.slots
		}
	}
}

// runShadow computes and measures one shadow run and records the result.
func (a *Runtime) runShadow(name string, j shadowJob) {
	var (
		rep     metrics.Report
		version string
		err     error
	)
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("shadow run panicked: %v", r)
			}
		}()
		req, _ := assign.ToABI(j.run)
		var (
			resp *abi.AssignResponse
			took time.Duration
		)
		if mod := a.asg.ShadowModule(name); mod != nil && a.shadowProcess() != nil {
			version = mod.Version
			resp, took, err = a.assignInChild(name, mod, req, j.timeout)
		} else {
			ctx, cancel := context.WithTimeout(a.ctx, j.timeout)
			defer cancel()
			start := time.Now()
			resp, version, err = a.asg.RunShadow(ctx, name, req)
			took = time.Since(start)
		}
		if err == nil {
			rep, err = metrics.Measure(req, resp, metrics.Options{ComputeTime: took})
		}
	}()
	if errors.Is(err, shadowproc.ErrCrashed) {
		a.count(name, roleShadow, func(s *assignorStats) { s.Crashes++ })
	} else if err != nil {
		a.log.Debug("shadow assignor run failed (the group is not affected)", "group", j.run.Group, "epoch", j.run.Epoch, "assignor", name, "err", err)
	}
	a.record(j.run.Group, arm{Assignor: name, Role: roleShadow, Version: version, Epoch: j.run.Epoch}, rep, err)
}

// shadowProcess is the shadow process, set up on first use and killed
// when the loop stops; nil where shadow plugins run in this process.
func (a *Runtime) shadowProcess() *shadowproc.Proc {
	a.procOnce.Do(func() {
		if !shadowproc.Supported {
			a.log.Info("shadow plugins run inside coordhost on this system, not in a shadow process: a garbage collection waits for a shadow's wasm call (docs/AB-TESTING.md)", "os", runtime.GOOS)
			return
		}
		a.proc = shadowproc.New(shadowproc.Config{Plugin: a.asg.PluginConfig(), Log: a.log})
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			<-a.ctx.Done()
			a.proc.Close()
		}()
	})
	return a.proc
}

// assignInChild runs one shadow run of the plugin mod in the shadow
// process and checks its output against req as the plugin runtime does.
// It returns the time the call took there.
func (a *Runtime) assignInChild(name string, mod *assign.Module, req *abi.AssignRequest, timeout time.Duration) (*abi.AssignResponse, time.Duration, error) {
	fail := func(kind plugin.Kind, err error) error {
		return fmt.Errorf("plugin %q: assign: %s: %w", name, kind, err)
	}
	in, err := abi.AppendAssignRequest(nil, req)
	if err != nil {
		return nil, 0, fail(plugin.KindRequest, err)
	}
	out, took, err := a.proc.Assign(a.ctx, name, mod.Path, mod.Version, in, timeout)
	if err != nil {
		return nil, took, err
	}
	var resp abi.AssignResponse
	if err := abi.DecodeAssignResponse(out, &resp); err != nil {
		return nil, took, fail(plugin.KindBadOutput, err)
	}
	if err := abi.ValidateAssignment(req, &resp); err != nil {
		return nil, took, fail(plugin.KindInvalidAssignment, err)
	}
	return &resp, took, nil
}
