package core

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Classic timer kinds (16-31) and their keys, as Kafka names them.
const (
	timerClassicHeartbeat timerKind = 16 // heartbeat-<group>-<member>: session / new-member join expiry
	timerClassicJoin      timerKind = 17 // join-<group>: complete the join phase (rebalance timeout)
	timerClassicInitial   timerKind = 18 // join-<group>: initial rebalance delay
	timerClassicSync      timerKind = 19 // sync-<group>: pending SyncGroup expiry for a generation
)

func init() {
	registerTimerKind(timerClassicHeartbeat, func(c *Coordinator, t timer) {
		if g := c.liveClassic(t.group); g != nil {
			c.expireClassicHeartbeat(g, t.member)
		}
	})
	registerTimerKind(timerClassicJoin, func(c *Coordinator, t timer) {
		if g := c.liveClassic(t.group); g != nil {
			c.completeClassicJoin(g)
		}
	})
	registerTimerKind(timerClassicInitial, func(c *Coordinator, t timer) {
		if g := c.liveClassic(t.group); g != nil {
			c.classicTryCompleteInitial(g)
		}
	})
	registerTimerKind(timerClassicSync, func(c *Coordinator, t timer) {
		if g := c.liveClassic(t.group); g != nil {
			c.classicExpirePendingSync(g, t.epoch)
		}
	})
}

// liveClassic returns the classic group id (snapshotted for rollback), or
// nil if it is gone or of another kind.
func (c *Coordinator) liveClassic(id string) *classicGroup {
	g, ok := c.groups[id].(*classicGroup)
	if !ok {
		return nil
	}
	c.snapshotClassic(g)
	return g
}

func (c *Coordinator) scheduleClassicHeartbeat(g *classicGroup, m *classicMember, timeoutMs int32) {
	c.setTimer(timer{key: classicHeartbeatKey(g.id, m.id), deadline: c.now + int64(timeoutMs), kind: timerClassicHeartbeat,
		group: g.id, member: m.id})
}

// park withholds a request's response until the group completes a phase.
func (c *Coordinator) parkClassic(p *parked, id RequestID, version int16) {
	*p = parked{waiting: true, req: id, version: version}
	c.batchParked = append(c.batchParked, id)
}

// release answers a parked request; false if none was parked.
func (c *Coordinator) releaseClassic(g *classicGroup, p *parked, msg kmsg.Response) bool {
	if !p.waiting {
		return false
	}
	g.released[p.req] = c.sealed // the number of the batch being built
	switch r := msg.(type) {
	case *kmsg.JoinGroupResponse:
		r.Version = p.version
	case *kmsg.SyncGroupResponse:
		r.Version = p.version
	}
	c.dropParked(p.req)
	c.respond(p.req, msg)
	*p = parked{}
	return true
}

func classicJoinError(memberID string, code int16) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.MemberID, r.ErrorCode = memberID, code
	return r
}

// joinResponse is the successful JoinGroup response of the current
// generation; the leader gets every member's metadata.
func (g *classicGroup) joinResponse(m *classicMember, withMembers bool) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.MemberID, r.Generation = m.id, g.generation
	r.Protocol, r.ProtocolType = g.protocolName, g.protocolType
	if g.leader != nil {
		r.LeaderID = *g.leader
	}
	r.Members = []kmsg.JoinGroupResponseMember{}
	if withMembers {
		for _, x := range g.allMembers() {
			r.Members = append(r.Members, kmsg.JoinGroupResponseMember{MemberID: x.id, InstanceID: x.instanceID,
				ProtocolMetadata: x.metadata(deref0(g.protocolName))})
		}
	}
	return r
}

// generateMemberID is ClassicGroup.generateMemberId with a deterministic
// UUID-shaped suffix derived from the group, the time and a counter (core
// takes no entropy); it never returns the id of a current member.
func (c *Coordinator) classicMemberID(g *classicGroup, clientID string, instanceID *string) string {
	prefix := clientID
	if instanceID != nil {
		prefix = *instanceID
	}
	for seq := 0; ; seq++ {
		h := fnv.New128a()
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], uint64(c.now))
		binary.BigEndian.PutUint64(b[8:], uint64(seq)+uint64(len(g.members))<<32+uint64(len(g.pendingJoin))<<48)
		h.Write([]byte(g.id))
		h.Write(b[:])
		s := h.Sum(nil)
		id := fmt.Sprintf("%s-%x-%x-%x-%x-%x", prefix, s[0:4], s[4:6], s[6:8], s[8:10], s[10:16])
		if _, used := g.members[id]; !used && !g.pendingJoin[id] {
			return id
		}
	}
}

