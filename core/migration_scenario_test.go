package core

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestMigrationScenarios runs the online-migration scenarios under
// testdata/migration (commands: testdata/migration/README.md). Rewrite
// with: go test ./core -run TestMigrationScenarios -rewrite
func TestMigrationScenarios(t *testing.T) {
	datadriven.Walk(t, "testdata/migration", func(t *testing.T, path string) {
		if strings.HasSuffix(path, ".md") {
			return
		}
		var s *migSim
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			args := map[string]string{}
			for _, a := range d.CmdArgs {
				args[a.Key] = strings.Join(a.Vals, ",")
			}
			if d.Cmd == "new" {
				policy, err := ParseMigrationPolicy(argOr(args, "policy", "bidirectional"))
				if err != nil {
					t.Fatal(err)
				}
				n, _ := strconv.Atoi(argOr(args, "tasks", "6"))
				wait, _ := strconv.Atoi(argOr(args, "assignor-wait", "0"))
				s = newMigSimConfig(t, int32(n), policy, int64(wait))
				s.recording = true
				// fencing=checked: a fencing error is allowed when the
				// coordinator really no longer holds the member (legitFence).
				s.tolerateFencing = args["fencing"] == "checked"
				switch args["assignor"] {
				case "ha":
					// The real HA assignor, natively (warmup_ha_test.go).
					s.useHA(t, args)
				default:
					if v, ok := args["standbys"]; ok {
						n, _ := strconv.Atoi(v)
						s.useStandbys(int32(n))
					}
				}
				if v, ok := args["interval"]; ok {
					// streams.assignment.interval.ms (the simulation's default is 0).
					n, _ := strconv.Atoi(v)
					ms := int32(n)
					o := StreamsGroupOverrides{}
					if s.overrides != nil {
						o = *s.overrides
					}
					o.AssignmentIntervalMs = &ms
					s.setGroupConfig(o)
				}
				s.trace.Reset()
				return "ok"
			}
			if s == nil {
				t.Fatalf("%s: run 'new' first", d.Pos)
			}
			s.trace.Reset()
			out := s.command(t, d, args)
			return s.aliasIDs(s.trace.String() + out)
		})
	})
}

func (s *migSim) byName(t *testing.T, name string) *migInst {
	for _, in := range s.insts {
		if in.name == name && in.alive {
			return in
		}
	}
	t.Fatalf("no live instance %q", name)
	return nil
}

