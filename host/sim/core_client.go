package sim

// The core engine's members: Kafka Streams clients on the streams
// protocol, as far as the coordinator sees them.

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/core"
)

// heartbeat sends cl's heartbeat.
func (cw *coreWorld) heartbeat(cl *coreClient) {
	req := cw.heartbeatRequest(cl)
	cl.nextHB = cw.now + cw.sc.heartbeatIntervalMs()
	cw.send(cl, req)
}

// heartbeatRequest is cl's next heartbeat as a Kafka Streams 4.4 client
// builds it (StreamsGroupHeartbeatRequestManager): a join (epoch 0)
// carries its process, the topology, empty task lists and its offsets;
// later ones its epoch, its task lists only when they differ from the
// last it sent (null: unchanged), and its offsets when taskOffsets says
// so.
func (cw *coreWorld) heartbeatRequest(cl *coreClient) *kmsg.StreamsGroupHeartbeatRequest {
	m := cl.m
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = coreGroup, m.id, cl.epoch
	changed := false
	if !cl.joined {
		req.MemberEpoch = 0
		req.RebalanceTimeoutMillis = 300000 // Kafka Streams' max.poll.interval.ms
		process := processID(m.process).String()
		req.ProcessID = &process
		if m.rack != "" {
			rack := m.rack
			req.RackID = &rack
		}
		req.Topology = cw.topology()
		req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
		cl.resetSent()
	} else if held := (abi.MemberAssignment{Active: cw.ownedActive(cl), Standby: m.target.Standby, Warmup: m.target.Warmup}); !cl.listsSent || !sameAssignment(held, cl.sent) {
		req.ActiveTasks = cw.kmsgTasks(held.Active)
		req.StandbyTasks = cw.kmsgTasks(held.Standby)
		req.WarmupTasks = cw.kmsgTasks(held.Warmup)
		cl.sent = abi.MemberAssignment{Active: slices.Clone(held.Active), Standby: slices.Clone(held.Standby), Warmup: slices.Clone(held.Warmup)}
		cl.listsSent, changed = true, true
	}
	if cw.sc.Reports != nil {
		cw.reportedOffsets(cl, req)
	} else {
		cw.taskOffsets(cl, req, changed)
	}
	return req
}

// taskOffsets sets the offsets cl sends without reports, by Kafka
// Streams 4.4's rule: all of them on a join; after, only when its task
// lists changed, the task-offset interval passed since it last sent
// offsets, or one of its warm-ups is within the acceptable recovery lag
// — and then each of the two lists only when it differs from the last
// one sent (both after resetSent). They are its process's state, the
// actives it runs left out, and the end offsets of the copies its state
// updater holds (fillReport), as they are at the heartbeat.
func (cw *coreWorld) taskOffsets(cl *coreClient, req *kmsg.StreamsGroupHeartbeatRequest, changed bool) {
	m, all := cl.m, !cl.offsSent
	if !all && !changed && cw.now < cl.offsetsAtMs+cl.offsetIntervalMs && !cw.hotWarmup(cw.now, m) {
		return
	}
	if cw.offs == nil {
		cw.offs, cw.ends = make([]int64, len(cw.end)), make([]int64, len(cw.end))
	}
	cw.fillReport(cw.now, m, cw.offs, cw.ends)
	if h := cw.offsetsHash(cw.offs); all || h != cl.sentOffs {
		req.TaskOffsets, cl.sentOffs, cl.offsetsAtMs = cw.kmsgOffsets(cw.offs), h, cw.now
	}
	if h := cw.offsetsHash(cw.ends); all || h != cl.sentEnds {
		req.TaskEndOffsets, cl.sentEnds, cl.offsetsAtMs = cw.kmsgOffsets(cw.ends), h, cw.now
	}
	cl.offsSent = true
}

// resetSent forgets what cl last sent, as Kafka Streams does when it
// joins or a heartbeat fails: its next heartbeat carries its task lists
// and offsets (with reports, its last report again).
func (cl *coreClient) resetSent() {
	cl.listsSent, cl.offsSent, cl.sentRep = false, false, -1
}

