package core

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// harness drives a Coordinator the way a host does: it commits every
// command's records as one batch (or rolls them back to simulate a failed
// append), keeps the durable log, answers assignor runs on request, and
// simulates well-behaved clients that report what they were last given.
type harness struct {
	tb         testing.TB
	c          *Coordinator
	cfg        Config
	now        int64
	log        []records.Record
	runs       []AssignorRun
	topologies map[string]*kmsg.StreamsGroupHeartbeatRequestTopology
	clients    map[string]*simClient // by member id
	nextReq    RequestID
	reqMember  map[RequestID]string
	lastTopics []TopicMetadata
	responses  []kmsg.Response // every committed response, in order
	probes     int             // probing runs answered (warm-up scenarios)
	checks     []ProbeCheck    // probe checks not answered yet (probing-policy scenarios)
}

// simClient is what a client believes: its epoch and the tasks it owns.
type simClient struct {
	epoch                   int32
	active, standby, warmup []kmsg.TaskIDs
	endpointEpoch           int32
}

func newHarness(tb testing.TB, cfg Config) *harness {
	c, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return &harness{tb: tb, c: c, cfg: cfg, topologies: map[string]*kmsg.StreamsGroupHeartbeatRequestTopology{},
		clients: map[string]*simClient{}, reqMember: map[RequestID]string{}}
}

// finish commits (or rolls back) an Output and renders it.
func (h *harness) finish(o Output, fail bool) string {
	if err := eventsExplain(o); err != nil {
		h.tb.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(fmtEffects(o, true))
	h.runs = append(h.runs, o.AssignorRuns...)
	if fail {
		ro := h.c.Rollback()
		b.WriteString("append failed: rolled back\n")
		for _, r := range o.Responses {
			fmt.Fprintf(&b, "response %s: failed (NOT_COORDINATOR)\n", h.reqMember[r.Request])
		}
		for _, id := range ro.Failed {
			fmt.Fprintf(&b, "parked %s: failed (NOT_COORDINATOR)\n", h.reqMember[id])
		}
		b.WriteString(fmtEffects(Output{AssignorRuns: ro.AssignorRuns}, false))
		h.runs = append(h.runs, ro.AssignorRuns...)
		return b.String()
	}
	h.c.Commit()
	h.checks = append(h.checks, o.ProbeChecks...) // a host dispatches them after the append
	h.log = append(h.log, o.Records...)
	for _, r := range o.Responses {
		member := h.reqMember[r.Request]
		h.responses = append(h.responses, r.Msg)
		fmt.Fprintf(&b, "%s\n", fmtResponse("response "+member, r.Msg))
		h.observe(member, r.Msg)
	}
	return b.String()
}

// observe updates the simulated client from a released response.
func (h *harness) observe(member string, msg kmsg.Response) {
	r, ok := msg.(*kmsg.StreamsGroupHeartbeatResponse)
	if !ok {
		return
	}
	cl := h.clients[member]
	if cl == nil {
		cl = &simClient{}
		h.clients[member] = cl
	}
	if r.ErrorCode != 0 {
		if r.ErrorCode == 110 || r.ErrorCode == 25 { // fenced / unknown: drop everything, rejoin
			*cl = simClient{}
		}
		return
	}
	cl.epoch = r.MemberEpoch
	if r.ActiveTasks != nil {
		cl.active, cl.standby, cl.warmup = r.ActiveTasks, r.StandbyTasks, r.WarmupTasks
	}
	if r.PartitionsByUserEndpoint != nil {
		cl.endpointEpoch = r.EndpointInformationEpoch
	}
	if r.MemberEpoch < 0 {
		delete(h.clients, member)
	}
}

func parseTasks(s string) []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	if s == "" {
		return out
	}
	for _, t := range strings.Split(s, ",") {
		i := strings.LastIndexByte(t, '_')
		p, _ := strconv.Atoi(t[i+1:])
		sub := t[:i]
		if len(out) > 0 && out[len(out)-1].SubtopologyID == sub {
			out[len(out)-1].Partitions = append(out[len(out)-1].Partitions, int32(p))
		} else {
			out = append(out, kmsg.TaskIDs{SubtopologyID: sub, Partitions: []int32{int32(p)}})
		}
	}
	return out
}

func parseOffsets(s string) []kmsg.TaskOffset {
	out := []kmsg.TaskOffset{}
	for _, t := range strings.Split(s, ",") {
		task, off, _ := strings.Cut(t, ":")
		i := strings.LastIndexByte(task, '_')
		p, _ := strconv.Atoi(task[i+1:])
		o, _ := strconv.ParseInt(off, 10, 64)
		out = append(out, kmsg.TaskOffset{SubtopologyID: task[:i], Partition: int32(p), Offset: o})
	}
	return out
}

