package loop

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/coordhost/coordhost/core"
	"github.com/coordhost/coordhost/host/admin"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/plugin"
)

// probeStats count the probing-policy checks the loop ran for core.
type probeStats struct {
	checks, failures atomic.Int64
}

func (l *Loop) registerProbeMetrics(m *admin.Metrics) {
	m.Gauge("coordhost_probe_checks_total", "Probing-policy checks core asked for (a probing-policy plugin consulted).",
		func() float64 { return float64(l.probes.checks.Load()) })
	m.Gauge("coordhost_probe_failures_total", "Probing-policy checks that failed; the built-in interval policy decided them.",
		func() float64 { return float64(l.probes.failures.Load()) })
	m.Gauge("coordhost_end_offset_fetches_total", "Changelog end-offset fetches from the data plane (ListOffsets).",
		func() float64 { return float64(l.ends.fetches.Load()) })
	m.Gauge("coordhost_end_offset_fetch_failures_total", "Changelog end-offset fetches that failed or left partitions unknown.",
		func() float64 { return float64(l.ends.failures.Load()) })
}

// dispatchProbeCheck runs the group's probing policy on the worker pool;
// its answer comes back to core through ProbeResult. Called on the loop
// goroutine.
func (l *Loop) dispatchProbeCheck(chk core.ProbeCheck) {
	l.probes.checks.Add(1)
	timeout := l.assignorTimeout(chk.Group)
	l.onWorker(chk.Group, func() func(c *core.Coordinator, now int64) core.Output {
		dec := l.runProbe(chk, timeout)
		return func(c *core.Coordinator, now int64) core.Output {
			l.history.note(chk.Group, fmt.Sprintf("probing policy %q (%s check, epoch %d): rebalance=%v next=%dms builtin=%v",
				chk.Policy, chk.Reason, chk.Epoch, dec.Rebalance, dec.NextProbeMs, dec.Builtin))
			return l.step(c, now, core.ProbeResult{Check: chk, Decision: dec})
		}
	})
}

// runProbe asks the policy, timeout bounding the plugin call; any failure
// makes core's built-in interval policy decide this check.
func (l *Loop) runProbe(chk core.ProbeCheck, timeout time.Duration) core.ProbeDecision {
	if l.d.Assignors == nil {
		return core.ProbeDecision{Builtin: true}
	}
	ctx, cancel := context.WithTimeout(l.ctx, timeout)
	defer cancel()
	dec, err := l.d.Assignors.Check(ctx, chk, l.nowMs())
	if err != nil {
		l.probes.failures.Add(1)
		l.log.Warn("probing policy failed: the built-in interval policy decides this check",
			"group", chk.Group, "policy", chk.Policy, "reason", chk.Reason.String(), "kind", plugin.KindOf(err), "err", err)
	}
	return dec
}

// probingPolicy resolves g's streams.probing.policy for core: the module
// core asks, or "" for the built-in policy (no assignors: built-in).
func (l *Loop) probingPolicy(g config.Group) *string {
	p := ""
	if l.d.Assignors != nil {
		p = l.d.Assignors.ProbingPolicy(g.StreamsProbingPolicy, g.StreamsAssignorName)
	}
	return &p
}