func (s *migSim) command(t *testing.T, d *datadriven.TestData, args map[string]string) string {
	switch d.Cmd {
	case "start":
		proc, _ := strconv.Atoi(argOr(args, "process", "1"))
		in := s.inst(args["name"], byte(proc), argOr(args, "protocol", "classic") == "classic")
		if v, ok := args["v"]; ok {
			n, _ := strconv.Atoi(v)
			in.version = int32(n)
		}
		if v, ok := args["instance"]; ok {
			in.instance = &v
		}
		in.keepDirs = args["dirs"] == "keep"
		if from, ok := args["from"]; ok {
			// A restart on the same state directory: the new incarnation
			// reports the task directories the old one left on disk.
			for _, old := range s.insts {
				if old.name == from {
					in.dirs = taskSet{}
					for task := range old.dirs {
						in.dirs[task] = struct{}{}
					}
				}
			}
		}
		return "ok"
	case "act":
		for _, name := range strings.Split(args["name"], ",") {
			in := s.byName(t, name)
			if _, ok := args["rejoin"]; ok {
				in.rejoin = true
			}
			s.act(in)
			s.check()
		}
		return ""
	case "round":
		n, _ := strconv.Atoi(argOr(args, "n", "1"))
		for i := 0; i < n; i++ {
			s.round()
		}
		return fmt.Sprintf("now=%d\n", s.now)
	case "settle":
		n, _ := strconv.Atoi(argOr(args, "max", "40"))
		for i := 0; i < n; i++ {
			s.round()
			if s.stable() {
				return fmt.Sprintf("settled at %d after %d rounds\n%s", s.now, i+1, s.owners())
			}
		}
		return fmt.Sprintf("NOT settled by %d\n%s", s.now, s.owners())
	case "kill":
		s.byName(t, args["name"]).alive = false
		return "ok"
	case "pause":
		s.byName(t, args["name"]).paused = true
		return "ok"
	case "resume":
		for _, in := range s.insts {
			if in.name == args["name"] {
				in.paused = false
			}
		}
		return "ok"
	case "leave":
		in := s.byName(t, args["name"])
		if _, ok := args["static"]; ok {
			s.staticLeave(t, in)
			return ""
		}
		s.leave(in)
		return ""
	case "snapshot":
		s.snap = s.placement(t)
		return s.snap
	case "unchanged":
		// The coordinator's group epoch, target assignment and every
		// member's assigned tasks (by instance id) since the last snapshot.
		now := s.placement(t)
		if now != s.snap {
			t.Errorf("%s: the group moved since the snapshot:\nbefore:\n%safter:\n%s", d.Pos, s.snap, now)
			return "CHANGED\n" + now
		}
		return "unchanged\n" + now
	case "leave-admin":
		req := kmsg.NewPtrLeaveGroupRequest()
		req.Version = 5
		req.Group = "g"
		inst := args["instance"]
		req.Members = []kmsg.LeaveGroupRequestMember{{InstanceID: &inst}}
		o := s.c.leaveGroup(s.now, 0, req)
		s.finish(Output{Records: o.Records, Events: o.Events, Timers: o.Timers})
		for _, r := range o.Responses {
			for _, m := range r.Msg.(*kmsg.LeaveGroupResponse).Members {
				s.debugf("leave %s: %s", deref(m.InstanceID), errName(m.ErrorCode))
			}
		}
		s.check()
		return ""
	case "hold-assignor":
		s.held = &[]AssignorRun{}
		return "ok"
	case "release-assignor":
		runs := *s.held
		s.held = nil
		s.runAssignor(runs)
		s.check()
		return fmt.Sprintf("%d run(s) answered\n", len(runs))
	case "tick":
		n, _ := strconv.ParseInt(args["advance"], 10, 64)
		s.now += n
		s.finish(s.c.tick(s.now))
		s.check()
		return fmt.Sprintf("now=%d\n", s.now)
	case "end-offsets":
		// end-offsets 0_0=150,0_1=9: the host's changelog end-offset sums.
		ends := map[TaskID]int64{}
		for _, kv := range strings.Split(args["tasks"], ",") {
			parts := strings.SplitN(kv, "=", 2)
			u := strings.SplitN(parts[0], "_", 2)
			p, _ := strconv.Atoi(u[1])
			n, _ := strconv.ParseInt(parts[1], 10, 64)
			ends[TaskID{u[0], int32(p)}] = n
		}
		var list []TaskEndOffset
		for t, e := range ends {
			list = append(list, TaskEndOffset{Task: t, Offset: e})
		}
		sort.Slice(list, func(i, j int) bool { return list[i].Task.String() < list[j].Task.String() })
		s.finish(s.c.updateEndOffsets(s.now, "g", list))
		return ""
	case "restored":
		// restored name=c2 tasks=0_0=49950: the offset sums a classic
		// instance reports for its standby/warm-up tasks (default 100).
		in := s.byName(t, args["name"])
		if in.restored == nil {
			in.restored = map[TaskID]int64{}
		}
		for _, kv := range strings.Split(args["tasks"], ",") {
			parts := strings.SplitN(kv, "=", 2)
			u := strings.SplitN(parts[0], "_", 2)
			p, _ := strconv.Atoi(u[1])
			n, _ := strconv.ParseInt(parts[1], 10, 64)
			in.restored[TaskID{u[0], int32(p)}] = n
		}
		return "ok"
	case "lose-next":
		s.loseNext = true
		return "ok"
	case "fail-next":
		s.failNext = true
		return "ok"
	case "restart":
		s.restart()
		return "timers " + strings.Join(s.c.TimerKeys(), " ") + "\n"
	case "replay-check":
		s.replayCheck()
		return "replay ok"
	case "state":
		return s.c.Dump() + "timers " + strings.Join(s.c.TimerKeys(), " ") + "\n"
	case "owners":
		return s.owners()
	case "describe":
		return s.describeStreams()
	case "list":
		var b strings.Builder
		for _, g := range s.c.listGroups(kmsg.NewPtrListGroupsRequest()).Groups {
			fmt.Fprintf(&b, "%s state=%s type=%s protocol-type=%q\n", g.Group, g.GroupState, g.GroupType, g.ProtocolType)
		}
		return b.String()
	case "commit":
		in := s.byName(t, args["name"])
		gen := in.gen
		if v, ok := args["gen"]; ok {
			n, _ := strconv.Atoi(v)
			gen = int32(n)
		}
		if _, txn := args["txn"]; txn { // TxnOffsetCommit v3, as Kafka Streams' EOS producer sends it
			req := kmsg.NewPtrTxnOffsetCommitRequest()
			req.Version = 3
			req.Group, req.MemberID, req.Generation = "g", in.memberID, gen
			dec := s.c.decideTxnOffsetCommit(req)
			return fmt.Sprintf("txn-commit %s gen=%d: %s\n", in.name, gen, errName(dec.ErrorCode))
		}
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version = 8
		req.Group, req.MemberID, req.Generation = "g", in.memberID, gen
		dec, o := s.c.decideOffsetCommit(s.now, req)
		s.finish(o)
		return fmt.Sprintf("commit %s gen=%d: %s\n", in.name, req.Generation, errName(dec.ErrorCode))
	case "raw-hb":
		in := s.byName(t, args["name"])
		req := kmsg.NewPtrHeartbeatRequest()
		req.Version = 4
		req.Group, req.MemberID, req.Generation = "g", in.memberID, in.gen
		if v, ok := args["gen"]; ok {
			n, _ := strconv.Atoi(v)
			req.Generation = int32(n)
		}
		s.finish(s.c.heartbeat(s.now, s.req(in), req))
		return ""
	case "raw-join":
		// A JoinGroup whose metadata is the given protocol (malformed ones).
		in := s.byName(t, args["name"])
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = 9
		req.Group, req.MemberID, req.ProtocolType = "g", in.memberID, argOr(args, "type", "consumer")
		req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 30000
		req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: argOr(args, "protocol", "stream"), Metadata: []byte(argOr(args, "metadata", "\x00\x03junk"))}}
		id := s.req(in)
		s.kind[id] = "join"
		s.finish(s.c.joinGroup(s.now, id, ClientInfo{ClientID: in.name}, req))
		return ""
	}
	t.Fatalf("%s: unknown command %q", d.Pos, d.Cmd)
	return ""
}