// heartbeat sends one request built from args (see testdata/README.md).
func (h *harness) heartbeat(args map[string]string) string {
	member := args["member"]
	cl := h.clients[member]
	if cl == nil {
		cl = &simClient{}
	}
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	if v, ok := args["v"]; ok {
		n, _ := strconv.Atoi(v)
		req.Version = int16(n)
	}
	req.Group = argOr(args, "group", "g")
	req.MemberID = member
	req.MemberEpoch = cl.epoch
	if v, ok := args["epoch"]; ok {
		n, _ := strconv.Atoi(v)
		req.MemberEpoch = int32(n)
	}
	req.EndpointInformationEpoch = cl.endpointEpoch
	if v, ok := args["instance"]; ok {
		req.InstanceID = &v
	}
	if v, ok := args["rack"]; ok {
		req.RackID = &v
	}
	if req.MemberEpoch == 0 {
		req.RebalanceTimeoutMillis = 30000
		proc := argOr(args, "process", "p-"+member)
		req.ProcessID = &proc
		if name := argOr(args, "topology", "default"); name != "none" {
			req.Topology = h.topologies[name]
			if req.Topology == nil {
				h.tb.Fatalf("unknown topology %q", name)
			}
		}
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	} else if req.MemberEpoch > 0 && args["owned"] != "none" {
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = nonNil(cl.active), nonNil(cl.standby), nonNil(cl.warmup)
	}
	if v, ok := args["rto"]; ok {
		n, _ := strconv.Atoi(v)
		req.RebalanceTimeoutMillis = int32(n)
	}
	if v, ok := args["process"]; ok && req.MemberEpoch != 0 {
		req.ProcessID = &v
	}
	_, a := args["active"]
	_, s := args["standby"]
	_, w := args["warmup"]
	if a || s || w {
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = parseTasks(args["active"]), parseTasks(args["standby"]), parseTasks(args["warmup"])
	}
	if _, ok := args["partial-tasks"]; ok {
		req.StandbyTasks = nil
	}
	if v, ok := args["endpoint"]; ok {
		host, port, _ := strings.Cut(v, ":")
		p, _ := strconv.Atoi(port)
		req.UserEndpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: host, Port: uint16(p)}
	}
	if v, ok := args["offsets"]; ok {
		req.TaskOffsets = parseOffsets(v)
	}
	if v, ok := args["end-offsets"]; ok {
		req.TaskEndOffsets = parseOffsets(v)
	}
	if v, ok := args["state-offset"]; ok {
		n, _ := strconv.ParseInt(v, 10, 64)
		req.TaskOffsets = heldStateOffsets(h.clients[member], n)
	}
	if v, ok := args["tags"]; ok {
		req.ClientTags = []kmsg.StreamsGroupHeartbeatRequestClientTag{}
		for _, kv := range strings.Split(v, ",") {
			k, val, _ := strings.Cut(kv, ":")
			req.ClientTags = append(req.ClientTags, kmsg.StreamsGroupHeartbeatRequestClientTag{Key: k, Value: val})
		}
	}
	if v, ok := args["member-id"]; ok { // send a different member id than the client name
		req.MemberID = v
	}
	_, req.ShutdownApplication = args["shutdown"]
	if _, ok := args["raw"]; ok { // let the scenario break request rules
		h.applyRaw(req, args)
	}
	h.nextReq++
	h.reqMember[h.nextReq] = member
	o := h.c.streamsGroupHeartbeat(h.now, h.nextReq, ClientInfo{ClientID: "client-" + member, ClientHost: "/127.0.0.1"}, req)
	_, fail := args["fail"]
	return h.finish(o, fail)
}

// applyRaw lets scenarios send requests a real client would not.
func (h *harness) applyRaw(req *kmsg.StreamsGroupHeartbeatRequest, args map[string]string) {
	if v, ok := args["raw-topology"]; ok && v == "null" {
		req.Topology = nil
	}
	if _, ok := args["raw-rto-unset"]; ok {
		req.RebalanceTimeoutMillis = -1
	}
	if _, ok := args["raw-empty-group"]; ok {
		req.Group = ""
	}
	if v, ok := args["raw-instance"]; ok {
		req.InstanceID = &v
	}
	if v, ok := args["raw-rack"]; ok {
		req.RackID = &v
	}
	if _, ok := args["raw-regex"]; ok && req.Topology != nil {
		t := *req.Topology
		t.Subtopologies = append([]kmsg.StreamsGroupHeartbeatRequestTopologySubtopology(nil), t.Subtopologies...)
		t.Subtopologies[0].SourceTopicRegex = []string{"in-.*"}
		req.Topology = &t
	}
	if v, ok := args["raw-with-topology"]; ok {
		req.Topology = h.topologies[v]
	}
	if _, ok := args["raw-dup-offsets"]; ok {
		req.TaskOffsets = append(parseOffsets("0_0:1"), parseOffsets("0_0:2")...)
	}
}

