package core

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestClassicScenarios runs the classic-group datadriven scenarios under
// testdata/classic (commands: testdata/classic/README.md). Rewrite with:
// go test ./core -run TestClassicScenarios -rewrite
func TestClassicScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/classic", func(t *testing.T, path string) {
		if strings.HasSuffix(path, ".md") {
			return // the command reference
		}
		var h *classicHarness
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			args := map[string]string{}
			for _, a := range d.CmdArgs {
				args[a.Key] = strings.Join(a.Vals, ",")
			}
			if d.Cmd == "new" {
				h = newClassicHarness(t, classicScenarioConfig(t, args))
				return "ok"
			}
			if h == nil {
				t.Fatalf("%s: run 'new' first", d.Pos)
			}
			prefix := ""
			if v, ok := args["at"]; ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				prefix = h.advanceTo(n)
			}
			return prefix + h.run(t, d, args)
		})
	})
}

func classicScenarioConfig(t *testing.T, args map[string]string) Config {
	cfg := DefaultConfig()
	cfg.Classic.InitialRebalanceDelayMs = 0
	cfg.Streams.InitialRebalanceDelayMs = 0
	num := func(k string, dst *int32) {
		if v, ok := args[k]; ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("%s: %v", k, err)
			}
			*dst = int32(n)
		}
	}
	num("delay", &cfg.Classic.InitialRebalanceDelayMs)
	num("max-size", &cfg.Classic.MaxSize)
	num("min-session", &cfg.Classic.MinSessionTimeoutMs)
	num("join-timeout", &cfg.Classic.NewMemberJoinTimeoutMs)
	return cfg
}

// classicClient is what a simulated client knows: its member id (empty
// before it has one) and generation.
type classicClient struct {
	memberID string
	gen      int32
}

// classicHarness drives a Coordinator with classic requests the way a host
// does (one batch per command, committed or rolled back) and renders
// generated member ids by their client's alias.
type classicHarness struct {
	tb      testing.TB
	c       *Coordinator
	cfg     Config
	now     int64
	log     []records.Record
	nextReq RequestID
	reqWho  map[RequestID]string
	clients map[string]*classicClient
}

func newClassicHarness(tb testing.TB, cfg Config) *classicHarness {
	c, err := New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	return &classicHarness{tb: tb, c: c, cfg: cfg, reqWho: map[RequestID]string{}, clients: map[string]*classicClient{}}
}

func (h *classicHarness) client(alias string) *classicClient {
	cl := h.clients[alias]
	if cl == nil {
		cl = &classicClient{gen: -1}
		h.clients[alias] = cl
	}
	return cl
}

// alias replaces generated member ids with "<alias>" in s.
func (h *classicHarness) alias(s string) string {
	names := make([]string, 0, len(h.clients))
	for n := range h.clients {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if id := h.clients[n].memberID; id != "" && strings.Contains(id, "-") {
			s = strings.ReplaceAll(s, id, "<"+n+">")
		}
	}
	return s
}

func (h *classicHarness) req(who string) RequestID {
	h.nextReq++
	h.reqWho[h.nextReq] = who
	return h.nextReq
}

// finish commits (or rolls back) an Output and renders it.
func (h *classicHarness) finish(o Output, fail bool) string {
	if err := eventsExplain(o); err != nil {
		h.tb.Fatal(err)
	}
	var b strings.Builder
	for _, r := range o.Records {
		fmt.Fprintf(&b, "%s\n", fmtClassicRecord(r))
	}
	for _, e := range o.Events {
		fmt.Fprintf(&b, "event %s\n", e)
	}
	for _, t := range o.Timers {
		if t.Cancel {
			fmt.Fprintf(&b, "timer cancel %s\n", t.Key)
		} else {
			fmt.Fprintf(&b, "timer set %s @%d\n", t.Key, t.Deadline)
		}
	}
	if fail {
		ro := h.c.Rollback()
		b.WriteString("append failed: rolled back\n")
		for _, r := range o.Responses {
			fmt.Fprintf(&b, "response %s: failed (NOT_COORDINATOR)\n", h.reqWho[r.Request])
		}
		for _, id := range ro.Failed {
			fmt.Fprintf(&b, "parked %s: failed (NOT_COORDINATOR)\n", h.reqWho[id])
		}
		return h.alias(b.String())
	}
	h.c.Commit()
	h.log = append(h.log, o.Records...)
	for _, r := range o.Responses {
		who := h.reqWho[r.Request]
		_ = r.Msg.AppendTo(nil) // every response must encode at its version
		b.WriteString(h.alias(fmt.Sprintf("response %s: %s\n", who, fmtClassicResponse(r.Msg))))
		h.observe(who, r.Msg)
	}
	return h.alias(b.String())
}