// offsetsHash is a 64-bit digest of the offsets kmsgOffsets would send,
// to tell a list from the last one sent without keeping it.
func (cw *coreWorld) offsetsHash(offsets []int64) uint64 {
	h := uint64(len(offsets))
	for t, o := range offsets {
		if o >= 0 && cw.stateful[t] {
			h = splitmix(h ^ uint64(t)<<40 ^ uint64(o))
		}
	}
	return h
}

// reportedOffsets sets what cl reports with reports: its last report
// (report, reports.go) once, and "unchanged" (null) until its next one.
func (cw *coreWorld) reportedOffsets(cl *coreClient, req *kmsg.StreamsGroupHeartbeatRequest) {
	m := cl.m
	if m.reported == nil || m.reportAtMs == cl.sentRep {
		return
	}
	cl.sentRep = m.reportAtMs
	req.TaskOffsets = cw.kmsgOffsets(m.reported)
	req.TaskEndOffsets = cw.kmsgOffsets(m.reportedEnd)
}

func (cw *coreWorld) kmsgOffsets(offsets []int64) []kmsg.TaskOffset {
	out := []kmsg.TaskOffset{}
	for t, o := range offsets {
		if o >= 0 && cw.stateful[t] {
			sub, p := cw.locate(int32(t))
			out = append(out, kmsg.TaskOffset{SubtopologyID: sub, Partition: p, Offset: o})
		}
	}
	return out
}

func (cw *coreWorld) locate(t int32) (string, int32) {
	s, p := cw.ts.Locate(t)
	return cw.sc.subs[s].ID, p
}

func (cw *coreWorld) kmsgTasks(tasks []int32) []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for _, t := range tasks {
		sub, p := cw.locate(t)
		if n := len(out); n > 0 && out[n-1].SubtopologyID == sub {
			out[n-1].Partitions = append(out[n-1].Partitions, p)
			continue
		}
		out = append(out, kmsg.TaskIDs{SubtopologyID: sub, Partitions: []int32{p}})
	}
	return out
}

func (cw *coreWorld) topology() *kmsg.StreamsGroupHeartbeatRequestTopology {
	top := &kmsg.StreamsGroupHeartbeatRequestTopology{}
	for _, s := range cw.sc.subs {
		st := kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{SubtopologyID: s.ID, SourceTopics: []string{sourceTopic(s.ID)}}
		if s.Stateful {
			st.StateChangelogTopics = []kmsg.TopicInfo{{Topic: changelogTopic(s.ID)}}
		}
		top.Subtopologies = append(top.Subtopologies, st)
	}
	return top
}

// leaveRequest is cl's leave heartbeat (epoch -1).
func (cw *coreWorld) leaveRequest(cl *coreClient) *kmsg.StreamsGroupHeartbeatRequest {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = coreGroup, cl.m.id, -1
	return req
}

func (cw *coreWorld) send(cl *coreClient, req kmsg.Request) {
	if cw.stopped { // coordhost is down: no answer
		cl.resetSent()
		return
	}
	cw.nextReq++
	cw.byReq[cw.nextReq] = cl
	cw.step(core.Request{ID: cw.nextReq, Client: core.ClientInfo{ClientID: cl.m.label, ClientHost: "/127.0.0.1"}, Body: req})
}