func argOr(args map[string]string, k, def string) string {
	if v, ok := args[k]; ok {
		return v
	}
	return def
}

// answerRuns answers outstanding assignor runs of group with mode "ref"
// (ReferenceAssign), "error", or "stale" (answers the oldest run only).
func (h *harness) answerRuns(group, mode string, fail bool) string {
	var b strings.Builder
	var keep []AssignorRun
	answered := false
	pending := h.runs
	h.runs = nil
	for _, run := range pending {
		if run.Group != group || (answered && mode == "one") {
			keep = append(keep, run)
			continue
		}
		answered = true
		var o Output
		switch mode {
		case "ha":
			var text string
			text, o = h.answerHA(run)
			b.WriteString(text)
		case "error":
			fmt.Fprintf(&b, "assignor %s epoch=%d fails\n", group, run.Epoch)
			o = h.c.assignorResult(h.now, run, AssignResult{}, fmt.Errorf("plugin trapped"))
		default:
			res := ReferenceAssign(run.Input)
			fmt.Fprintf(&b, "assignor %s epoch=%d answers\n", group, run.Epoch)
			o = h.c.assignorResult(h.now, run, res, nil)
		}
		b.WriteString(h.finish(o, fail))
	}
	h.runs = append(keep, h.runs...)
	if !answered {
		b.WriteString("no assignor run outstanding\n")
	}
	return b.String()
}

// replayCheck rebuilds a fresh Coordinator from the durable log (compacted,
// as the store replays it) and compares its canonical dump with the live
// one.
func (h *harness) replayCheck() string {
	fresh, err := replayLog(h.cfg, h.log)
	if err != nil {
		return err.Error()
	}
	live, replayed := h.c.Dump(), fresh.Dump()
	if live != replayed {
		return "REPLAY MISMATCH\nlive:\n" + live + "replayed:\n" + replayed
	}
	return fmt.Sprintf("replay of %d records matches live state", len(h.log))
}

// parseTopology reads lines "sub <id> [sources=a,b] [changelogs=c]
// [sinks=r] [repartition=r:0,s:3] [copartition=0,1/0]".
func parseTopology(epoch int32, input string) *kmsg.StreamsGroupHeartbeatRequestTopology {
	t := &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: epoch}
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "sub" {
			continue
		}
		s := kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{SubtopologyID: f[1], SourceTopics: []string{},
			SourceTopicRegex: []string{}, RepartitionSinkTopics: []string{}}
		for _, kv := range f[2:] {
			k, v, _ := strings.Cut(kv, "=")
			list := strings.Split(v, ",")
			switch k {
			case "sources":
				s.SourceTopics = list
			case "sinks":
				s.RepartitionSinkTopics = list
			case "changelogs":
				for _, n := range list {
					name, parts, _ := strings.Cut(n, ":")
					p, _ := strconv.Atoi(parts)
					s.StateChangelogTopics = append(s.StateChangelogTopics, kmsg.TopicInfo{Topic: name, NumPartitions: int32(p)})
				}
			case "repartition":
				for _, n := range list {
					name, parts, _ := strings.Cut(n, ":")
					p, _ := strconv.Atoi(parts)
					s.RepartitionSourceTopics = append(s.RepartitionSourceTopics, kmsg.TopicInfo{Topic: name, NumPartitions: int32(p)})
				}
			case "copartition":
				src, rep, _ := strings.Cut(v, "/")
				g := kmsg.StreamsGroupHeartbeatRequestTopologySubtopologyCopartitionGroup{}
				for _, x := range strings.Split(src, ",") {
					if x != "" {
						n, _ := strconv.Atoi(x)
						g.SourceTopics = append(g.SourceTopics, int16(n))
					}
				}
				for _, x := range strings.Split(rep, ",") {
					if x != "" {
						n, _ := strconv.Atoi(x)
						g.RepartitionSourceTopics = append(g.RepartitionSourceTopics, int16(n))
					}
				}
				s.CopartitionGroups = append(s.CopartitionGroups, g)
			}
		}
		t.Subtopologies = append(t.Subtopologies, s)
	}
	return t
}

