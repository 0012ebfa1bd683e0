package core

import (
	"fmt"
	"strconv"
)

// probeAnswer answers the oldest outstanding probe check of group, as a
// host running the group's probing-policy plugin would: args rebalance,
// next=<ms> (default -1), builtin (the policy failed).
func (h *harness) probeAnswer(group string, args map[string]string) string {
	for i, c := range h.checks {
		if c.Group != group {
			continue
		}
		h.checks = append(h.checks[:i:i], h.checks[i+1:]...)
		d := ProbeDecision{NextProbeMs: -1}
		_, d.Rebalance = args["rebalance"]
		_, d.Builtin = args["builtin"]
		if v, ok := args["next"]; ok {
			d.NextProbeMs, _ = strconv.ParseInt(v, 10, 64)
		}
		head := fmt.Sprintf("policy answers check seq=%d (%s): rebalance=%v next=%d builtin=%v\n", c.Seq, c.Reason, d.Rebalance, d.NextProbeMs, d.Builtin)
		return head + h.finish(h.c.applyProbeResult(h.now, c, d), false)
	}
	return "no probe check outstanding\n"
}