// adopt applies a heartbeat response to cl as Kafka Streams does: a
// fenced or unknown member drops its tasks and joins again; otherwise a
// new assignment (not null) replaces what it holds at once — revoked
// tasks stop, new ones start after handover_ms — and it heartbeats again
// a tick (or grant_ms) later to acknowledge it.
func (cw *coreWorld) adopt(cl *coreClient, resp *kmsg.StreamsGroupHeartbeatResponse) {
	if !slices.Contains(cw.clients, cl) { // it left
		return
	}
	m := cl.m
	switch resp.ErrorCode {
	case 0:
	case kerr.FencedMemberEpoch.Code, kerr.UnknownMemberID.Code:
		cl.joined, cl.epoch = false, 0
		cw.take(m, abi.MemberAssignment{Active: []int32{}, Standby: []int32{}, Warmup: []int32{}})
		cl.nextHB = cw.now
		return
	default:
		cw.fail(fmt.Errorf("member %s: heartbeat: %v", m.label, kerr.ErrorForCode(resp.ErrorCode)))
		return
	}
	cl.joined, cl.epoch = true, resp.MemberEpoch
	if resp.HeartbeatIntervalMillis > 0 {
		cl.nextHB = cw.now + int64(resp.HeartbeatIntervalMillis)
	}
	cl.offsetIntervalMs = int64(resp.TaskOffsetIntervalMillis)
	if resp.ActiveTasks == nil {
		return
	}
	next := abi.MemberAssignment{Active: cw.tasksOf(resp.ActiveTasks), Standby: cw.tasksOf(resp.StandbyTasks), Warmup: cw.tasksOf(resp.WarmupTasks)}
	if sameAssignment(m.target, next) {
		return
	}
	cw.take(m, next)
	cl.nextHB = min(cl.nextHB, cw.now+max(cw.sc.TickMs, cw.grantMs(m)))
}

// take makes next what m holds. Before the group first settled on its
// baseline target, tasks start at once on state that is there (the
// model's starting point); after, a new active is ready handover_ms (or
// handover_first_ms) later and a new standby or warm-up starts restoring
// then.
func (cw *coreWorld) take(m *member, next abi.MemberAssignment) {
	if m.startAt == nil {
		m.startAt = make([]int64, len(cw.end))
	}
	handOver := cw.sc.HandOverMs
	if cw.sc.HandOverFirstMs != nil && !cw.runsAny(m) {
		handOver = *cw.sc.HandOverFirstMs
	}
	l := cw.local[m.process]
	for i, set := range [][]int32{next.Active, next.Standby, next.Warmup} {
		for _, t := range set {
			// A standby or warm-up promoted to active is handed over as
			// any new active is (the model's rule); a copy it holds in
			// any role needs no new start.
			if (i == 0 && slices.Contains(m.target.Active, t)) || (i > 0 && m.holds(t)) {
				continue
			}
			switch {
			case !cw.live && i < 2:
				if cw.stateful[t] {
					l[t] = cw.end[t]
				}
				if i == 0 {
					cw.readyAt[t] = cw.now
				}
			case i == 0:
				cw.readyAt[t] = cw.readyAtFor(m, t, handOver)
			default:
				m.startAt[t] = cw.now + handOver
			}
		}
	}
	for _, t := range m.target.Active {
		if cw.live && !slices.Contains(next.Active, t) {
			cw.revoked(m, t)
		}
	}
	m.target, m.owned = next, slices.Clone(next.Active)
	if m.reportDueMs < 0 { // its next heartbeat carries a report (reports)
		m.reportDueMs = cw.now
	}
}

func (cw *coreWorld) tasksOf(ids []kmsg.TaskIDs) []int32 {
	out := []int32{}
	for _, id := range ids {
		s := slices.IndexFunc(cw.sc.subs, func(x abi.Subtopology) bool { return x.ID == id.SubtopologyID })
		for _, p := range id.Partitions {
			out = append(out, cw.ts.Task(int32(s), p))
		}
	}
	slices.Sort(out)
	return out
}

// pending counts the active tasks of core's target that their member does
// not hold yet (reconciliation under way).
func (cw *coreWorld) pending() int {
	n := 0
	for t, id := range cw.owner {
		if m := cw.memberOrNil(id); m == nil || !slices.Contains(m.target.Active, t) {
			n++
		}
	}
	return n
}

// hostEnds are the changelog end offsets the host hands core: every
// changelog's end, or with reports the ones it last read.
func (cw *coreWorld) hostEnds() []core.TaskEndOffset {
	ends := cw.end
	if cw.hostEnd != nil {
		ends = cw.hostEnd
	}
	var out []core.TaskEndOffset
	for t, e := range ends {
		if cw.stateful[t] {
			sub, p := cw.locate(int32(t))
			out = append(out, core.TaskEndOffset{Task: core.TaskID{Subtopology: sub, Partition: p}, Offset: e})
		}
	}
	return out
}