// maybePrepareRebalanceOrCompleteJoin (GroupMetadataManager).
func (c *Coordinator) classicMaybeRebalance(g *classicGroup) {
	if g.canRebalance() {
		c.classicPrepareRebalance(g)
	} else {
		c.classicMaybeCompleteJoin(g)
	}
}

// maybeCompleteJoinPhase completes the join phase unless this is the
// initial rebalance or members are missing.
func (c *Coordinator) classicMaybeCompleteJoin(g *classicGroup) {
	if g.state != classicPreparingRebalance || g.previousState == classicEmpty || !g.hasAllMembersJoined() {
		return
	}
	c.completeClassicJoin(g)
}

// prepareRebalance moves the group to PreparingRebalance: members awaiting
// sync get REBALANCE_IN_PROGRESS; an Empty group waits for the initial
// rebalance delay, others for every member up to the rebalance timeout.
func (c *Coordinator) classicPrepareRebalance(g *classicGroup) {
	if g.state == classicCompletingRebalance {
		c.classicResetAndPropagate(g, errRebalanceInProgress)
	}
	c.classicRemoveSyncExpiration(g)
	initial := g.state == classicEmpty
	if initial {
		delay := c.classicConfig(g.id).InitialRebalanceDelayMs
		remaining := g.rebalanceTimeoutMs() - delay
		if remaining < 0 {
			remaining = 0
		}
		g.initialDelayMs, g.initialRemainingMs = delay, remaining
		c.setTimer(timer{key: classicJoinKey(g.id), deadline: c.now + int64(delay), kind: timerClassicInitial, group: g.id})
	}
	g.transitionTo(classicPreparingRebalance, c.now)
	c.emitGroup(EventRebalanceStarted, g.id, "", g.generation)
	if !initial {
		c.classicCompleteJoinElseSchedule(g)
	}
}

func (c *Coordinator) classicCompleteJoinElseSchedule(g *classicGroup) {
	if g.hasAllMembersJoined() {
		c.completeClassicJoin(g)
		return
	}
	c.setTimer(timer{key: classicJoinKey(g.id), deadline: c.now + int64(g.rebalanceTimeoutMs()), kind: timerClassicJoin, group: g.id})
}

// tryCompleteInitialRebalance extends the initial delay while new members
// keep arriving and time remains, then completes the join phase.
func (c *Coordinator) classicTryCompleteInitial(g *classicGroup) {
	if g.newMemberAdd && g.initialRemainingMs != 0 {
		g.newMemberAdd = false
		delay := min(c.classicConfig(g.id).InitialRebalanceDelayMs, g.initialRemainingMs)
		remaining := max(g.initialRemainingMs-g.initialDelayMs, 0)
		g.initialDelayMs, g.initialRemainingMs = delay, remaining
		c.setTimer(timer{key: classicJoinKey(g.id), deadline: c.now + int64(delay), kind: timerClassicInitial, group: g.id})
		return
	}
	c.completeClassicJoin(g)
}

// completeClassicJoin ends the join phase: dynamic members that did not
// rejoin are removed, the generation advances, and every member gets its
// JoinGroup response (an Empty group writes its record instead).
func (c *Coordinator) completeClassicJoin(g *classicGroup) {
	c.cancelTimer(classicJoinKey(g.id))
	for _, m := range g.allMembers() {
		if !m.join.waiting && !m.isStatic() {
			g.remove(m.id)
			c.cancelTimer(classicHeartbeatKey(g.id, m.id))
			c.emitClassicFenced(g, m.id, ReasonRebalanceTimeout)
		}
	}
	if g.state == classicDead {
		return
	}
	if !g.maybeElectNewJoinedLeader() && len(g.members) > 0 {
		// No member rejoined: try again after the rebalance timeout while
		// session timeouts remove the silent members.
		c.setTimer(timer{key: classicJoinKey(g.id), deadline: c.now + int64(g.rebalanceTimeoutMs()), kind: timerClassicJoin, group: g.id})
		return
	}
	g.initNextGeneration(c.now)
	if g.state == classicEmpty {
		c.write(groupMetadataRecord(g, nil))
		c.emitGroup(EventGenerationStored, g.id, ReasonEmpty, g.generation)
		return
	}
	for _, m := range g.allMembers() {
		c.releaseClassic(g, &m.join, g.joinResponse(m, g.isLeader(m.id)))
		c.scheduleClassicHeartbeat(g, m, m.sessionTimeoutMs)
		m.isNew = false
		g.pendingSync[m.id] = true
	}
	c.setTimer(timer{key: classicSyncKey(g.id), deadline: c.now + int64(g.rebalanceTimeoutMs()), kind: timerClassicSync,
		group: g.id, epoch: g.generation})
}