func (h *classicHarness) observe(who string, msg kmsg.Response) {
	r, ok := msg.(*kmsg.JoinGroupResponse)
	if !ok {
		return
	}
	cl := h.client(who)
	if r.MemberID != "" {
		cl.memberID = r.MemberID
	}
	switch r.ErrorCode {
	case 0:
		cl.gen = r.Generation
	case errUnknownMemberID:
		cl.memberID, cl.gen = "", -1
	}
}

func fmtClassicRecord(r records.Record) string {
	if r.Value == nil {
		return fmt.Sprintf("- %s %s (tombstone)", records.RecordTypeName(r.Key.RecordType()), r.Key.Group())
	}
	v, ok := r.Value.(records.GroupMetadataValue)
	if !ok {
		return fmtRecord(r)
	}
	var ms []string
	for _, m := range v.Members {
		s := m.MemberID
		if m.GroupInstanceID != nil {
			s += "(" + *m.GroupInstanceID + ")"
		}
		ms = append(ms, fmt.Sprintf("%s=%q", s, m.Assignment))
	}
	return fmt.Sprintf("+ GroupMetadata %s v%d gen=%d type=%q protocol=%s leader=%s members=[%s]", r.Key.Group(), v.Version,
		v.Generation, v.ProtocolType, strOrNull(v.Protocol), strOrNull(v.Leader), strings.Join(ms, " "))
}

func fmtClassicResponse(msg kmsg.Response) string {
	switch r := msg.(type) {
	case *kmsg.JoinGroupResponse:
		if r.ErrorCode != 0 {
			return fmt.Sprintf("join error=%s member=%s", errName(r.ErrorCode), r.MemberID)
		}
		s := fmt.Sprintf("join gen=%d member=%s leader=%s protocol=%s", r.Generation, r.MemberID, r.LeaderID, deref(r.Protocol))
		if len(r.Members) > 0 {
			var ms []string
			for _, m := range r.Members {
				ms = append(ms, m.MemberID)
			}
			s += " members=[" + strings.Join(ms, " ") + "]"
		}
		if r.SkipAssignment {
			s += " skip-assignment"
		}
		return s
	case *kmsg.SyncGroupResponse:
		if r.ErrorCode != 0 {
			return "sync error=" + errName(r.ErrorCode)
		}
		return fmt.Sprintf("sync assignment=%q protocol=%s", r.MemberAssignment, deref(r.Protocol))
	case *kmsg.HeartbeatResponse:
		return "heartbeat error=" + errName(r.ErrorCode)
	case *kmsg.LeaveGroupResponse:
		s := "leave error=" + errName(r.ErrorCode)
		for _, m := range r.Members {
			s += fmt.Sprintf("\n    member %q instance=%s error=%s", m.MemberID, deref(m.InstanceID), errName(m.ErrorCode))
		}
		return s
	case *kmsg.DeleteGroupsResponse:
		var parts []string
		for _, g := range r.Groups {
			parts = append(parts, fmt.Sprintf("%s=%s", g.Group, errName(g.ErrorCode)))
		}
		return "delete " + strings.Join(parts, " ")
	case *kmsg.StreamsGroupHeartbeatResponse:
		return fmtResponse("streams", r)
	}
	return fmt.Sprintf("%T", msg)
}

