package core

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/coordhost/coordhost/abi"
	ha "github.com/coordhost/coordhost/plugins/assignor-ha"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// The warm-up scenarios (testdata/scenarios/warmups/) answer assignor runs
// with the real HA assignor of plugins/assignor-ha, called natively through
// this adapter from core's AssignInput/AssignResult to the plugin ABI's
// AssignRequest/AssignResponse — the translation a host performs.

// toABI translates an AssignInput to the plugin ABI (abi/SPEC.md): dense
// task indices over the subtopologies in order, processes sorted.
func toABI(group string, epoch int32, in AssignInput) *abi.AssignRequest {
	req := &abi.AssignRequest{GroupID: group, GroupEpoch: epoch}
	base := make([]int32, len(in.Subtopologies))
	var n int32
	for i, s := range in.Subtopologies {
		base[i] = n
		n += s.NumTasks
		req.Subtopologies = append(req.Subtopologies, abi.Subtopology{ID: s.ID, Partitions: s.NumTasks, Stateful: s.Stateful})
	}
	idx := func(r TaskRef) int32 { return base[r.Subtopology] + r.Partition }
	tasks := func(rs []TaskRef) []int32 {
		out := make([]int32, 0, len(rs))
		for _, r := range rs {
			out = append(out, idx(r))
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return out
	}
	offs := func(os []TaskOffset) []abi.TaskOffset {
		out := make([]abi.TaskOffset, 0, len(os))
		for _, o := range os {
			out = append(out, abi.TaskOffset{Task: idx(o.Task), Offset: o.Offset})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Task < out[j].Task })
		return out
	}
	procs := map[string]int32{}
	for _, m := range in.Members {
		procs[m.ProcessID] = 0
	}
	for p := range procs {
		req.Processes = append(req.Processes, p)
	}
	sort.Strings(req.Processes)
	for i, p := range req.Processes {
		procs[p] = int32(i)
	}
	for _, m := range in.Members {
		am := abi.Member{ID: m.MemberID, InstanceID: m.InstanceID, Process: procs[m.ProcessID], Rack: m.RackID,
			Active: tasks(m.Active), Standby: tasks(m.Standby), Warmup: tasks(m.Warmup),
			TaskOffsets: offs(m.TaskOffsets), TaskEndOffsets: offs(m.TaskEndOffsets)}
		for _, kv := range m.ClientTags {
			am.ClientTags = append(am.ClientTags, abi.KV{Key: kv.Key, Value: kv.Value})
		}
		req.Members = append(req.Members, am)
	}
	c := in.Configs
	req.Configs = abi.Configs{NumStandbyReplicas: c.NumStandbyReplicas, NumWarmupReplicas: c.NumWarmupReplicas,
		AcceptableRecoveryLag: c.AcceptableRecoveryLag, RackAwareAssignmentTags: c.RackAwareAssignmentTags}
	for _, kv := range c.All {
		req.Configs.All = append(req.Configs.All, abi.KV{Key: kv.Key, Value: kv.Value})
	}
	return req
}

// fromABI translates an AssignResponse back to core's AssignResult.
func fromABI(in AssignInput, resp *abi.AssignResponse) AssignResult {
	space := abi.NewTaskSpace(toABI("", 0, AssignInput{Subtopologies: in.Subtopologies}).Subtopologies)
	refs := func(ts []int32) []TaskRef {
		out := []TaskRef{}
		for _, t := range ts {
			s, p := space.Locate(t)
			out = append(out, TaskRef{Subtopology: s, Partition: p})
		}
		return out
	}
	res := AssignResult{NextProbeMs: resp.NextProbeMs}
	for _, m := range resp.Members {
		res.Members = append(res.Members, MemberTasks{Active: refs(m.Active), Standby: refs(m.Standby), Warmup: refs(m.Warmup)})
	}
	return res
}

