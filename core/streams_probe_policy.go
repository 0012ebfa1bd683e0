package core

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"sort"
)

// Probing-policy plugins (docs/WARMUPS.md §2.5). By default core decides
// when a probe is due with its built-in rule (§2.2). A group whose
// ProbingPolicy names a policy asks the host instead: wherever the built-in
// rule would decide, core emits a ProbeCheck, the host runs the policy
// (the ABI's coordhost_probe) and hands the answer back through
// ProbeResult. If the policy is unavailable or fails, the host answers
// Builtin and core applies its built-in rule to that check.

// ProbeReason says why core asks the probing policy.
type ProbeReason uint8

// Why a probe check was requested.
const (
	ProbeReasonTimer  ProbeReason = 1 // the probe timer fired (the time the policy asked for)
	ProbeReasonInput  ProbeReason = 2 // the assignor input changed (offsets, ownership) while Stable with warm-ups
	ProbeReasonTarget ProbeReason = 3 // a new target assignment was computed (or the group was loaded)
)

func (r ProbeReason) String() string {
	switch r {
	case ProbeReasonTimer:
		return "timer"
	case ProbeReasonInput:
		return "input"
	case ProbeReasonTarget:
		return "target"
	}
	return "unknown"
}

// minProbeCheckMs is the smallest delay core accepts from a policy's
// next_probe_ms, so a policy answering 0 cannot make the host call it in a
// busy loop.
const minProbeCheckMs = 100

// ProbeCheck asks the host to run the group's probing policy. Input is the
// group as the assignor would see it now; Target is the current target
// assignment, one entry per Input.Members.
type ProbeCheck struct {
	Group  string
	Epoch  int32  // the group epoch (= assignment epoch) the check is for
	Seq    uint64 // identifies the check; only the latest one's answer counts
	Policy string // the group's streams.probing.policy
	Reason ProbeReason
	// LastAssignMs is when the current target was computed (epoch ms).
	LastAssignMs int64
	Input        AssignInput
	Target       []MemberTasks
}

// ProbeDecision is a probing policy's answer (the ABI's ProbeResponse).
type ProbeDecision struct {
	// Rebalance asks for a probe (an assignor run at the current epoch) now.
	Rebalance bool
	// NextProbeMs: >= 0 asks to be consulted again after that many ms
	// (at least 100); < 0 uses the built-in schedule (the probing interval
	// while the target holds warm-ups, else none).
	NextProbeMs int64
	// Builtin: the policy could not answer (not loaded, no probe export,
	// failed); core applies its built-in rule to this check.
	Builtin bool
}

// policyProbing reports whether a probing-policy plugin decides for g.
func (c *Coordinator) policyProbing(g *streamsGroup) bool {
	return c.streamsConfig(g.id).ProbingPolicy != ""
}

// requestProbeCheck emits a ProbeCheck unless one is in flight or no probe
// could start now. An input check is skipped when the assignor input is
// the one the last check saw.
func (c *Coordinator) requestProbeCheck(g *streamsGroup, reason ProbeReason) {
	if g.soft.probeCheck != 0 || !c.probeAllowed(g) {
		return
	}
	in := c.assignInput(g)
	digest := inputDigest(in)
	if reason == ProbeReasonInput && digest == g.soft.lastCheckDigest {
		return
	}
	g.soft.lastCheckDigest = digest
	g.soft.probeSeq++
	g.soft.probeCheck = g.soft.probeSeq
	c.out.ProbeChecks = append(c.out.ProbeChecks, ProbeCheck{Group: g.id, Epoch: g.groupEpoch, Seq: g.soft.probeSeq,
		Policy: c.streamsConfig(g.id).ProbingPolicy, Reason: reason, LastAssignMs: g.assignmentTimestamp,
		Input: in, Target: g.targetOf(in)})
}

// probeCheckAfterTarget consults the policy about a freshly computed
// target; a check in flight for the previous target is forgotten.
func (c *Coordinator) probeCheckAfterTarget(g *streamsGroup) {
	if c.policyProbing(g) {
		g.soft.probeCheck = 0
		c.requestProbeCheck(g, ProbeReasonTarget)
	}
}

// applyProbeResult hands back the probing policy's answer to check. It is
// ignored when a newer check was requested or the group epoch moved on
// (the new target gets its own check). Otherwise the probe timer is armed
// as the policy asked, and a probe starts if the policy asked for one and
// its input differs from the last probe that changed nothing (the assignor
// is deterministic, abi/SPEC.md §7, so that probe would change nothing
// again).
func (c *Coordinator) applyProbeResult(now int64, check ProbeCheck, d ProbeDecision) Output {
	c.begin(now)
	g, ok := c.groups[check.Group].(*streamsGroup)
	if !ok || g.soft.probeCheck != check.Seq {
		return c.end()
	}
	g.soft.probeCheck = 0
	if check.Epoch != g.groupEpoch || g.groupEpoch != g.assignmentEpoch {
		return c.end()
	}
	if d.Builtin {
		c.builtinProbeRule(g, check.Reason)
		return c.end()
	}
	if d.NextProbeMs >= 0 {
		// Clamped so a huge answer cannot overflow into the past.
		next := min(max(d.NextProbeMs, minProbeCheckMs), math.MaxInt64-max(c.now, 0))
		c.setTimer(timer{key: probeKey(g.id), deadline: c.now + next, kind: timerStreamsProbe, group: g.id})
	} else {
		c.armProbe(g, 0)
	}
	if d.Rebalance && c.probeAllowed(g) && inputDigest(c.assignInput(g)) != g.soft.noopProbeDigest {
		c.startProbe(g)
	}
	return c.end()
}