// consumerSubscription encodes a consumer protocol v0 subscription.
func consumerSubscription(topics []string) []byte {
	b := binary.BigEndian.AppendUint16(nil, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(topics)))
	for _, t := range topics {
		b = binary.BigEndian.AppendUint16(b, uint16(len(t)))
		b = append(b, t...)
	}
	return binary.BigEndian.AppendUint32(b, 0xffffffff) // null user data
}

// parseProtocols reads "range:t1+t2;roundrobin:t1".
func parseProtocols(s string) []kmsg.JoinGroupRequestProtocol {
	var out []kmsg.JoinGroupRequestProtocol
	for _, p := range strings.Split(s, ";") {
		name, topics, _ := strings.Cut(p, ":")
		out = append(out, kmsg.JoinGroupRequestProtocol{Name: name, Metadata: consumerSubscription(strings.Split(topics, "+"))})
	}
	return out
}

func atoi32(args map[string]string, k string, def int32) int32 {
	v, ok := args[k]
	if !ok {
		return def
	}
	n, _ := strconv.Atoi(v)
	return int32(n)
}

func optStr(args map[string]string, k string) *string {
	if v, ok := args[k]; ok {
		return &v
	}
	return nil
}

// memberIDArg is the member id a client sends: member-id= overrides it
// ("none" sends the empty id).
func (h *classicHarness) memberIDArg(args map[string]string, alias string) string {
	if v, ok := args["member-id"]; ok {
		if v == "none" {
			return ""
		}
		if cl := h.clients[v]; cl != nil && cl.memberID != "" {
			return cl.memberID
		}
		return v
	}
	return h.client(alias).memberID
}

func (h *classicHarness) run(t *testing.T, d *datadriven.TestData, args map[string]string) string {
	group := argOr(args, "group", "g")
	who := args["member"]
	_, fail := args["fail"]
	switch d.Cmd {
	case "join":
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = int16(atoi32(args, "v", 9))
		req.Group = group
		req.MemberID = h.memberIDArg(args, who)
		req.InstanceID = optStr(args, "instance")
		req.SessionTimeoutMillis = atoi32(args, "session", 10000)
		req.RebalanceTimeoutMillis = atoi32(args, "rto", 30000)
		req.ProtocolType = argOr(args, "type", "consumer")
		req.Protocols = parseProtocols(argOr(args, "protocols", "range:t"))
		if _, ok := args["no-protocols"]; ok {
			req.Protocols = nil
		}
		o := h.c.joinGroup(h.now, h.req(who), ClientInfo{ClientID: "client-" + who, ClientHost: "/127.0.0.1"}, req)
		return h.finish(o, fail)
	case "sync":
		req := kmsg.NewPtrSyncGroupRequest()
		req.Version = int16(atoi32(args, "v", 5))
		req.Group = group
		req.MemberID = h.memberIDArg(args, who)
		req.Generation = atoi32(args, "gen", h.client(who).gen)
		req.InstanceID = optStr(args, "instance")
		req.ProtocolType = optStr(args, "ptype")
		req.Protocol = optStr(args, "pname")
		if v, ok := args["assign"]; ok {
			for _, kv := range strings.Split(v, ",") {
				m, a, _ := strings.Cut(kv, ":")
				req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{
					MemberID: h.client(m).memberID, MemberAssignment: []byte(a)})
			}
		}
		return h.finish(h.c.syncGroup(h.now, h.req(who), req), fail)
	case "hb":
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version = 4
		req.Group = group
		req.MemberID = h.memberIDArg(args, who)
		req.Generation = atoi32(args, "gen", h.client(who).gen)
		req.InstanceID = optStr(args, "instance")
		return h.finish(h.c.heartbeat(h.now, h.req(who), req), fail)
	case "leave":
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Version = int16(atoi32(args, "v", 5))
		req.Group = group
		if req.Version < 3 {
			req.MemberID = h.memberIDArg(args, who)
		}
		for _, m := range strings.Split(args["members"], ",") {
			if m == "" {
				continue
			}
			alias, inst, _ := strings.Cut(m, "/")
			lm := kmsg.LeaveGroupRequestMember{}
			if alias != "" {
				lm.MemberID = h.client(alias).memberID
				if lm.MemberID == "" {
					lm.MemberID = alias // unknown to the harness: send as is
				}
			}
			if inst != "" {
				lm.InstanceID = &inst
			}
			req.Members = append(req.Members, lm)
		}
		if who == "" {
			who = "leave"
		}
		return h.finish(h.c.leaveGroup(h.now, h.req(who), req), fail)
	case "delete":
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Version = 2
		req.Groups = strings.Split(argOr(args, "groups", group), ",")
		return h.finish(h.c.deleteGroups(h.now, h.req("admin"), req), fail)
	case "describe":
		return h.describe(strings.Split(argOr(args, "groups", group), ","), int16(atoi32(args, "v", 5)))
	case "list":
		return h.list(args)
	case "commit":
		return h.commit(args, who, group)
	case "fetch":
		return h.fetch(args, who, group)
	case "offset-delete":
		req := kmsg.NewPtrOffsetDeleteRequest()
		req.Group = group
		for _, tp := range strings.Split(args["topics"], ",") {
			req.Topics = append(req.Topics, kmsg.OffsetDeleteRequestTopic{Topic: tp, Partitions: []kmsg.OffsetDeleteRequestTopicPartition{{Partition: 0}}})
		}
		d := h.c.decideOffsetDelete(req)
		return fmt.Sprintf("offset-delete error=%s not-held=%v subscribed=%v", errName(d.ErrorCode), d.NotHeld, d.Subscribed)
	case "streams-join":
		return h.streamsJoin(who, group, fail)
	case "streams-leave":
		req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
		req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, group, who, -1
		return h.finish(h.c.streamsGroupHeartbeat(h.now, h.req(who), ClientInfo{ClientID: who}, req), fail)
	case "tick":
		n, _ := strconv.ParseInt(args["advance"], 10, 64)
		return h.advanceTo(h.now+n) + fmt.Sprintf("now=%d", h.now)
	case "state":
		return h.alias(h.c.Dump()+h.classicLive(group)) + "timers " + h.alias(strings.Join(h.c.TimerKeys(), " ")) + "\n"
	case "replay-check":
		return h.replayCheck()
	case "reload":
		return h.reload()
	}
	t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	return ""
}

