package core

import (
	"fmt"
	"slices"
	"sort"

	"github.com/coordhost/coordhost/core/records"
	"github.com/coordhost/coordhost/core/userdata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Bridging: classic JoinGroup / SyncGroup / Heartbeat / LeaveGroup from
// classic members of a streams group (Kafka's classicGroupJoinToConsumerGroup
// and friends, for Kafka Streams: assignments are AssignmentInfo, not empty
// userdata). The assignment is computed by the coordinator; no member is
// leader. See docs/MIGRATION.md.

// Migration timer kinds (classic members of streams groups).
const (
	timerMigrationJoin timerKind = 32 // migration-join-<group>-<member>: fence if no JoinGroup in time
	timerMigrationSync timerKind = 33 // migration-sync-<group>-<member>: fence if no SyncGroup in time
	// timerMigrationSyncRestored is a sync timer Loaded arms for a classic
	// member (same key as timerMigrationSync): the log does not say whether
	// the member was between JoinGroup and SyncGroup at the fail-over, so
	// every non-revoking classic member gets one; its SyncGroup, JoinGroup
	// or a valid Heartbeat (it is alive) settles it.
	timerMigrationSyncRestored timerKind = 34
	// timerMigrationPending is a member id handed out with MEMBER_ID_REQUIRED
	// (migration-pending-<group>-<member>); it expires after the JoinGroup's
	// session timeout, like a classic group's pending member.
	timerMigrationPending timerKind = 35
)

func init() {
	fence := func(c *Coordinator, t timer) {
		if g, ok := c.groups[t.group].(*streamsGroup); ok {
			if m := g.members[t.member]; m != nil && m.classic != nil {
				c.fenceMember(g, t.member, EventMemberFenced, ReasonJoinTimeout)
			}
		}
	}
	registerTimerKind(timerMigrationJoin, fence)
	registerTimerKind(timerMigrationSync, fence)
	registerTimerKind(timerMigrationSyncRestored, fence)
	registerTimerKind(timerMigrationPending, func(*Coordinator, timer) {}) // the id is forgotten
}

// bridgeJoin handles a JoinGroup for a non-empty streams group: it
// validates the subscription, identifies the member, fences the
// streams-protocol members of its process, stores its metadata and bumps
// the group epoch if the assignment must change. When that starts an
// assignor run, the response waits for its result (up to AssignorWaitMs,
// like a streams heartbeat): Kafka's classicGroupJoinToConsumerGroup
// computes the new target inside the join, so the member gets the new
// epoch in this response instead of a SyncGroup REBALANCE_IN_PROGRESS
// and another JoinGroup round. It returns nil when the response waits.
func (c *Coordinator) bridgeJoin(g *streamsGroup, id RequestID, client ClientInfo, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	sub, ep, refused := c.bridgeSubscription(g, req)
	if refused != nil {
		return refused
	}
	m, refused := c.bridgeIdentify(g, client, req)
	if refused != nil {
		return refused
	}
	// The same-process rule, downgrade direction: a classic join of
	// process P fences P's streams-protocol members that missed two
	// heartbeats — the instance that stopped without leaving the group
	// (docs/MIGRATION.md).
	process := processIDString(sub.info.ProcessID)
	fenced := c.fenceProcessMembers(g, process, m.id, false, 2*int64(c.streamsConfig(g.id).HeartbeatIntervalMs))
	c.awaitRegroup(g, process, true, max(fenced, c.returningMembers(g, process, m.id)))
	_, exists := g.members[m.id]
	u := bridgeUpdatedMember(m, client, req, sub, ep)
	c.bridgeStoreMember(g, m, u, exists)
	c.storeClassicOffsets(g, u.id, sub.info)
	c.bridgeMaybeBump(g, m, u, exists)
	c.scheduleSession(g, u.id)
	c.cancelTimer(migrationJoinKey(g.id, u.id)) // it rejoined, even if its answer waits
	j := &bridgedJoin{id: id, version: req.Version, g: g, member: u.id, exists: exists, sub: sub}
	// A join that leaves only classic members waits for its target like
	// any other (a restarted process's threads for each other,
	// migration_regroup.go); the group converts once it has settled.
	if wait, _ := c.updateTargetIfDue(g, u.id); wait {
		c.parkRequest(g, id, parkedHeartbeat{join: j})
		return nil
	}
	return c.finishBridgeJoin(j)
}

// bridgedJoin is a classic member's JoinGroup between storing the member
// and reconciling it, kept while it waits for an assignor result.
type bridgedJoin struct {
	id        RequestID
	version   int16
	g         *streamsGroup
	member    string
	exists    bool // the member was in the group before this join
	sub       *classicSubscription
	orphaned  bool // the member was removed while the join waited
	converted bool // the group converts back to classic (releaseParkedAtConversion)
}

// resumeBridgeJoin answers a join that waited for the assignor: finished
// against the target now installed, or UNKNOWN_MEMBER_ID if its member is
// gone. A group converted back to classic meanwhile answers with the
// member's last epoch, as an unparked join did before the conversion (its
// SyncGroup then finds the classic group rebalancing).
func (c *Coordinator) resumeBridgeJoin(j *bridgedJoin) *kmsg.JoinGroupResponse {
	var r *kmsg.JoinGroupResponse
	m := j.g.members[j.member]
	switch live, _ := c.groups[j.g.id].(*streamsGroup); {
	case m == nil || m.classic == nil || j.orphaned:
		r = classicJoinError(j.member, errUnknownMemberID)
	case live != j.g || j.converted:
		r = bridgeJoinResponse(m)
	default:
		r = c.finishBridgeJoin(j)
	}
	r.Version = j.version
	return r
}

// finishBridgeJoin reconciles the joined member, arms its SyncGroup timer
// and answers with its epoch as the generation.
func (c *Coordinator) finishBridgeJoin(j *bridgedJoin) *kmsg.JoinGroupResponse {
	g := j.g
	c.bridgeReconcile(g, j.member, j.exists, j.sub)
	u := g.members[j.member]
	c.setTimer(timer{key: migrationSyncKey(g.id, u.id), deadline: c.now + int64(u.rebalanceTimeoutMs),
		kind: timerMigrationSync, group: g.id, member: u.id})
	r := bridgeJoinResponse(u)
	// A classic-only group whose last member just reconciled converts
	// (also after a classic static member replaced the last
	// streams-protocol member: Kafka's
	// validateOnlineDowngradeWithReplacedMember); the member's SyncGroup
	// then gets its tasks from the Stable classic group.
	c.maybeDowngrade(g)
	if cur, ok := c.groups[g.id].(*streamsGroup); ok && cur == g {
		// A classic (probing) rejoin reports fresh offset sums: the core's
		// probing rule decides whether a caught-up warm-up is worth a probe
		// (docs/WARMUPS.md §2.2), as after a streams heartbeat.
		c.maybeEarlyProbe(g)
	}
	return r
}

// bridgeJoinResponse is the JoinGroup answer of a classic member of a
// streams group: its epoch as the generation, no leader, no members.
func bridgeJoinResponse(m *streamsMember) *kmsg.JoinGroupResponse {
	r := kmsg.NewPtrJoinGroupResponse()
	r.MemberID, r.Generation = m.id, m.epoch
	pt, pn := consumerProtocolType, streamProtocolName
	r.ProtocolType, r.Protocol = &pt, &pn
	r.Members = []kmsg.JoinGroupResponseMember{}
	return r
}

// bridgeSubscription checks that the policy lets classic members join and
// decodes the member's Kafka Streams subscription and endpoint; a refusal
// comes back as the JoinGroup response.
func (c *Coordinator) bridgeSubscription(g *streamsGroup, req *kmsg.JoinGroupRequest) (*classicSubscription, *records.Endpoint, *kmsg.JoinGroupResponse) {
	if p := c.migrationPolicy(g.id); p == MigrationDisabled {
		return nil, nil, classicJoinError("", errInconsistentProtocol)
	}
	var meta []byte
	for _, p := range req.Protocols {
		if p.Name == streamProtocolName {
			meta = p.Metadata
		}
	}
	if req.ProtocolType != consumerProtocolType || meta == nil {
		return nil, nil, classicJoinError("", errInconsistentProtocol)
	}
	sub, err := decodeClassicSubscription(meta)
	if err != nil {
		return nil, nil, classicJoinError("", errInconsistentProtocol)
	}
	ep, err := parseEndpoint(sub.info.UserEndPoint)
	if err != nil {
		return nil, nil, classicJoinError("", errInconsistentProtocol)
	}
	return sub, ep, nil
}

// bridgeIdentify finds the joining member. A static member is found by
// instance id: an empty member id replaces it (across protocols too); a
// non-empty one must be its current id (FENCED_INSTANCE_ID) and an unknown
// instance with a non-empty id is UNKNOWN_MEMBER_ID (Kafka's
// getOrMaybeSubscribeStaticConsumerGroupMember). A dynamic member with a
// member id must be a member, or hold an id this group handed out with
// MEMBER_ID_REQUIRED (pending): any other id belongs to a member the group
// fenced, whose client may still run tasks that now belong to others, so it
// gets UNKNOWN_MEMBER_ID — the Java client then drops its tasks
// (onPartitionsLost) and rejoins without an id (docs/MIGRATION.md, "A
// fenced member rejoins"). Refusals (also MEMBER_ID_REQUIRED,
// GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID for a streams-protocol member's
// id) come back as the JoinGroup response.
func (c *Coordinator) bridgeIdentify(g *streamsGroup, client ClientInfo, req *kmsg.JoinGroupRequest) (*streamsMember, *kmsg.JoinGroupResponse) {
	id, refused := c.bridgeJoinIdentity(g.id, client, req, g.staticMembers, g.sortedMemberIDs(), func(id string) (bool, bool) {
		m := g.members[id]
		return m != nil, m != nil && m.classic != nil
	}, c.streamsConfig(g.id).MaxSize)
	switch {
	case refused != nil:
		return nil, refused
	case id.replaces != "":
		return c.replaceStaticMember(g, g.members[id.replaces], id.id), nil
	case g.members[id.id] == nil:
		return newStreamsMember(id.id), nil
	}
	return g.members[id.id], nil
}

// bridgeJoinID is who a bridged JoinGroup names: an existing member, a new
// one, or a new member id taking a static member's place.
type bridgeJoinID struct {
	id       string
	replaces string // the replaced static member's id, "" if none
}

// bridgeJoinIdentity applies the bridge's member-id rules (above) to a
// group of either kind: static maps instance ids to member ids, ids are
// the members, member says whether an id is a member and a classic one,
// max bounds the members.
func (c *Coordinator) bridgeJoinIdentity(group string, client ClientInfo, req *kmsg.JoinGroupRequest, static map[string]string,
	ids []string, member func(id string) (exists, classic bool), max int32) (bridgeJoinID, *kmsg.JoinGroupResponse) {
	memberID := req.MemberID
	taken := func(id string) bool { exists, _ := member(id); return exists }
	size := int32(len(ids))
	if req.InstanceID != nil {
		old, ok := static[*req.InstanceID]
		switch {
		case ok && memberID == old:
			return bridgeJoinID{id: old}, nil
		case ok && memberID != "":
			return bridgeJoinID{}, classicJoinError(memberID, errFencedInstanceID)
		case ok:
			return bridgeJoinID{id: c.bridgeMemberID(group, ids, client.ClientID, req.InstanceID), replaces: old}, nil
		case memberID != "":
			return bridgeJoinID{}, classicJoinError(memberID, errUnknownMemberID)
		}
	}
	if memberID == "" {
		memberID = c.bridgeMemberID(group, ids, client.ClientID, req.InstanceID)
		if req.InstanceID == nil && req.Version >= 4 {
			c.setTimer(timer{key: migrationPendingKey(group, memberID), deadline: c.now + int64(req.SessionTimeoutMillis),
				kind: timerMigrationPending, group: group, member: memberID})
			return bridgeJoinID{}, classicJoinError(memberID, errMemberIDRequired)
		}
	} else if !taken(memberID) && !c.hasTimer(migrationPendingKey(group, memberID)) {
		return bridgeJoinID{}, classicJoinError(memberID, errUnknownMemberID)
	}
	exists, classic := member(memberID)
	switch {
	case !exists && size >= max:
		return bridgeJoinID{}, classicJoinError("", errGroupMaxSizeReached)
	case !exists:
		c.cancelTimer(migrationPendingKey(group, memberID)) // a member now
	case !classic:
		return bridgeJoinID{}, classicJoinError(memberID, errUnknownMemberID)
	}
	return bridgeJoinID{id: memberID}, nil
}

// bridgeUpdatedMember is m with the JoinGroup's metadata.
func bridgeUpdatedMember(m *streamsMember, client ClientInfo, req *kmsg.JoinGroupRequest, sub *classicSubscription, ep *records.Endpoint) *streamsMember {
	u := m.clone()
	u.instanceID, u.rackID = req.InstanceID, sub.consumer.Rack
	u.clientID, u.clientHost = client.ClientID, client.ClientHost
	u.rebalanceTimeoutMs = req.RebalanceTimeoutMillis
	u.processID, u.endpoint = processIDString(sub.info.ProcessID), ep
	u.clientTags = []records.KeyValue{}
	for _, t := range sub.info.ClientTags {
		u.clientTags = append(u.clientTags, records.KeyValue{Key: t.Key, Value: t.Value})
	}
	protos := make([]records.ClassicProtocol, len(req.Protocols))
	for i, p := range req.Protocols {
		protos[i] = records.ClassicProtocol{Name: p.Name, Metadata: append([]byte{}, p.Metadata...)}
	}
	u.classic = &records.ClassicMemberMetadata{SessionTimeoutMs: req.SessionTimeoutMillis, SupportedProtocols: protos}
	return u
}

// bridgeStoreMember writes the member's metadata if it is new or changed.
func (c *Coordinator) bridgeStoreMember(g *streamsGroup, m, u *streamsMember, exists bool) {
	if exists && metadataEqual(memberMetadataValue(m), memberMetadataValue(u)) {
		return
	}
	c.write(records.Record{Key: records.StreamsGroupMemberMetadataKey{GroupID: g.id, MemberID: u.id}, Value: memberMetadataValue(u)})
	kind := EventMemberUpdated
	if !exists {
		kind = EventMemberJoined
	}
	c.emit(Event{Kind: kind, Group: g.id, Member: u.id, Epoch: g.groupEpoch, MemberEpoch: m.epoch})
}

// bridgeMaybeBump bumps the group epoch when the join changes what the
// assignor sees: a new member; a changed process, endpoint, rack or client
// tags (a Streams rejoin always changes its metadata bytes — uniqueField,
// offset sums — so changed metadata alone does not count); changed topic
// metadata, validated topology or assignment configs.
func (c *Coordinator) bridgeMaybeBump(g *streamsGroup, m, u *streamsMember, exists bool) {
	var why EventReason
	switch {
	case !exists:
		why = ReasonMemberJoined
	case u.processID != m.processID || !ptrEq(u.endpoint, m.endpoint) ||
		!ptrEq(u.rackID, m.rackID) || !slices.Equal(u.clientTags, m.clientTags):
		why = ReasonMemberUpdated
	}
	hash, validated := c.refreshTopologyView(g)
	switch {
	case why != "":
	case hash != g.metadataHash:
		why = ReasonMetadataChanged
	case validated != g.validatedTopologyEpoch:
		why = ReasonTopologyChanged
	case !slices.Equal(c.assignmentConfigs(g.id), g.lastAssignmentConfigs):
		why = ReasonConfigChanged
	}
	if why != "" {
		c.bumpGroupEpoch(g, hash, validated, c.assignmentConfigs(g.id))
		c.emitEpochBumped(g, why)
	}
}

// bridgeReconcile moves the member toward its target from what its
// subscription says it owns.
func (c *Coordinator) bridgeReconcile(g *streamsGroup, id string, exists bool, sub *classicSubscription) {
	cur := g.members[id]
	owned := c.classicOwned(g, cur, sub)
	next, e := g.reconcile(cur, owned)
	if e != nil {
		// A member in an unknown state starts over from nothing.
		next = g.nextAssignment(cur, g.assignmentEpoch, &ownedTasksReport{active: taskSet{}, standby: taskSet{}, warmup: taskSet{}})
	}
	if !sameAssignment(next, cur) || !exists {
		c.write(currentAssignmentRecord(g.id, next))
		c.emitReconciled(g, next)
	}
}

// refreshTopologyView reconfigures the group's topology against the topic
// metadata when the streams heartbeat path would (configureAndValidate),
// and returns the metadata hash and validated topology epoch to record.
func (c *Coordinator) refreshTopologyView(g *streamsGroup) (int64, int32) {
	if g.topology == nil {
		return g.metadataHash, -1
	}
	hash := g.metadataHash
	if g.soft.configured == nil || g.soft.metadataRefresh || g.soft.configured.epoch != g.topology.Epoch {
		hash = c.groupMetadataHash(g.requiredTopics())
		g.soft.configured = c.configureTopology(g.id, g.topology)
		g.soft.metadataRefresh = false
	}
	if g.soft.configured.ready() {
		return hash, g.topology.Epoch
	}
	return hash, -1
}

// bridgeMemberID generates a member id the way classic groups do, for a
// group holding the member ids ids.
func (c *Coordinator) bridgeMemberID(group string, ids []string, clientID string, instanceID *string) string {
	tmp := newClassicGroup(group)
	for _, id := range ids {
		tmp.members[id] = &classicMember{id: id}
	}
	return c.classicMemberID(tmp, clientID, instanceID)
}

// storeClassicOffsets keeps the member's task offset sums (running actives,
// -2, are omitted as streams-protocol members omit them; v1–6 standbys'
// unknown sums, -3, too). Classic members never send end offsets: their
// lags use the group's host-supplied end offsets (UpdateEndOffsets), like
// every member's. A task without a known end offset is never caught up.
func (c *Coordinator) storeClassicOffsets(g *streamsGroup, member string, info *userdata.SubscriptionInfo) {
	o := g.soft.taskOffsets[member]
	o.offsets = map[TaskID]int64{}
	for _, t := range info.TaskOffsetSums {
		if t.OffsetSum >= 0 {
			o.offsets[classicTaskID(t.Task)] = t.OffsetSum
		}
	}
	o.endOffsets = nil
	g.putTaskOffsets(member, o)
}

// classicOwned is what a classic member reports owning in its JoinGroup:
// active tasks from its owned partitions (via the topology) and, for
// subscriptions without owned partitions (v0), its running actives (-2);
// standbys and warm-ups it still holds are those of its current assignment
// (not those pending revocation) for which it reports an offset sum.
func (c *Coordinator) classicOwned(g *streamsGroup, m *streamsMember, sub *classicSubscription) *ownedTasksReport {
	o := &ownedTasksReport{active: taskSet{}, standby: taskSet{}, warmup: taskSet{}}
	bySource := map[string]string{}
	if g.topology != nil {
		for _, s := range g.topology.Subtopologies {
			for _, t := range s.SourceTopics {
				bySource[t] = s.SubtopologyID
			}
			for _, t := range s.RepartitionSourceTopics {
				bySource[t.Name] = s.SubtopologyID
			}
		}
	}
	for _, tp := range sub.consumer.OwnedPartitions {
		if sid, ok := bySource[tp.Topic]; ok {
			for _, p := range tp.Partitions {
				o.active[TaskID{sid, p}] = struct{}{}
			}
		}
	}
	sums := sub.info.OffsetSums()
	for t, s := range sums {
		id := classicTaskID(t)
		if s == userdata.LatestOffset && sub.consumer.Version == 0 {
			o.active[id] = struct{}{}
		}
		// Only tasks still assigned count: Kafka Streams reports an offset
		// sum for every task directory on disk, and the directory of a
		// standby or warm-up it has closed stays there (until the state
		// cleaner runs, 10 min by default). A pending (revoked) standby or
		// warm-up was left out of its SyncGroup answer, and the client
		// closes it while handling that answer, before it can rejoin;
		// counting its sum as ownership would leave the member
		// UNREVOKED_TASKS forever.
		if s != userdata.LatestOffset {
			if m.assigned.standby.has(id) {
				o.standby[id] = struct{}{}
			}
			if m.assigned.warmup.has(id) {
				o.warmup[id] = struct{}{}
			}
		}
	}
	return o
}

// bridgeMember finds and validates the classic member of a SyncGroup or
// Heartbeat: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID or ILLEGAL_GENERATION.
func bridgeMember(g *streamsGroup, memberID string, instanceID *string, generation int32) (*streamsMember, int16) {
	m := g.members[memberID]
	if instanceID != nil {
		id, ok := g.staticMembers[*instanceID]
		if !ok {
			return nil, errUnknownMemberID
		}
		if id != memberID {
			return nil, errFencedInstanceID
		}
	}
	if m == nil || m.classic == nil {
		return nil, errUnknownMemberID
	}
	if generation != m.epoch {
		return nil, errIllegalGeneration
	}
	return m, 0
}

// mustRejoin says whether a classic member must rejoin now: behind the
// assignment epoch, revoking, or waiting for tasks that are now free.
func (g *streamsGroup) mustRejoin(m *streamsMember) bool {
	switch {
	case m.epoch < g.assignmentEpoch && m.state != memberUnrevokedTasks:
		return true
	case m.state == memberUnrevokedTasks:
		return true
	case m.state == memberUnreleasedTasks:
		for t := range g.target[m.id].active {
			if _, has := m.assigned.active[t]; !has && !g.activeWithheld(m, t) {
				return true
			}
		}
	}
	return false
}

func (c *Coordinator) setJoinTimerIfAbsent(g *streamsGroup, m *streamsMember) {
	c.setTimerIfAbsent(timer{key: migrationJoinKey(g.id, m.id), deadline: c.now + int64(m.rebalanceTimeoutMs),
		kind: timerMigrationJoin, group: g.id, member: m.id})
}

// bridgeSync handles a SyncGroup from a classic member of a streams group.
func (c *Coordinator) bridgeSync(g *streamsGroup, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	m, code := bridgeMember(g, req.MemberID, req.InstanceID, req.Generation)
	if code != 0 {
		return syncError(code)
	}
	if (req.ProtocolType != nil && *req.ProtocolType != consumerProtocolType) || (req.Protocol != nil && *req.Protocol != streamProtocolName) {
		return syncError(errInconsistentProtocol)
	}
	if g.assignmentEpoch > m.epoch && m.state != memberUnrevokedTasks {
		c.setJoinTimerIfAbsent(g, m)
		return syncError(errRebalanceInProgress)
	}
	c.cancelTimer(migrationSyncKey(g.id, m.id))
	c.scheduleSession(g, m.id)
	b, err := c.classicAssignment(g, m)
	if err != nil {
		return syncError(errInconsistentProtocol)
	}
	r := kmsg.NewPtrSyncGroupResponse()
	pt, pn := consumerProtocolType, streamProtocolName
	r.ProtocolType, r.Protocol, r.MemberAssignment = &pt, &pn, b
	return r
}

// bridgeHeartbeat handles a Heartbeat from a classic member of a streams
// group. A heartbeat that finds the group's target being computed (an
// assignor run in flight, often one it started itself) waits for it, as
// a streams heartbeat or a bridged JoinGroup does (up to AssignorWaitMs):
// Kafka computes a due target inside the request that finds it due, so
// the answer already says REBALANCE_IN_PROGRESS when the new target puts
// the member behind. Answered before the run, the member would learn of
// the target only at its next heartbeat, one heartbeat interval later.
// waits reports that the answer comes later (releaseParked).
func (c *Coordinator) bridgeHeartbeat(g *streamsGroup, id RequestID, req *kmsg.HeartbeatRequest) (code int16, waits bool) {
	m, code := bridgeMember(g, req.MemberID, req.InstanceID, req.Generation)
	if code != 0 {
		return code, false
	}
	c.scheduleSession(g, m.id)
	if k := migrationSyncKey(g.id, m.id); c.timers[k].kind == timerMigrationSyncRestored {
		c.cancelTimer(k) // alive after the fail-over: the restored sync timer has done its job
	}
	// Refresh the topology view first, as a streams heartbeat does: a view
	// configured by Loaded before the topic metadata arrived would compute
	// an empty target ("topology not ready") that nothing corrects later.
	c.bridgeMaybeBump(g, m, m, true)
	c.updateTargetIfDue(g, m.id)
	if g.soft.inflight != nil && !g.soft.inflight.Probe && c.cfg.AssignorWaitMs > 0 && !g.mustRejoin(m) {
		c.parkRequest(g, id, parkedHeartbeat{classic: &bridgedHeartbeat{id: id, req: req}})
		return 0, true
	}
	return c.bridgeHeartbeatAnswer(g, m), false
}

// bridgedHeartbeat is a classic member's Heartbeat waiting for the
// target being computed.
type bridgedHeartbeat struct {
	id  RequestID
	req *kmsg.HeartbeatRequest
}

// bridgeHeartbeatAnswer is the answer to a valid classic Heartbeat:
// REBALANCE_IN_PROGRESS (and a join timer) when the member must rejoin,
// else NONE — after converting a classic-only group that can convert.
func (c *Coordinator) bridgeHeartbeatAnswer(g *streamsGroup, m *streamsMember) int16 {
	if g.mustRejoin(m) {
		c.setJoinTimerIfAbsent(g, m)
		return errRebalanceInProgress
	}
	// A classic-only group that settled, or whose departed process's
	// memory lapsed, converts here: the member is at the new classic
	// generation, so the answer stays NONE.
	c.maybeDowngrade(g)
	return 0
}

// resumeBridgeHeartbeat answers a classic Heartbeat that waited for a
// target, validated and answered against the group as it is now, as
// Kafka would have had it arrived in this order. It does not convert a
// settled classic-only group, as an unparked NONE answer does: it runs
// while parked requests are being released, and a conversion releases
// them too (releaseParkedAtConversion); the member's next Heartbeat or
// JoinGroup converts it. A group no longer this streams group answers as
// whatever the group now is (a conversion answers its parked requests
// first, so this is a safeguard).
func (c *Coordinator) resumeBridgeHeartbeat(g *streamsGroup, h *bridgedHeartbeat) *kmsg.HeartbeatResponse {
	if live, ok := c.groups[g.id].(*streamsGroup); !ok || live != g {
		return heartbeatResponse(h.req, c.plainClassicHeartbeat(h.req))
	}
	m, code := bridgeMember(g, h.req.MemberID, h.req.InstanceID, h.req.Generation)
	if code == 0 && g.mustRejoin(m) {
		c.setJoinTimerIfAbsent(g, m)
		code = errRebalanceInProgress
	}
	return heartbeatResponse(h.req, code)
}

// bridgeLeave handles a LeaveGroup on a non-empty streams group: each
// named member (by id, or by instance id) is fenced; the last
// streams-protocol member leaving may downgrade the group.
func (c *Coordinator) bridgeLeave(g *streamsGroup, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := kmsg.NewPtrLeaveGroupResponse()
	members := req.Members
	if req.Version < 3 {
		members = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	for _, lm := range members {
		r := kmsg.LeaveGroupResponseMember{MemberID: lm.MemberID, InstanceID: lm.InstanceID}
		id, code := leavingMemberID(g.staticMembers, lm)
		r.ErrorCode = code
		cur, ok := c.groups[g.id].(*streamsGroup)
		if r.ErrorCode == 0 && (!ok || cur.members[id] == nil) {
			r.ErrorCode = errUnknownMemberID
		}
		if r.ErrorCode == 0 {
			process := cur.members[id].processID
			c.noteDeparture(cur.id, process)
			c.fenceMember(cur, id, EventMemberLeft, ReasonLeave)
			c.departFromProcess(cur, process)
		}
		resp.Members = append(resp.Members, r)
	}
	return resp
}

// leavingMemberID is the member a LeaveGroup entry names: by member id,
// or by instance id (UNKNOWN_MEMBER_ID if unknown, FENCED_INSTANCE_ID if a
// member id is given and differs).
func leavingMemberID(static map[string]string, lm kmsg.LeaveGroupRequestMember) (string, int16) {
	if lm.InstanceID == nil {
		return lm.MemberID, 0
	}
	sid, ok := static[*lm.InstanceID]
	switch {
	case !ok:
		return sid, errUnknownMemberID
	case lm.MemberID != "" && lm.MemberID != sid:
		return sid, errFencedInstanceID
	}
	return sid, 0
}

// classicAssignment encodes a member's current tasks as a ConsumerProtocol
// assignment carrying AssignmentInfo at the group's negotiated version.
func (c *Coordinator) classicAssignment(g *streamsGroup, m *streamsMember) ([]byte, error) {
	subs := []*userdata.SubscriptionInfo{}
	var own *classicSubscription
	for _, id := range g.sortedMemberIDs() {
		x := g.members[id]
		if x.classic == nil {
			continue
		}
		s, err := decodeClassicSubscription(x.classic.ProtocolMetadata(streamProtocolName))
		if err != nil {
			continue // validated on JoinGroup; a bad record is not the client's fault
		}
		subs = append(subs, s.info)
		if id == m.id {
			own = s
		}
	}
	if own == nil {
		return nil, fmt.Errorf("member %s has no readable subscription", m.id)
	}
	n := userdata.Negotiate(subs)
	hbMs := int64(c.streamsConfig(g.id).HeartbeatIntervalMs)
	ct := g.soft.configured
	if g.topology != nil && (ct == nil || !ct.ready() || g.soft.metadataRefresh || ct.epoch != g.topology.Epoch) {
		// A stale view (e.g. configured by Loaded before the topic
		// metadata arrived): configure afresh for this answer only, so a
		// classic member never gets an empty assignment by mistake; the
		// next heartbeat or JoinGroup refreshes the group's view (and
		// bumps the epoch if the metadata changed).
		ct = c.configureTopology(g.id, g.topology)
	}
	info := &userdata.AssignmentInfo{Version: n.Version, CommonlySupportedVersion: n.CommonlySupported,
		NextRebalanceMs: userdata.NoRebalance}
	var parts []userdata.TopicPartition
	if !ct.ready() {
		// Internal topics being created (or metadata missing): nothing yet,
		// come back after a heartbeat interval. errCode 1 would shut the
		// Java client down.
		info.NextRebalanceMs = c.now + hbMs
	} else {
		tasks := map[userdata.TaskID][]userdata.TopicPartition{}
		for t := range m.assigned.active {
			ut, tps, ok := c.classicTaskPartitions(ct, t)
			if ok {
				tasks[ut] = tps
			}
		}
		var err error
		parts, info.ActiveTasks, err = userdata.ActiveTaskList(tasks)
		if err != nil {
			return nil, err
		}
		passive := taskSet{}
		for t := range m.assigned.standby {
			passive[t] = struct{}{}
		}
		for t := range m.assigned.warmup {
			passive[t] = struct{}{}
		}
		for _, t := range passive.sorted() {
			if ut, tps, ok := c.classicTaskPartitions(ct, t); ok {
				info.StandbyTasks = append(info.StandbyTasks, userdata.StandbyTask{Task: ut, Partitions: tps})
			}
		}
		info.PartitionsByHost, info.StandbyPartitionsByHost = c.classicHostMaps(g, ct)
		if probe, ok := c.timerDeadline(probeKey(g.id)); ok {
			// Come back with fresh offset sums when the next probe runs
			// (Kafka Streams' nextScheduledRebalanceMs, for every member).
			info.NextRebalanceMs = max(probe, c.now)
		}
		if m.state == memberUnreleasedTasks && (info.NextRebalanceMs == userdata.NoRebalance || c.now+hbMs < info.NextRebalanceMs) {
			info.NextRebalanceMs = c.now + hbMs // withheld tasks: come back for them
		}
	}
	if info.Version < 7 && info.NextRebalanceMs != userdata.NoRebalance {
		info.NextRebalanceMs = userdata.NoRebalance // not representable; Heartbeat REBALANCE_IN_PROGRESS does it
	}
	ub, err := info.Encode()
	if err != nil {
		return nil, err
	}
	return userdata.EncodeAssignment(&kmsg.ConsumerMemberAssignment{Version: own.consumer.Version,
		Topics: userdata.AssignmentTopics(parts), UserData: ub})
}

// classicTaskPartitions maps a streams task to its classic id and source
// partitions; tasks of non-numeric subtopologies have no classic form.
func (c *Coordinator) classicTaskPartitions(ct *configuredTopology, t TaskID) (userdata.TaskID, []userdata.TopicPartition, bool) {
	ut, err := userdata.TaskIDFromSubtopology(t.Subtopology, t.Partition)
	if err != nil {
		return ut, nil, false
	}
	var tps []userdata.TopicPartition
	for topic, ps := range c.taskPartitions(ct, taskSet{t: {}}) {
		for _, p := range ps {
			tps = append(tps, userdata.TopicPartition{Topic: topic, Partition: p})
		}
	}
	userdata.SortPartitions(tps)
	return ut, tps, true
}

// classicHostMaps builds partitionsByHost and standbyPartitionsByHost: one
// entry per endpoint (union over the members sharing it), empty ones too.
func (c *Coordinator) classicHostMaps(g *streamsGroup, ct *configuredTopology) (active, standby []userdata.HostPartitions) {
	type acc struct {
		a, s map[userdata.TopicPartition]bool
	}
	byEP := map[records.Endpoint]*acc{}
	for _, id := range g.sortedMemberIDs() {
		m := g.members[id]
		if m.endpoint == nil {
			continue
		}
		e := byEP[*m.endpoint]
		if e == nil {
			e = &acc{a: map[userdata.TopicPartition]bool{}, s: map[userdata.TopicPartition]bool{}}
			byEP[*m.endpoint] = e
		}
		add := func(dst map[userdata.TopicPartition]bool, tasks taskSet) {
			for topic, ps := range c.taskPartitions(ct, tasks) {
				for _, p := range ps {
					dst[userdata.TopicPartition{Topic: topic, Partition: p}] = true
				}
			}
		}
		add(e.a, m.assigned.active.set())
		add(e.s, m.assigned.standby)
		add(e.s, m.assigned.warmup)
	}
	eps := make([]records.Endpoint, 0, len(byEP))
	for ep := range byEP {
		eps = append(eps, ep)
	}
	sort.Slice(eps, func(i, j int) bool {
		if eps[i].Host != eps[j].Host {
			return eps[i].Host < eps[j].Host
		}
		return eps[i].Port < eps[j].Port
	})
	list := func(s map[userdata.TopicPartition]bool) []userdata.TopicPartition {
		out := []userdata.TopicPartition{}
		for tp := range s {
			out = append(out, tp)
		}
		userdata.SortPartitions(out)
		return out
	}
	for _, ep := range eps {
		active = append(active, userdata.HostPartitions{Host: ep.Host, Port: int32(ep.Port), Partitions: list(byEP[ep].a)})
		standby = append(standby, userdata.HostPartitions{Host: ep.Host, Port: int32(ep.Port), Partitions: list(byEP[ep].s)})
	}
	return active, standby
}

// bridgeCommit validates an OffsetCommit or TxnOffsetCommit of a classic
// member of a streams group (any version, as Kafka allows classic members
// of consumer groups): its generation must be its member epoch
// (ILLEGAL_GENERATION otherwise, as Kafka's bridge answers). A valid
// commit restarts the member's session timer.
func (c *Coordinator) bridgeCommit(g *streamsGroup, m *streamsMember, generation int32) int16 {
	if generation != m.epoch {
		return errIllegalGeneration
	}
	if c.out != nil {
		c.scheduleSession(g, m.id)
	}
	return 0
}
