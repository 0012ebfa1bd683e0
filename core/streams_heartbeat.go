package core

import (
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsGroupHeartbeat handles one StreamsGroupHeartbeat request (v0–1) at
// time now. The response comes back in Output.Responses, to be released
// when Output.Records are durable; a heartbeat that triggered an assignor
// run may be parked instead and answered by a later AssignorResult or Tick.
func (c *Coordinator) streamsGroupHeartbeat(now int64, id RequestID, client ClientInfo, req *kmsg.StreamsGroupHeartbeatRequest) Output {
	return c.streamsGroupHeartbeatPrepared(now, id, client, PrepareStreamsHeartbeat(req))
}

// streamsGroupHeartbeatPrepared is streamsGroupHeartbeat for a request
// PrepareStreamsHeartbeat prepared: the same answers, records and timers,
// with the work that reads no group state already done.
func (c *Coordinator) streamsGroupHeartbeatPrepared(now int64, id RequestID, client ClientInfo, p *PreparedStreamsHeartbeat) Output {
	c.begin(now)
	sp := c.savepoint()
	req := p.req
	resp, e := c.streamsHeartbeat(id, client, p)
	if e != nil {
		c.revertTo(sp)
		resp = &kmsg.StreamsGroupHeartbeatResponse{Version: req.Version, MemberID: req.MemberID}
		resp.Default()
		resp.ErrorCode, resp.ErrorMessage = e.code, &e.msg
	}
	if resp != nil {
		c.respond(id, resp)
	}
	return c.end()
}

// savepoint marks the current undo log and record position, so a request
// that fails after writing records can take them back (Kafka builds the
// record list first and drops it on an exception).
type savepoint struct{ undo, records, events, timers int }

func (c *Coordinator) savepoint() savepoint {
	return savepoint{len(c.undo), len(c.out.Records), len(c.out.Events), len(c.out.Timers)}
}

func (c *Coordinator) revertTo(sp savepoint) {
	c.runUndo(sp.undo)
	c.out.Records = c.out.Records[:sp.records]
	c.out.Events = c.out.Events[:sp.events]
	c.out.Timers = c.out.Timers[:sp.timers]
}

func (c *Coordinator) respond(id RequestID, msg kmsg.Response) {
	c.out.Responses = append(c.out.Responses, Response{Request: id, Msg: msg})
}

// hbState carries one heartbeat through its steps; a parked heartbeat keeps
// it until it can finish.
type hbState struct {
	id       RequestID
	req      *kmsg.StreamsGroupHeartbeatRequest
	prep     *PreparedStreamsHeartbeat
	g        *streamsGroup
	member   string
	owned    *ownedTasksReport // nil: not reported
	statuses []kmsg.StreamsGroupHeartbeatResponseStatus
	created  bool // the group was created by this heartbeat
	parked   bool // the heartbeat waited for an assignor result
	orphaned bool // its member was removed while it was parked
	before   *streamsMember
	// hash and validated are the metadata hash and validated topology
	// epoch this heartbeat computed, written if the epoch is bumped.
	hash      int64
	validated int32
	// why is the first change found that requires a new target.
	why EventReason
	// cfg is the group's settings when the heartbeat arrived.
	cfg StreamsConfig
}

// because records the reason for a new target unless one is known.
func (hb *hbState) because(r EventReason) {
	if hb.why == "" {
		hb.why = r
	}
}

// ownedTasksReport is what the member says it owns.
type ownedTasksReport struct{ active, standby, warmup taskSet }

func (c *Coordinator) streamsHeartbeat(id RequestID, client ClientInfo, p *PreparedStreamsHeartbeat) (*kmsg.StreamsGroupHeartbeatResponse, *kafkaError) {
	req := p.req
	cfg := c.streamsConfig(req.Group)
	if e := checkTopologySize(p.entries, cfg.MaxTopologySize); e != nil {
		return nil, e
	}
	p.prepare() // done already unless the topology is over the default bound
	if p.invalid != nil {
		return nil, p.invalid
	}
	if req.MemberEpoch == leaveEpoch || req.MemberEpoch == staticLeaveEpoch {
		return c.streamsLeave(req)
	}
	hb := &hbState{id: id, req: req, prep: p, member: req.MemberID, owned: ownedFromRequest(req), cfg: cfg}
	g, created, e := c.streamsGroupForHeartbeat(req)
	if e != nil {
		return nil, e
	}
	hb.g, hb.created = g, created
	wasEmpty := len(g.members) == 0
	m, e := c.resolveStreamsMember(hb)
	if e != nil {
		return nil, e
	}
	hb.before = m
	recompute, e := c.updateStreamsMember(hb, m, client)
	if e != nil {
		return nil, e
	}
	topoChanged, e := c.maybeStoreTopology(hb)
	if e != nil {
		return nil, e
	}
	r2, e := c.configureAndValidate(hb, topoChanged)
	if e != nil {
		return nil, e
	}
	recompute = recompute || r2
	if recompute {
		c.bumpGroupEpoch(g, hb.hash, hb.validated, c.assignmentConfigs(g.id))
		c.emitEpochBumped(g, hb.why)
	}
	if wasEmpty && cfg.InitialRebalanceDelayMs > 0 {
		c.setTimerIfAbsent(timer{key: initialDelayKey(g.id), deadline: c.now + int64(cfg.InitialRebalanceDelayMs),
			kind: timerStreamsInitialDelay, group: g.id})
	}
	c.scheduleSession(g, hb.member)
	if c.maybeUpdateTarget(hb) {
		c.park(hb)
		return nil, nil
	}
	resp, e := c.finishHeartbeat(hb)
	if created {
		g.forgetSoftState()
	} else if e == nil {
		c.maybeEarlyProbe(g)
	}
	return resp, e
}

// forgetSoftState drops the soft state a group's first heartbeat set. Kafka
// handles that heartbeat on a new, detached group object and materializes
// the group by replaying the records, so what the heartbeat set outside the
// records (configured topology, endpoint epoch, task offsets, shutdown
// request) does not survive it; coordhost does the same.
func (g *streamsGroup) forgetSoftState() {
	g.soft.configured = nil
	g.soft.endpointEpoch = 0
	g.soft.shutdownBy = ""
	g.soft.taskOffsets = nil
}

// ownedFromRequest reads the reported owned tasks, nil when not reported.
func ownedFromRequest(req *kmsg.StreamsGroupHeartbeatRequest) *ownedTasksReport {
	if req.ActiveTasks == nil {
		return nil
	}
	conv := func(ids []kmsg.TaskIDs) taskSet {
		s := taskSet{}
		for _, id := range ids {
			for _, p := range id.Partitions {
				s[TaskID{id.SubtopologyID, p}] = struct{}{}
			}
		}
		return s
	}
	return &ownedTasksReport{active: conv(req.ActiveTasks), standby: conv(req.StandbyTasks), warmup: conv(req.WarmupTasks)}
}

// streamsGroupForHeartbeat finds the group, creating it on a join.
func (c *Coordinator) streamsGroupForHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest) (*streamsGroup, bool, *kafkaError) {
	existing, ok := c.groups[req.Group]
	if req.MemberEpoch != joinEpoch {
		g, isStreams := existing.(*streamsGroup)
		if !ok || !isStreams {
			return nil, false, errf(kerr.GroupIDNotFound, "Streams group %s not found.", req.Group)
		}
		return g, false, nil
	}
	created := false
	switch g := existing.(type) {
	case *streamsGroup:
	case nil:
		if e := c.groupCapReached(req.Group); e != nil {
			return nil, false, e
		}
		c.putGroup(req.Group, newStreamsGroup(req.Group))
		c.emitGroup(EventGroupCreated, req.Group, "", 0)
		created = true
	default:
		conv := groupDeleters[g.Kind()]
		if cg, ok := g.(*classicGroup); ok && !g.IsEmpty() {
			if e := c.upgradeClassicGroup(cg); e != nil { // online migration
				return nil, false, e
			}
			break
		}
		if !g.IsEmpty() || conv == nil {
			return nil, false, errf(kerr.GroupIDNotFound, "Group %s is not a streams group.", req.Group)
		}
		conv(c, g) // writes the tombstones of the empty group
		c.putGroup(req.Group, newStreamsGroup(req.Group))
		c.emitGroup(EventGroupConverted, req.Group, ReasonOfflineToStreams, 0)
		created = true
	}
	g := c.groups[req.Group].(*streamsGroup)
	c.fenceSameProcess(g, req) // online migration
	max := c.streamsConfig(g.id).MaxSize
	_, known := g.members[req.MemberID]
	if req.InstanceID != nil {
		if _, ok := g.staticMembers[*req.InstanceID]; ok {
			known = true
		}
	}
	if !known && int32(len(g.members)) >= max {
		return nil, false, errf(kerr.GroupMaxSizeReached, "The streams group has reached its maximum capacity of %d members.", max)
	}
	return g, created, nil
}