// haAssign runs the HA assignor natively on run and checks the ABI's
// validity rules on its answer.
func haAssign(run AssignorRun) (AssignResult, *abi.AssignRequest, *abi.AssignResponse, error) {
	req := toABI(run.Group, run.Epoch, run.Input)
	resp, err := ha.Assign(req)
	if err != nil {
		return AssignResult{}, nil, nil, err
	}
	if err := abi.ValidateAssignment(req, resp); err != nil {
		return AssignResult{}, nil, nil, err
	}
	return fromABI(run.Input, resp), req, resp, nil
}

// haSummary renders, per process, what the HA answer gives it, and counts
// cold hand-overs: an active moved to a process that is not caught up on it
// while a caught-up process existed (lags as the run saw them).
func haSummary(req *abi.AssignRequest, resp *abi.AssignResponse) string {
	lags := ha.ComputeLags(req)
	acc := req.Configs.AcceptableRecoveryLag
	total := req.NumTasks()
	owner := make([]int32, total)
	for i := range owner {
		owner[i] = -1
	}
	for _, m := range req.Members {
		for _, t := range m.Active {
			owner[t] = m.Process
		}
	}
	type per struct{ a, s, w []int32 }
	byProc := make([]per, len(req.Processes))
	cold, moved := 0, 0
	for i, ma := range resp.Members {
		p := req.Members[i].Process
		byProc[p].a = append(byProc[p].a, ma.Active...)
		byProc[p].s = append(byProc[p].s, ma.Standby...)
		byProc[p].w = append(byProc[p].w, ma.Warmup...)
		for _, t := range ma.Active {
			if owner[t] == p || !req.Subtopologies[0].Stateful {
				continue
			}
			moved++
			if lags.CaughtUp(p, t, acc) {
				continue
			}
			for q := range req.Processes {
				if lags.CaughtUp(int32(q), t, acc) {
					cold++
					break
				}
			}
		}
	}
	var b strings.Builder
	for p, name := range req.Processes {
		x := byProc[p]
		for _, l := range []*[]int32{&x.a, &x.s, &x.w} {
			sort.Slice(*l, func(i, j int) bool { return (*l)[i] < (*l)[j] })
		}
		fmt.Fprintf(&b, "  %s: active=%v standby=%v warmup=%v\n", name, x.a, x.s, x.w)
	}
	fmt.Fprintf(&b, "  moved-actives=%d cold-handovers=%d next-probe=%d\n", moved, cold, resp.NextProbeMs)
	return b.String()
}

// answerHA answers one run with the HA assignor and renders it.
func (h *harness) answerHA(run AssignorRun) (string, Output) {
	res, req, resp, err := haAssign(run)
	if err != nil {
		return fmt.Sprintf("assignor %s epoch=%d fails: %v\n", run.Group, run.Epoch, err),
			h.c.assignorResult(h.now, run, AssignResult{}, err)
	}
	label := "answers"
	if run.Probe {
		h.probes++
		label = fmt.Sprintf("answers probe #%d", h.probes)
	}
	s := fmt.Sprintf("ha %s epoch=%d %s\n", run.Group, run.Epoch, label) + haSummary(req, resp)
	o := h.c.assignorResult(h.now, run, res, nil)
	if run.Probe {
		s += fmt.Sprintf("probe result: %d records\n", len(o.Records))
	}
	return s, o
}

// warmupCommand handles the warm-up scenario commands; ok false: not one.
//
//	end-offsets [group=g] sub=<id> parts=<n> offset=<v>   host-supplied end offsets
//	placement [group=g]                                 per-process target and lags
//	probe-answer [group=g] [rebalance] [next=<ms>] [builtin]  answer the oldest probe check
func (h *harness) warmupCommand(args map[string]string, cmd string) (string, bool) {
	group := argOr(args, "group", "g")
	switch cmd {
	case "end-offsets":
		n, _ := strconv.Atoi(args["parts"])
		v, _ := strconv.ParseInt(args["offset"], 10, 64)
		var ends []TaskEndOffset
		for p := 0; p < n; p++ {
			ends = append(ends, TaskEndOffset{Task: TaskID{args["sub"], int32(p)}, Offset: v})
		}
		return h.finish(h.c.updateEndOffsets(h.now, group, ends), false) + "ok", true
	case "placement":
		return h.placement(group), true
	case "probe-answer":
		return h.probeAnswer(group, args), true
	}
	return "", false
}