// builtinProbeRule applies core's own rule to a check the policy could not
// answer: a timer check probes, an input check probes early if a warm-up
// newly caught up, and a target check keeps the schedule armProbe set.
func (c *Coordinator) builtinProbeRule(g *streamsGroup, reason ProbeReason) {
	switch reason {
	case ProbeReasonTimer:
		if c.probeAllowed(g) {
			c.startProbe(g)
		}
	case ProbeReasonInput:
		c.builtinEarlyProbe(g)
	}
}

// targetOf lists g's target per member of in, as the assignor's TaskRefs.
func (g *streamsGroup) targetOf(in AssignInput) []MemberTasks {
	index := make(map[string]int32, len(in.Subtopologies))
	for i, s := range in.Subtopologies {
		index[s.ID] = int32(i)
	}
	refs := func(s taskSet) []TaskRef {
		out := []TaskRef{}
		for _, t := range s.sorted() {
			if i, ok := index[t.Subtopology]; ok && t.Partition >= 0 && t.Partition < in.Subtopologies[i].NumTasks {
				out = append(out, TaskRef{Subtopology: i, Partition: t.Partition})
			}
		}
		return out
	}
	out := make([]MemberTasks, len(in.Members))
	for i, m := range in.Members {
		if t, ok := g.target[m.MemberID]; ok {
			out[i] = MemberTasks{Active: refs(t.active), Standby: refs(t.standby), Warmup: refs(t.warmup)}
		} else {
			out[i] = MemberTasks{Active: []TaskRef{}, Standby: []TaskRef{}, Warmup: []TaskRef{}}
		}
	}
	return out
}

// inputDigest is a 64-bit FNV-1a digest of everything an assignor sees.
func inputDigest(in AssignInput) uint64 {
	h := fnv.New64a()
	var b [8]byte
	num := func(v int64) {
		binary.LittleEndian.PutUint64(b[:], uint64(v))
		h.Write(b[:])
	}
	str := func(s string) {
		num(int64(len(s)))
		h.Write([]byte(s))
	}
	refs := func(rs []TaskRef) {
		num(int64(len(rs)))
		for _, r := range rs {
			num(int64(r.Subtopology)<<32 | int64(uint32(r.Partition)))
		}
	}
	offs := func(os []TaskOffset) {
		num(int64(len(os)))
		for _, o := range os {
			num(int64(o.Task.Subtopology)<<32 | int64(uint32(o.Task.Partition)))
			num(o.Offset)
		}
	}
	for _, s := range in.Subtopologies {
		str(s.ID)
		num(int64(s.NumTasks))
	}
	for _, m := range in.Members {
		str(m.MemberID)
		str(m.ProcessID)
		refs(m.Active)
		refs(m.Standby)
		refs(m.Warmup)
		offs(m.TaskOffsets)
		offs(m.TaskEndOffsets)
	}
	cf := in.Configs
	num(int64(cf.NumStandbyReplicas))
	num(int64(cf.NumWarmupReplicas))
	num(cf.AcceptableRecoveryLag)
	num(cf.ProbingIntervalMs)
	return h.Sum64()
}

// TaskChangelog is one changelog partition of a stateful task: the host
// fetches its end offset for members that report only offset sums.
type TaskChangelog struct {
	Task      TaskID
	Topic     string
	Partition int32
}

// StreamsChangelogs lists, per streams group with members and a ready
// topology, the changelog partitions of its stateful tasks: task (s, p)
// has partition p of each changelog topic of subtopology s. Sorted by
// task, then topic.
func (c *Coordinator) StreamsChangelogs() map[string][]TaskChangelog {
	out := map[string][]TaskChangelog{}
	for _, id := range c.groupIDs() {
		g, ok := c.groups[id].(*streamsGroup)
		if !ok || len(g.members) == 0 || !g.soft.configured.ready() {
			continue
		}
		var list []TaskChangelog
		for _, s := range g.soft.configured.subtopologies {
			topics := make([]string, 0, len(s.changelogs))
			for t := range s.changelogs {
				topics = append(topics, t)
			}
			sort.Strings(topics)
			for p := int32(0); p < s.numTasks; p++ {
				for _, t := range topics {
					list = append(list, TaskChangelog{Task: TaskID{s.id, p}, Topic: t, Partition: p})
				}
			}
		}
		if len(list) > 0 {
			out[id] = list
		}
	}
	return out
}

// KnownEndOffsets returns a streams group's known task end offsets (the
// largest reported by a member or supplied by the host); a task missing
// from the map has an unknown end offset.
func (c *Coordinator) KnownEndOffsets(group string) map[TaskID]int64 {
	if g, ok := c.groups[group].(*streamsGroup); ok {
		return g.knownEndOffsets()
	}
	return nil
}