// groupDeleters writes the tombstones that delete an empty group of a kind,
// used when a group id changes protocol (offline migration) and by
// DeleteGroups. Each kind registers its own.
var groupDeleters = map[GroupKind]func(c *Coordinator, g Group){}

// resolveStreamsMember finds (or, on a join, creates) the member and checks
// its epoch and identity.
func (c *Coordinator) resolveStreamsMember(hb *hbState) (*streamsMember, *kafkaError) {
	req, g := hb.req, hb.g
	if req.InstanceID != nil {
		return c.resolveStaticMember(hb)
	}
	m := g.members[req.MemberID]
	if req.MemberEpoch == joinEpoch {
		if m == nil {
			return newStreamsMember(req.MemberID), nil
		}
		return m, nil
	}
	if m == nil {
		return nil, errf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, g.id)
	}
	return m, checkMemberEpoch(m, req.MemberEpoch, hb.owned)
}

// checkMemberEpoch is Kafka's throwIfStreamsGroupMemberEpochIsInvalid.
func checkMemberEpoch(m *streamsMember, epoch int32, owned *ownedTasksReport) *kafkaError {
	if epoch > m.epoch {
		return errf(kerr.FencedMemberEpoch, "The streams group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.epoch)
	}
	if epoch < m.epoch {
		if epoch != m.prevEpoch || owned == nil || !owned.subsetOf(m.assigned) {
			return errf(kerr.FencedMemberEpoch, "The streams group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.epoch)
		}
	}
	return nil
}

func (o *ownedTasksReport) subsetOf(a ownedTasks) bool {
	for t := range o.active {
		if _, ok := a.active[t]; !ok {
			return false
		}
	}
	for t := range o.standby {
		if !a.standby.has(t) {
			return false
		}
	}
	for t := range o.warmup {
		if !a.warmup.has(t) {
			return false
		}
	}
	return true
}

func (c *Coordinator) resolveStaticMember(hb *hbState) (*streamsMember, *kafkaError) {
	req, g := hb.req, hb.g
	oldID, exists := g.staticMembers[*req.InstanceID]
	if req.MemberEpoch == joinEpoch {
		if !exists {
			if m := g.members[req.MemberID]; m != nil {
				return m, nil
			}
			return newStreamsMember(req.MemberID), nil
		}
		old := g.members[oldID]
		// The holder itself at member epoch 0: it joined when a classic
		// group at generation 0 converted, got epoch 0 before the first
		// target, and the Java client sends its epoch (0) again. A new
		// incarnation has a new member id.
		if oldID == req.MemberID && old.epoch == joinEpoch && old.classic == nil {
			return old, nil
		}
		// Online migration: a classic static member may be replaced by a
		// streams one without leaving first (Kafka's KIP-848 rule).
		if old.epoch != staticLeaveEpoch && old.classic == nil {
			return nil, errf(kerr.UnreleasedInstanceID, "Static member %s with instance id %s is not released yet.", oldID, *req.InstanceID)
		}
		// Kafka replaces the member even when the id is unchanged: its
		// records are rewritten from epoch 0 with the tasks it kept.
		return c.replaceStaticMember(g, old, req.MemberID), nil
	}
	if !exists {
		return nil, errf(kerr.UnknownMemberID, "Member with instance id %s is not a member of group %s.", *req.InstanceID, g.id)
	}
	if oldID != req.MemberID {
		return nil, errf(kerr.FencedInstanceID, "Static member %s with instance id %s is fenced by member %s.", req.MemberID, *req.InstanceID, oldID)
	}
	m := g.members[oldID]
	return m, checkMemberEpoch(m, req.MemberEpoch, hb.owned)
}

// replaceStaticMember moves a static member's assignment to a new member id
// (Kafka's replaceStreamsMember): tombstones for the old id, then the new
// member's metadata, its inherited target and its current assignment.
func (c *Coordinator) replaceStaticMember(g *streamsGroup, old *streamsMember, newID string) *streamsMember {
	target, hasTarget := g.target[old.id]
	if !hasTarget {
		target = emptyTuple() // Kafka copies the old target, empty if none
	}
	c.writeMemberTombstones(g, old.id)
	m := old.clone()
	m.id = newID
	m.epoch, m.prevEpoch = 0, 0
	c.write(records.Record{Key: records.StreamsGroupMemberMetadataKey{GroupID: g.id, MemberID: newID}, Value: memberMetadataValue(m)})
	c.write(targetRecord(g.id, newID, target))
	c.write(currentAssignmentRecord(g.id, m))
	c.emit(Event{Kind: EventMemberFenced, Group: g.id, Member: old.id, Reason: ReasonStaticReplacement, Epoch: g.groupEpoch, MemberEpoch: leaveEpoch})
	c.emit(Event{Kind: EventMemberJoined, Group: g.id, Member: newID, Reason: ReasonStaticReplacement, Epoch: g.groupEpoch})
	c.cancelTimer(sessionTimerKey(g.id, old.id))
	c.cancelTimer(rebalanceTimerKey(g.id, old.id))
	return g.members[newID]
}

// writeMemberTombstones writes the three member tombstones in the order
// replay requires.
func (c *Coordinator) writeMemberTombstones(g *streamsGroup, id string) {
	c.write(records.Record{Key: records.StreamsGroupCurrentMemberAssignmentKey{GroupID: g.id, MemberID: id}})
	c.write(records.Record{Key: records.StreamsGroupTargetAssignmentMemberKey{GroupID: g.id, MemberID: id}})
	c.write(records.Record{Key: records.StreamsGroupMemberMetadataKey{GroupID: g.id, MemberID: id}})
}

// updateStreamsMember applies the request's fields with Kafka's "null means
// unchanged" rules and writes the member metadata if it changed. It
// reports whether the change requires a new target assignment.
func (c *Coordinator) updateStreamsMember(hb *hbState, m *streamsMember, client ClientInfo) (bool, *kafkaError) {
	req := hb.req
	u := m.clone()
	if req.InstanceID != nil {
		u.instanceID = req.InstanceID
	}
	if req.RackID != nil {
		u.rackID = req.RackID
	}
	u.clientID, u.clientHost = client.ClientID, client.ClientHost
	if req.RebalanceTimeoutMillis != -1 {
		u.rebalanceTimeoutMs = req.RebalanceTimeoutMillis
	}
	if req.Topology != nil {
		u.topologyEpoch = req.Topology.Epoch
	}
	if req.ProcessID != nil {
		u.processID = *req.ProcessID
	}
	if req.MemberEpoch == joinEpoch {
		u.endpoint = nil
	}
	if req.UserEndpoint != nil {
		u.endpoint = &records.Endpoint{Host: req.UserEndpoint.Host, Port: req.UserEndpoint.Port}
	}
	if req.ClientTags != nil {
		u.clientTags = clientTagsFromRequest(req.ClientTags)
	}
	_, exists := hb.g.members[m.id]
	newVal := memberMetadataValue(u)
	if exists && metadataEqual(memberMetadataValue(m), newVal) {
		return false, nil
	}
	c.write(records.Record{Key: records.StreamsGroupMemberMetadataKey{GroupID: hb.g.id, MemberID: m.id}, Value: newVal})
	if !exists {
		c.emit(Event{Kind: EventMemberJoined, Group: hb.g.id, Member: m.id, Epoch: hb.g.groupEpoch})
		hb.because(ReasonMemberJoined)
		return true, nil
	}
	c.emit(Event{Kind: EventMemberUpdated, Group: hb.g.id, Member: m.id, Epoch: hb.g.groupEpoch, MemberEpoch: m.epoch})
	if u.instanceID != nil && u.topologyEpoch == m.topologyEpoch && ptrEq(u.rackID, m.rackID) &&
		slices.Equal(u.clientTags, m.clientTags) && u.processID == m.processID {
		return false, nil
	}
	hb.because(ReasonMemberUpdated)
	return true, nil
}

// clientTagsFromRequest keeps the last value of each key, sorted by key:
// Kafka holds client tags in a map (a later duplicate wins) and writes them
// in the map's order, which for typical tag keys is the sorted order.
func clientTagsFromRequest(tags []kmsg.StreamsGroupHeartbeatRequestClientTag) []records.KeyValue {
	byKey := map[string]string{}
	for _, t := range tags {
		byKey[t.Key] = t.Value
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]records.KeyValue, len(keys))
	for i, k := range keys {
		out[i] = records.KeyValue{Key: k, Value: byKey[k]}
	}
	return out
}

func memberMetadataValue(m *streamsMember) records.StreamsGroupMemberMetadataValue {
	return records.StreamsGroupMemberMetadataValue{InstanceID: m.instanceID, RackID: m.rackID, ClientID: m.clientID,
		ClientHost: m.clientHost, RebalanceTimeoutMs: m.rebalanceTimeoutMs, TopologyEpoch: m.topologyEpoch,
		ProcessID: m.processID, UserEndpoint: m.endpoint, ClientTags: nonNil(m.clientTags), Classic: m.classic}
}

func metadataEqual(a, b records.StreamsGroupMemberMetadataValue) bool {
	return ptrEq(a.InstanceID, b.InstanceID) && ptrEq(a.RackID, b.RackID) && a.ClientID == b.ClientID &&
		a.ClientHost == b.ClientHost && a.RebalanceTimeoutMs == b.RebalanceTimeoutMs &&
		a.TopologyEpoch == b.TopologyEpoch && a.ProcessID == b.ProcessID &&
		ptrEq(a.UserEndpoint, b.UserEndpoint) && slices.Equal(a.ClientTags, b.ClientTags) &&
		a.Classic.Equal(b.Classic)
}

func ptrEq[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// maybeStoreTopology stores the topology of the first member, accepts an
// older one (STALE_TOPOLOGY), and rejects a changed one. The topology was
// digested by PrepareStreamsHeartbeat: the comparison with the stored one
// is a comparison of digests.
func (c *Coordinator) maybeStoreTopology(hb *hbState) (bool, *kafkaError) {
	p, g := hb.prep, hb.g
	if p.req.Topology == nil {
		return false, nil
	}
	switch epoch := p.req.Topology.Epoch; {
	case g.topology == nil:
		c.write(records.Record{Key: records.StreamsGroupTopologyKey{GroupID: g.id}, Value: topologyFromRequest(p.req.Topology)})
		g.topoDigest = storedTopologyDigest{of: g.topology, sum: p.digest}
		c.emitGroup(EventTopologyStored, g.id, "", epoch)
		return true, nil
	case g.topology.Epoch > epoch:
		return false, nil
	case g.storedDigest() != p.digest:
		return false, errf(kerr.InvalidRequest, "Topology updates are not supported yet.")
	}
	return false, nil
}

// configureAndValidate (re)configures the topology against topic metadata
// when needed, validates reported tasks, stores task offsets, and reports
// whether the group needs a new assignment.
func (c *Coordinator) configureAndValidate(hb *hbState, topoChanged bool) (bool, *kafkaError) {
	g := hb.g
	recompute := false
	if g.topology != nil && (topoChanged || g.soft.configured == nil || g.soft.metadataRefresh ||
		g.soft.configured.epoch != g.topology.Epoch) {
		hash := c.groupMetadataHash(g.requiredTopics())
		if hash != g.metadataHash {
			recompute = true
			hb.because(ReasonMetadataChanged)
		}
		g.soft.configured = c.configureTopology(g.id, g.topology)
		g.soft.metadataRefresh = false
		hb.hash = hash
	} else {
		hb.hash = g.metadataHash
	}
	ct := g.soft.configured
	if ct != nil && ct.invalid != "" {
		return false, errf(kerr.StreamsInvalidTopology, "%s", ct.invalid)
	}
	validated := int32(-1)
	if ct.ready() {
		validated = g.topology.Epoch
		if e := validateOwnedTasks(ct, hb.req); e != nil {
			return false, e
		}
	}
	if validated != g.validatedTopologyEpoch {
		recompute = true
		hb.because(ReasonTopologyChanged)
	}
	hb.validated = validated
	c.storeTaskOffsets(g, hb.member, hb.req)
	if !assignmentConfigsAre(hb.cfg, g.lastAssignmentConfigs) {
		recompute = true
		hb.because(ReasonConfigChanged)
	}
	return recompute, nil
}

// validateOwnedTasks rejects reported tasks the configured topology lacks,
// checking the active, standby and warm-up lists in request order as
// Kafka's throwIfRequestContainsInvalidTasks does.
func validateOwnedTasks(ct *configuredTopology, req *kmsg.StreamsGroupHeartbeatRequest) *kafkaError {
	for _, list := range [][]kmsg.TaskIDs{req.ActiveTasks, req.StandbyTasks, req.WarmupTasks} {
		for _, ids := range list {
			sub := ct.subtopology(ids.SubtopologyID)
			if sub == nil {
				return errf(kerr.InvalidRequest, "Subtopology %s does not exist in the topology.", ids.SubtopologyID)
			}
			for _, p := range ids.Partitions {
				if p < 0 || p >= sub.numTasks {
					return errf(kerr.InvalidRequest, "Task %d for subtopology %s is invalid. Number of tasks for this subtopology: %d", p, ids.SubtopologyID, sub.numTasks)
				}
			}
		}
	}
	return nil
}

// The keys of the assignment configs.
const (
	configStandbys = "num.standby.replicas"
	configRackTags = "rack.aware.assignment.tags"
)

// assignmentConfigs are the settings whose change triggers a reassignment,
// as Kafka records them (sorted keys; tags only when configured).
func (c *Coordinator) assignmentConfigs(group string) []records.KeyValue {
	cfg := c.streamsConfig(group)
	out := []records.KeyValue{{Key: configStandbys, Value: strconv.Itoa(int(cfg.NumStandbyReplicas))}}
	if len(cfg.RackAwareAssignmentTags) > 0 {
		out = append(out, records.KeyValue{Key: configRackTags, Value: strings.Join(cfg.RackAwareAssignmentTags, ",")})
	}
	return out
}

// assignmentConfigsAre reports whether kv is what assignmentConfigs gives
// for cfg, building nothing (every heartbeat asks).
func assignmentConfigsAre(cfg StreamsConfig, kv []records.KeyValue) bool {
	tags := cfg.RackAwareAssignmentTags
	n := 1
	if len(tags) > 0 {
		n = 2
	}
	if len(kv) != n || kv[0].Key != configStandbys || kv[0].Value != strconv.Itoa(int(cfg.NumStandbyReplicas)) {
		return false
	}
	if n == 1 {
		return true
	}
	v := kv[1].Value
	if kv[1].Key != configRackTags {
		return false
	}
	for i, t := range tags {
		if i > 0 {
			if !strings.HasPrefix(v, ",") {
				return false
			}
			v = v[1:]
		}
		if !strings.HasPrefix(v, t) {
			return false
		}
		v = v[len(t):]
	}
	return v == ""
}

// bumpGroupEpoch writes the group metadata with epoch+1 and the given
// hash, validated topology epoch and assignment configs.
func (c *Coordinator) bumpGroupEpoch(g *streamsGroup, hash int64, validated int32, configs []records.KeyValue) {
	c.write(records.Record{Key: g.metadataKey(), Value: records.StreamsGroupMetadataValue{
		Epoch: g.groupEpoch + 1, MetadataHash: hash, ValidatedTopologyEpoch: validated,
		LastAssignmentConfigs: configs, StoredDescriptionTopologyEpoch: g.storedDescEpoch,
		FailedDescriptionTopologyEpoch: g.failedDescEpoch,
	}})
}