func parseTopics(input string) []TopicMetadata {
	var out []TopicMetadata
	for _, line := range strings.Split(strings.TrimSpace(input), "\n") {
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		n, _ := strconv.Atoi(f[1])
		var id [16]byte
		copy(id[:], f[0])
		out = append(out, TopicMetadata{Name: f[0], ID: id, Partitions: int32(n)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// describe renders a StreamsGroupDescribe of one group.
func (h *harness) describe(group string) string {
	resp := h.c.streamsGroupDescribe(&kmsg.StreamsGroupDescribeRequest{Version: 1, Groups: []string{group}})
	var b strings.Builder
	for _, g := range resp.Groups {
		if g.ErrorCode != 0 {
			fmt.Fprintf(&b, "group %s: error=%s %q\n", g.Group, errName(g.ErrorCode), deref(g.ErrorMessage))
			continue
		}
		fmt.Fprintf(&b, "group %s state=%s epoch=%d assignment-epoch=%d assignor=%s\n", g.Group, g.State, g.Epoch, g.AssignmentEpoch, deref(g.AssignorName))
		if g.Topology != nil {
			for _, s := range g.Topology.Subtopologies {
				fmt.Fprintf(&b, "  subtopology %s sources=%v sinks=%v", s.SubtopologyID, s.SourceTopics, s.RepartitionSinkTopics)
				for _, t := range s.RepartitionSourceTopics {
					fmt.Fprintf(&b, " repartition=%s/%d", t.Topic, t.NumPartitions)
				}
				for _, t := range s.StateChangelogTopics {
					fmt.Fprintf(&b, " changelog=%s/%d", t.Topic, t.NumPartitions)
				}
				b.WriteString("\n")
			}
		}
		for _, m := range g.Members {
			fmt.Fprintf(&b, "  member %s epoch=%d process=%s assigned=%s/%s/%s target=%s/%s/%s\n", m.MemberID, m.MemberEpoch, m.ProcessID,
				fmtKmsgTasks(m.Assignment.ActiveTasks), fmtKmsgTasks(m.Assignment.StandbyTasks), fmtKmsgTasks(m.Assignment.WarmupTasks),
				fmtKmsgTasks(m.TargetAssignment.ActiveTasks), fmtKmsgTasks(m.TargetAssignment.StandbyTasks), fmtKmsgTasks(m.TargetAssignment.WarmupTasks))
		}
	}
	return b.String()
}

// offsetCommit validates a commit: member=, epoch=, topic=, partitions=0,1.
func (h *harness) offsetCommit(args map[string]string) string {
	epoch, _ := strconv.Atoi(args["epoch"])
	version, _ := strconv.Atoi(argOr(args, "version", "9"))
	var parts []int32
	for _, p := range strings.Split(args["partitions"], ",") {
		n, _ := strconv.Atoi(p)
		parts = append(parts, int32(n))
	}
	code, msg := h.c.validateStreamsOffsetCommit(argOr(args, "group", "g"), args["member"], int32(epoch), int16(version), false,
		[]OffsetCommitTopic{{Topic: args["topic"], Partitions: parts}})
	if code == 0 {
		return "accepted"
	}
	return fmt.Sprintf("rejected %s %q", errName(code), msg)
}

// advanceTo moves the clock to at, firing due timers at their deadlines as
// a host would (each tick's output is committed and printed).
func (h *harness) advanceTo(at int64) string {
	var b strings.Builder
	for {
		d, ok := h.c.NextDeadline()
		if !ok || d > at {
			break
		}
		if d > h.now {
			h.now = d
		}
		fmt.Fprintf(&b, "[tick @%d]\n", h.now)
		b.WriteString(h.finish(h.c.tick(h.now), false))
	}
	if at > h.now {
		h.now = at
	}
	return b.String()
}

// restart simulates a coordinator fail-over: a fresh Coordinator replays
// the durable log (compacted, as the store replays it), then Loaded
// schedules timers and re-requests runs. Outstanding assignor runs and
// parked heartbeats of the old one are lost.
func (h *harness) restart() string {
	fresh, err := replayLog(h.cfg, h.log)
	if err != nil {
		h.tb.Fatalf("replay: %v", err)
	}
	h.c, h.runs = fresh, nil
	h.c.updateTopics(h.now, h.lastTopics)
	h.c.Commit()
	return fmt.Sprintf("restarted from %d records\n", len(h.log)) + h.finish(h.c.Loaded(h.now), false)
}