// classicLive renders the in-memory (non-durable) state of a group.
func (h *classicHarness) classicLive(id string) string {
	g, ok := h.c.groups[id].(*classicGroup)
	if !ok {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "live %s gen=%d protocol=%s leader=%s\n", g.state, g.generation, strOrNull(g.protocolName), strOrNull(g.leader))
	for _, m := range g.allMembers() {
		fmt.Fprintf(&b, "  member %s awaiting-join=%v awaiting-sync=%v assignment=%q\n", m.id, m.join.waiting, m.sync.waiting, m.assignment)
	}
	return b.String()
}

func (h *classicHarness) describe(groups []string, version int16) string {
	resp := h.c.describeGroups(&kmsg.DescribeGroupsRequest{Version: version, Groups: groups})
	var b strings.Builder
	for _, g := range resp.Groups {
		fmt.Fprintf(&b, "group %s error=%s state=%s type=%q protocol=%q", g.Group, errName(g.ErrorCode), g.State, g.ProtocolType, g.Protocol)
		if g.ErrorMessage != nil {
			fmt.Fprintf(&b, " message=%q", *g.ErrorMessage)
		}
		b.WriteString("\n")
		for _, m := range g.Members {
			fmt.Fprintf(&b, "  member %s instance=%s client=%s metadata=%d-bytes assignment=%q\n", m.MemberID, deref(m.InstanceID),
				m.ClientID, len(m.ProtocolMetadata), m.MemberAssignment)
		}
	}
	return h.alias(b.String())
}

