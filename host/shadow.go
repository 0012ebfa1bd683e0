package host

// Shadow runs: every assignor run of a group whose streams.assignor.shadow
// names other assignors is also handed to each of them, on the identical
// input, off the critical path. Each shadow assignor has one bounded queue
// and one goroutine; a run that finds the queue full is dropped and
// counted. At most shadowSlots shadow runs compute at once, whatever the
// number of shadows, each on an OS thread of the lowest priority (on
// Linux), so shadows take at most that much CPU, and only CPU the primary
// and the event loop leave. A shadow's result is measured (abi/metrics) and kept for
// /v1/ab, never handed to core; its failures (trap, timeout, invalid
// output, a panic) are counted and logged at DEBUG, nothing else.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/metrics"
	"github.com/coordhost/coordhost/core"
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
func (a *abRuntime) shadow(run core.AssignorRun, shadows []string, timeout time.Duration) {
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
func (a *abRuntime) queue(name string) *shadowQueue {
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

func (a *abRuntime) shadowWorker(q *shadowQueue) {
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
func (a *abRuntime) runShadow(name string, j shadowJob) {
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
		req, _ := toABI(j.run)
		ctx, cancel := context.WithTimeout(a.ctx, j.timeout)
		defer cancel()
		start := time.Now()
		var resp *abi.AssignResponse
		resp, version, err = a.asg.RunShadow(ctx, name, req)
		if err == nil {
			rep, err = metrics.Measure(req, resp, metrics.Options{ComputeTime: time.Since(start)})
		}
	}()
	if err != nil {
		a.log.Debug("shadow assignor run failed (the group is not affected)", "group", j.run.Group, "epoch", j.run.Epoch, "assignor", name, "err", err)
	}
	a.record(j.run.Group, arm{Assignor: name, Role: roleShadow, Version: version, Epoch: j.run.Epoch}, rep, err)
}

// RunShadow computes one assignment with the named assignor for
// comparison only: no fallback answers when its plugin fails, and the
// registry's run counters (/v1/plugins) are not touched. It returns the
// assignor's version with the result.
func (a *Assignors) RunShadow(ctx context.Context, name string, req *abi.AssignRequest) (*abi.AssignResponse, string, error) {
	as := a.get(name)
	if as == nil {
		return nil, "", fmt.Errorf("assignor %q is not configured (have %v)", name, a.Names())
	}
	var (
		resp *abi.AssignResponse
		err  error
	)
	switch {
	case as.plugin != nil:
		resp, err = as.plugin.Assign(ctx, req)
	case as.native != nil:
		resp, err = runNative(as, "shadow assign", as.native, req)
	default:
		err = fmt.Errorf("assignor %q has neither a plugin nor a native build", name)
	}
	if err == nil {
		err = abi.ValidateAssignment(req, resp)
	}
	return resp, as.versionString(), err
}

// noteVersion records the hash of the module at path as the assignor's
// version (read at load and reload).
func (as *assignor) noteVersion(path string) {
	v := "wasm"
	if f, err := os.Open(path); err == nil {
		h := sha256.New()
		if _, err := io.Copy(h, f); err == nil {
			v = "wasm sha256:" + hex.EncodeToString(h.Sum(nil))[:16]
		}
		_ = f.Close()
	}
	as.version.Store(&v)
}

// versionString is the assignor's version: its module's hash, or
// "native" for a native build.
func (as *assignor) versionString() string {
	if as.plugin == nil {
		return "native"
	}
	if v := as.version.Load(); v != nil {
		return *v
	}
	return "wasm"
}

// assignorVersion is the named assignor's version ("" when unknown).
func (a *Assignors) assignorVersion(name string) string {
	if as := a.get(name); as != nil {
		return as.versionString()
	}
	return ""
}