// expireClassicHeartbeat removes a member whose session (or a pending
// member whose join) timed out.
func (c *Coordinator) expireClassicHeartbeat(g *classicGroup, memberID string) {
	if g.state == classicDead {
		return
	}
	if g.pendingJoin[memberID] {
		g.remove(memberID)
		if g.state == classicPreparingRebalance && g.hasAllMembersJoined() {
			c.completeClassicJoin(g)
		}
		return
	}
	m, ok := g.members[memberID]
	if !ok || m.hasSatisfiedHeartbeat() {
		return
	}
	c.classicRemoveAndUpdate(g, m)
}

// removeMemberAndUpdate removes m (answering a parked JoinGroup with
// UNKNOWN_MEMBER_ID) and rebalances or completes the join phase.
func (c *Coordinator) classicRemoveAndUpdate(g *classicGroup, m *classicMember) {
	c.releaseClassic(g, &m.join, classicJoinError("", errUnknownMemberID))
	g.remove(m.id)
	c.emitClassicFenced(g, m.id, ReasonSessionTimeout)
	switch {
	case g.state == classicStable || g.state == classicCompletingRebalance:
		c.classicMaybeRebalance(g)
	case g.state == classicPreparingRebalance && g.hasAllMembersJoined():
		c.completeClassicJoin(g)
	}
}

// resetAndPropagateAssignment clears every assignment and answers parked
// SyncGroups with the error.
func (c *Coordinator) classicResetAndPropagate(g *classicGroup, code int16) {
	for _, m := range g.allMembers() {
		m.assignment = nil
	}
	c.classicPropagate(g, code)
}

// propagateAssignment answers parked SyncGroups with each member's
// assignment (or the error) and restarts their session timers.
func (c *Coordinator) classicPropagate(g *classicGroup, code int16) {
	for _, m := range g.allMembers() {
		r := kmsg.NewPtrSyncGroupResponse()
		r.ErrorCode = code
		r.MemberAssignment = m.assignment
		if r.MemberAssignment == nil {
			r.MemberAssignment = []byte{}
		}
		if code == 0 {
			r.Protocol, r.ProtocolType = g.protocolName, g.protocolType
		}
		if c.releaseClassic(g, &m.sync, r) {
			c.scheduleClassicHeartbeat(g, m, m.sessionTimeoutMs)
		}
	}
}

func (c *Coordinator) classicRemoveSyncExpiration(g *classicGroup) {
	g.pendingSync = map[string]bool{}
	c.cancelTimer(classicSyncKey(g.id))
}

// expirePendingSync removes the members of generation gen that never sent
// SyncGroup, and rebalances.
func (c *Coordinator) classicExpirePendingSync(g *classicGroup, gen int32) {
	if gen != g.generation || (g.state != classicCompletingRebalance && g.state != classicStable) || len(g.pendingSync) == 0 {
		return
	}
	for _, m := range g.allMembers() {
		if g.pendingSync[m.id] {
			g.remove(m.id)
			c.cancelTimer(classicHeartbeatKey(g.id, m.id))
			c.emitClassicFenced(g, m.id, ReasonRebalanceTimeout)
		}
	}
	c.classicPrepareRebalance(g)
}

// classicOnLoaded schedules every loaded member's heartbeat expiration and
// rebalances a group over the size limit (GroupMetadataManager.onLoaded).
func (c *Coordinator) classicOnLoaded(g *classicGroup) {
	for _, m := range g.allMembers() {
		c.scheduleClassicHeartbeat(g, m, m.sessionTimeoutMs)
	}
	if int64(len(g.members)) > int64(c.classicConfig(g.id).MaxSize) {
		c.classicPrepareRebalance(g)
	}
}