// owners is the instances' own view: protocol, generation, tasks.
func (s *migSim) owners() string {
	var b strings.Builder
	g, _ := s.c.Group("g")
	if g != nil {
		fmt.Fprintf(&b, "group kind=%s state=%s\n", g.Kind(), g.StateName())
		if cg, ok := g.(*classicGroup); ok {
			fmt.Fprintf(&b, "classic generation=%d leader=%s\n", cg.generation, s.aliasIDs(strOrNull(cg.leader)))
		}
	}
	for _, in := range s.insts {
		if !in.alive {
			continue
		}
		p := "streams"
		if in.classic {
			p = "classic"
		}
		fmt.Fprintf(&b, "%s %s process=%d gen=%d owned=[%s]\n", in.name, p, in.process[15], in.gen, formatTasks(in.owned))
	}
	return b.String()
}

// describeStreams is StreamsGroupDescribe's member view.
func (s *migSim) describeStreams() string {
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{"g"}
	resp := s.c.streamsGroupDescribe(req)
	var b strings.Builder
	for _, g := range resp.Groups {
		fmt.Fprintf(&b, "group %s error=%s state=%s epoch=%d\n", g.Group, errName(g.ErrorCode), g.State, g.Epoch)
		ms := g.Members
		sort.Slice(ms, func(i, j int) bool { return ms[i].MemberID < ms[j].MemberID })
		for _, m := range ms {
			fmt.Fprintf(&b, "  member %s epoch=%d classic=%v process=%s\n", m.MemberID, m.MemberEpoch, m.IsClassic, m.ProcessID)
		}
	}
	return b.String()
}

// aliasIDs replaces generated classic member ids with <name>.
func (s *migSim) aliasIDs(out string) string {
	for _, in := range s.insts {
		if in.memberID != "" && strings.Contains(in.memberID, "-") {
			out = strings.ReplaceAll(out, in.memberID, "<"+in.name+">")
		}
	}
	return out
}

// staticLeave is a static streams member's close: a heartbeat with member
// epoch -2 and its instance id (Kafka's LEAVE_GROUP_STATIC_MEMBER_EPOCH).
func (s *migSim) staticLeave(t *testing.T, in *migInst) {
	if in.classic || in.instance == nil {
		t.Fatalf("leave static: %s is not a static streams member", in.name)
	}
	in.alive = false
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group, req.MemberID, req.MemberEpoch, req.InstanceID = "g", in.memberID, -2, in.instance
	s.finish(s.c.streamsGroupHeartbeat(s.now, s.req(in), ClientInfo{ClientID: in.name, ClientHost: "/10.0.0.1"}, req))
	s.check()
}

// placement is the streams group's epochs, and each member's target and
// assigned active (and standby) tasks keyed by instance id (member ids change when a
// static member is replaced), as the coordinator holds them.
func (s *migSim) placement(t *testing.T) string {
	g, ok := s.c.groups["g"].(*streamsGroup)
	if !ok {
		t.Fatalf("placement: group g is not a streams group")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "group-epoch=%d assignment-epoch=%d\n", g.groupEpoch, g.assignmentEpoch)
	lines := []string{}
	for _, id := range g.sortedMemberIDs() {
		m := g.members[id]
		key := "member " + s.aliasIDs(id)
		if m.instanceID != nil {
			key = "instance " + *m.instanceID
		}
		assigned := taskSet{}
		for task := range m.assigned.active {
			assigned[task] = struct{}{}
		}
		line := fmt.Sprintf("%s process=%s target=[%s] assigned=[%s] pending=%d",
			key, m.processID[len(m.processID)-1:], formatTasks(g.target[id].active), formatTasks(assigned), len(m.pending.active))
		if len(g.target[id].standby)+len(m.assigned.standby) > 0 {
			line += fmt.Sprintf(" standby target=[%s] assigned=[%s]", formatTasks(g.target[id].standby), formatTasks(m.assigned.standby))
		}
		lines = append(lines, line+"\n")
	}
	sort.Strings(lines)
	return b.String() + strings.Join(lines, "")
}