// placement renders the committed target per process with each warm-up's
// lag, plus the probe timer.
func (h *harness) placement(group string) string {
	g, ok := h.c.groups[group].(*streamsGroup)
	if !ok {
		return "no streams group"
	}
	procs := map[string]*[3][]string{}
	acc := h.c.streamsConfig(group).AcceptableRecoveryLag
	for id, t := range g.target {
		m := g.members[id]
		if m == nil {
			continue
		}
		x := procs[m.processID]
		if x == nil {
			x = &[3][]string{}
			procs[m.processID] = x
		}
		for _, tk := range t.active.sorted() {
			x[0] = append(x[0], tk.String())
		}
		for _, tk := range t.standby.sorted() {
			x[1] = append(x[1], tk.String())
		}
		for _, tk := range t.warmup.sorted() {
			lag, known := g.taskLag(m.processID, tk)
			s := tk.String() + "(lag=unknown)"
			if known {
				s = fmt.Sprintf("%s(lag=%d%s)", tk, lag, map[bool]string{true: ",caught-up", false: ""}[lag <= acc])
			}
			x[2] = append(x[2], s)
		}
	}
	names := make([]string, 0, len(procs))
	for p := range procs {
		names = append(names, p)
	}
	sort.Strings(names)
	var b strings.Builder
	fmt.Fprintf(&b, "group epoch=%d assignment epoch=%d state=%s\n", g.groupEpoch, g.assignmentEpoch, g.state)
	for _, p := range names {
		x := procs[p]
		for i := range x {
			sort.Strings(x[i])
		}
		fmt.Fprintf(&b, "%s: actives=%d %v standby=%v warmup=%v\n", p, len(x[0]), x[0], x[1], x[2])
	}
	if tags := h.c.streamsConfig(group).RackAwareAssignmentTags; len(tags) > 0 {
		fmt.Fprintf(&b, "standbys sharing a tag value with their active: %d\n", sameTagStandbys(g, tags))
	}
	probe := "none"
	for _, k := range h.c.TimerKeys() {
		if strings.HasPrefix(k, probeKey(group).String()+"@") {
			probe = k
		}
	}
	fmt.Fprintf(&b, "probe timer %s, probes answered %d", probe, h.probes)
	return b.String()
}

// heldStateOffsets reports offset v for every standby and warm-up task the
// client holds: "state-offset=v" on hb (a restoring client's report).
func heldStateOffsets(cl *simClient, v int64) []kmsg.TaskOffset {
	out := []kmsg.TaskOffset{}
	if cl == nil {
		return out
	}
	for _, l := range [][]kmsg.TaskIDs{cl.standby, cl.warmup} {
		for _, id := range l {
			for _, p := range id.Partitions {
				out = append(out, kmsg.TaskOffset{SubtopologyID: id.SubtopologyID, Partition: p, Offset: v})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].SubtopologyID != out[j].SubtopologyID {
			return out[i].SubtopologyID < out[j].SubtopologyID
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// maxLag is "max" in scenario configs: acceptable.recovery.lag = MaxInt64.
func parseLag(s string) int64 {
	if s == "max" {
		return math.MaxInt64
	}
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// sameTagStandbys counts target standbys whose process shares a value of
// one of the rack tags with the process of the task's active.
func sameTagStandbys(g *streamsGroup, tags []string) int {
	tagOf := func(m *streamsMember, k string) string {
		for _, kv := range m.clientTags {
			if kv.Key == k {
				return kv.Value
			}
		}
		return ""
	}
	activeOn := map[TaskID]*streamsMember{}
	for id, t := range g.target {
		for tk := range t.active {
			activeOn[tk] = g.members[id]
		}
	}
	n := 0
	for id, t := range g.target {
		for tk := range t.standby {
			a, m := activeOn[tk], g.members[id]
			if a == nil || m == nil {
				continue
			}
			for _, k := range tags {
				if tagOf(a, k) == tagOf(m, k) {
					n++
					break
				}
			}
		}
	}
	return n
}