func (h *classicHarness) list(args map[string]string) string {
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 5
	if v, ok := args["states"]; ok {
		req.StatesFilter = strings.Split(v, ",")
	}
	if v, ok := args["types"]; ok {
		req.TypesFilter = strings.Split(v, ",")
	}
	var b strings.Builder
	for _, g := range h.c.listGroups(req).Groups {
		fmt.Fprintf(&b, "%s state=%s type=%s protocol-type=%q\n", g.Group, g.GroupState, g.GroupType, g.ProtocolType)
	}
	if b.Len() == 0 {
		return "no groups"
	}
	return b.String()
}

func (h *classicHarness) commit(args map[string]string, who, group string) string {
	gen := atoi32(args, "gen", h.client(who).gen)
	memberID := h.memberIDArg(args, who)
	version := int16(atoi32(args, "v", 9))
	if _, ok := args["txn"]; ok {
		req := kmsg.NewPtrTxnOffsetCommitRequest()
		req.Version, req.Group, req.MemberID, req.Generation = version, group, memberID, gen
		req.InstanceID = optStr(args, "instance")
		d := h.c.decideTxnOffsetCommit(req)
		return fmt.Sprintf("txn-commit error=%s not-held=%v %s", errName(d.ErrorCode), d.NotHeld, d.Message)
	}
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.MemberID, req.Generation = version, group, memberID, gen
	req.InstanceID = optStr(args, "instance")
	req.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: argOr(args, "topic", "t"), Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	d, o := h.c.decideOffsetCommit(h.now, req)
	return h.finish(o, false) + fmt.Sprintf("commit error=%s not-held=%v %s", errName(d.ErrorCode), d.NotHeld, d.Message)
}

func (h *classicHarness) fetch(args map[string]string, who, group string) string {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = int16(atoi32(args, "v", 9))
	for _, gid := range strings.Split(argOr(args, "groups", group), ",") {
		rg := kmsg.OffsetFetchRequestGroup{Group: gid, MemberEpoch: atoi32(args, "epoch", -1)}
		if v, ok := args["member-id"]; ok {
			rg.MemberID = &v
		}
		req.Groups = append(req.Groups, rg)
	}
	var parts []string
	for _, d := range h.c.decideOffsetFetch(req) {
		parts = append(parts, fmt.Sprintf("%s=%s", d.Group, errName(d.ErrorCode)))
	}
	return "fetch " + strings.Join(parts, " ")
}

// streamsJoin sends a first StreamsGroupHeartbeat with a one-subtopology
// topology on topic "in".
func (h *classicHarness) streamsJoin(who, group string, fail bool) string {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version, req.Group, req.MemberID, req.MemberEpoch = 1, group, who, 0
	req.RebalanceTimeoutMillis = 30000
	proc := "p-" + who
	req.ProcessID = &proc
	req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
		{SubtopologyID: "0", SourceTopics: []string{"in"}, SourceTopicRegex: []string{}, RepartitionSinkTopics: []string{}}}}
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	o := h.c.streamsGroupHeartbeat(h.now, h.req(who), ClientInfo{ClientID: who}, req)
	return h.finish(o, fail)
}

// advanceTo fires due timers at their deadlines up to at.
func (h *classicHarness) advanceTo(at int64) string {
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

// replayCheck rebuilds a Coordinator from the durable log's bytes and
// compares dumps.
func (h *classicHarness) replayCheck() string {
	fresh, err := replayLog(h.cfg, h.log)
	if err != nil {
		return err.Error()
	}
	live, replayed := h.c.Dump(), fresh.Dump()
	if live != replayed {
		return h.alias("REPLAY MISMATCH\nlive:\n" + live + "replayed:\n" + replayed)
	}
	return fmt.Sprintf("replay of %d records matches live state", len(h.log))
}

// reload replaces the Coordinator by one replayed from the durable log
// (a coordinator failover) and shows what Loaded schedules.
func (h *classicHarness) reload() string {
	fresh, err := replayLog(h.cfg, h.log)
	if err != nil {
		return err.Error()
	}
	h.c = fresh
	o := fresh.Loaded(h.now)
	return "reloaded\n" + h.finish(o, false)
}
