package core

import (
	"encoding/base64"
	"encoding/binary"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// consumerGroupHeartbeat handles one consumerGroupHeartbeat request (v0–1)
// at time now, as Kafka 4.4's GroupMetadataManager.consumerGroupHeartbeat.
// The target assignment is computed inline by the group's server assignor
// (ConsumerConfig.Assignors), so the response is always in
// Output.Responses, to be released when Output.Records are durable.
func (c *Coordinator) consumerGroupHeartbeat(now int64, id RequestID, client ClientInfo, req *kmsg.ConsumerGroupHeartbeatRequest) Output {
	c.begin(now)
	sp := c.savepoint()
	resp, e := c.consumerHeartbeat(client, req)
	if e != nil {
		c.revertTo(sp)
		resp = kmsg.NewPtrConsumerGroupHeartbeatResponse()
		resp.Version = req.Version
		resp.ErrorCode, resp.ErrorMessage = e.code, &e.msg
	}
	c.respond(id, resp)
	return c.end()
}

// validateConsumerHeartbeat is Kafka's
// throwIfConsumerGroupHeartbeatRequestIsInvalid (a regex is checked when
// it is new to the group, updateConsumerRegex).
func (c *Coordinator) validateConsumerHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) *kafkaError {
	empty := func(s *string) bool { return s != nil && *s == "" }
	if (req.Version >= 1 || req.MemberEpoch > 0 || req.MemberEpoch == leaveEpoch) && req.MemberID == "" {
		return errf(kerr.InvalidRequest, "MemberId can't be empty.")
	}
	switch {
	case req.Group == "":
		return errf(kerr.InvalidRequest, "GroupId can't be empty.")
	case empty(req.InstanceID):
		return errf(kerr.InvalidRequest, "InstanceId can't be empty.")
	case empty(req.RackID):
		return errf(kerr.InvalidRequest, "RackId can't be empty.")
	}
	switch {
	case req.MemberEpoch == joinEpoch:
		if req.RebalanceTimeoutMillis == -1 {
			return errf(kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request.")
		}
		if req.Topics == nil || len(req.Topics) != 0 {
			return errf(kerr.InvalidRequest, "TopicPartitions must be empty when (re-)joining.")
		}
		if req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil {
			return errf(kerr.InvalidRequest, "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.")
		}
	case req.MemberEpoch == staticLeaveEpoch:
		if req.InstanceID == nil {
			return errf(kerr.InvalidRequest, "InstanceId can't be null.")
		}
	case req.MemberEpoch < staticLeaveEpoch:
		return errf(kerr.InvalidRequest, "MemberEpoch is invalid.")
	}
	if req.ServerAssignor != nil {
		if _, ok := c.consumerAssignor(*req.ServerAssignor); !ok {
			return errf(kerr.UnsupportedAssignor, "ServerAssignor %s is not supported. Supported assignors: %s.",
				*req.ServerAssignor, strings.Join(c.consumerAssignorNames(), ", "))
		}
	}
	if len(c.cfg.Consumer.Assignors) == 0 {
		return errf(kerr.UnsupportedAssignor, "No server assignor is configured for consumer groups.")
	}
	return nil
}

// consumerHB carries one heartbeat through its steps.
type consumerHB struct {
	req    *kmsg.ConsumerGroupHeartbeatRequest
	g      *consumerGroup
	before *consumerMember // the member before this heartbeat (a fresh one on a join)
	owned  partSet         // nil: not reported
}

func (c *Coordinator) consumerHeartbeat(client ClientInfo, req *kmsg.ConsumerGroupHeartbeatRequest) (*kmsg.ConsumerGroupHeartbeatResponse, *kafkaError) {
	if e := c.validateConsumerHeartbeat(req); e != nil {
		return nil, e
	}
	if req.MemberEpoch == leaveEpoch || req.MemberEpoch == staticLeaveEpoch {
		return c.consumerLeave(req)
	}
	if req.MemberID == "" { // v0 join: the coordinator names the member
		r := *req
		r.MemberID = c.consumerMemberID(req.Group)
		req = &r
	}
	g, e := c.consumerGroupForHeartbeat(req)
	if e != nil {
		return nil, e
	}
	hb := &consumerHB{req: req, g: g, owned: c.ownedFromConsumerRequest(req)}
	m, e := c.resolveConsumerMember(hb)
	if e != nil {
		return nil, e
	}
	hb.before = m
	hadRegexes := len(g.usedRegexes()) > 0
	subChanged := c.updateConsumerMember(hb, m, client)
	resolve, e := c.updateConsumerRegex(g, m, hadRegexes)
	if e != nil {
		return nil, e
	}
	c.maybeBumpConsumerEpoch(g, subChanged)
	c.setTimer(timer{key: consumerSessionKey(g.id, req.MemberID), deadline: c.now + int64(c.consumerGroupConfig(g.id).SessionTimeoutMs),
		kind: timerConsumerSession, group: g.id, member: req.MemberID})
	if c.consumerTargetDue(g) {
		if e := c.updateConsumerTarget(g); e != nil {
			return nil, e
		}
	}
	after := c.reconcileConsumer(g, g.members[req.MemberID], hb.owned, subChanged)
	resp := c.consumerResponse(hb, after)
	if resolve {
		c.resolveConsumerRegexes(g, client.DescribableTopic)
	}
	return resp, nil
}

// maybeBumpConsumerEpoch bumps the group epoch when a member's
// subscription changed or the subscribed topics' metadata hash did.
func (c *Coordinator) maybeBumpConsumerEpoch(g *consumerGroup, subChanged bool) {
	bump := subChanged
	hash := g.metadataHash
	if bump || g.metadataRefresh {
		hash = c.groupMetadataHash(g.subscribedTopics())
		if g.metadataRefresh {
			g.metadataRefresh = false
			c.onUndo(func() { g.metadataRefresh = true })
		}
		if hash != g.metadataHash {
			bump = true
		}
	}
	if !bump {
		return
	}
	c.write(records.Record{Key: records.ConsumerGroupMetadataKey{GroupID: g.id}, Value: records.ConsumerGroupMetadataValue{
		Epoch: g.groupEpoch + 1, MetadataHash: hash, CreationTimeMs: g.creationTimeMs}})
	why := ReasonMetadataChanged
	if subChanged {
		why = ReasonMemberUpdated
	}
	c.emit(Event{Kind: EventEpochBumped, Group: g.id, Reason: why, Epoch: g.groupEpoch})
}

// consumerMemberID generates a member id for a v0 join (Kafka: a random
// UUID); it is derived from the group and the time, as core takes no
// entropy, and never names a current member.
func (c *Coordinator) consumerMemberID(group string) string {
	g, _ := c.groups[group].(*consumerGroup)
	for seq := uint64(0); ; seq++ {
		h := fnv.New128a()
		var b [16]byte
		binary.BigEndian.PutUint64(b[:8], uint64(c.now))
		binary.BigEndian.PutUint64(b[8:], seq)
		h.Write([]byte(group))
		h.Write(b[:])
		id := base64.RawURLEncoding.EncodeToString(h.Sum(nil))
		if g == nil || g.members[id] == nil {
			return id
		}
	}
}

// ownedFromConsumerRequest reads the reported owned partitions, nil when
// not reported.
func (c *Coordinator) ownedFromConsumerRequest(req *kmsg.ConsumerGroupHeartbeatRequest) partSet {
	if req.Topics == nil {
		return nil
	}
	s := partSet{}
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			s[topicPart{t.TopicID, p}] = struct{}{}
		}
	}
	return s
}

// consumerGroupForHeartbeat finds the group, creating it on a join (an
// empty group of another kind is converted, as Kafka's offline migration).
func (c *Coordinator) consumerGroupForHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) (*consumerGroup, *kafkaError) {
	existing, ok := c.groups[req.Group]
	if g, isConsumer := existing.(*consumerGroup); isConsumer {
		return g, c.checkConsumerGroupSize(g, req)
	}
	if cg, classic := existing.(*classicGroup); classic && !cg.IsEmpty() && req.MemberEpoch == joinEpoch {
		g, e := c.upgradeToConsumerGroup(cg) // online migration
		if e != nil {
			return nil, e
		}
		return g, c.checkConsumerGroupSize(g, req)
	}
	if req.MemberEpoch != joinEpoch || (ok && !existing.IsEmpty()) {
		if !ok {
			return nil, errf(kerr.GroupIDNotFound, "Group %s not found.", req.Group)
		}
		return nil, errf(kerr.GroupIDNotFound, "Group %s is not a consumer group.", req.Group)
	}
	if ok {
		del := groupDeleters[existing.Kind()]
		if del == nil {
			return nil, errf(kerr.GroupIDNotFound, "Group %s is not a consumer group.", req.Group)
		}
		del(c, existing) // offline conversion of an empty group
		for _, key := range c.timerKeysOfGroup(req.Group) {
			c.cancelTimer(key)
		}
		c.emitGroup(EventGroupConverted, req.Group, ReasonOfflineToConsumer, 0)
	} else {
		if e := c.groupCapReached(req.Group); e != nil {
			return nil, e
		}
		c.emitGroup(EventGroupCreated, req.Group, "", 0)
	}
	g := newConsumerGroup(req.Group)
	c.putGroup(req.Group, g)
	return g, nil
}

// checkConsumerGroupSize is Kafka's throwIfConsumerGroupIsFull.
func (c *Coordinator) checkConsumerGroupSize(g *consumerGroup, req *kmsg.ConsumerGroupHeartbeatRequest) *kafkaError {
	max := c.consumerConfig().MaxSize
	if _, known := g.members[req.MemberID]; known || int32(len(g.members)) < max {
		return nil
	}
	if req.InstanceID != nil {
		if _, ok := g.staticMembers[*req.InstanceID]; ok {
			return nil
		}
	}
	return errf(kerr.GroupMaxSizeReached, "The consumer group has reached its maximum capacity of %d members.", max)
}

// resolveConsumerMember finds (or, on a join, creates) the member and checks
// its epoch and identity (Kafka's getOrMaybeSubscribe*ConsumerGroupMember).
func (c *Coordinator) resolveConsumerMember(hb *consumerHB) (*consumerMember, *kafkaError) {
	req, g := hb.req, hb.g
	if req.InstanceID != nil {
		return c.resolveStaticConsumerMember(hb)
	}
	m := g.members[req.MemberID]
	if req.MemberEpoch == joinEpoch {
		if m == nil {
			return newConsumerMember(req.MemberID), nil
		}
		return m, nil
	}
	if m == nil {
		return nil, errf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", req.MemberID, g.id)
	}
	return m, checkConsumerMemberEpoch(m, req.MemberEpoch, hb.owned)
}

func (c *Coordinator) resolveStaticConsumerMember(hb *consumerHB) (*consumerMember, *kafkaError) {
	req, g := hb.req, hb.g
	oldID, exists := g.staticMembers[*req.InstanceID]
	if req.MemberEpoch == joinEpoch {
		if !exists {
			if m := g.members[req.MemberID]; m != nil {
				return m, nil
			}
			return newConsumerMember(req.MemberID), nil
		}
		old := g.members[oldID]
		// A classic member's place may be taken over at once (Kafka checks
		// the release only between two consumer-protocol members).
		if old.epoch != staticLeaveEpoch && old.classic == nil {
			return nil, errf(kerr.UnreleasedInstanceID, "Static member %s with instance id %s cannot join the group because the instance id is owned by %s member.",
				req.MemberID, *req.InstanceID, oldID)
		}
		return c.replaceConsumerStaticMember(g, old, req.MemberID), nil
	}
	if !exists {
		return nil, errf(kerr.UnknownMemberID, "Instance id %s is unknown.", *req.InstanceID)
	}
	if oldID != req.MemberID {
		return nil, errf(kerr.FencedInstanceID, "Static member %s with instance id %s was fenced by member %s.", req.MemberID, *req.InstanceID, oldID)
	}
	m := g.members[oldID]
	return m, checkConsumerMemberEpoch(m, req.MemberEpoch, hb.owned)
}

// checkConsumerMemberEpoch is Kafka's throwIfConsumerGroupMemberEpochIsInvalid:
// an older epoch is accepted only if it is the previous epoch and the
// member owns a subset of its assignment (the bumped response was lost).
func checkConsumerMemberEpoch(m *consumerMember, epoch int32, owned partSet) *kafkaError {
	if epoch > m.epoch {
		return errf(kerr.FencedMemberEpoch, "The consumer group member has a greater member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.epoch)
	}
	if epoch < m.epoch {
		subset := owned != nil
		for tp := range owned {
			if _, ok := m.assigned[tp]; !ok {
				subset = false
				break
			}
		}
		if epoch != m.prevEpoch || !subset {
			return errf(kerr.FencedMemberEpoch, "The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d). The member must abandon all its partitions and rejoin.", epoch, m.epoch)
		}
	}
	return nil
}

// replaceConsumerStaticMember moves a static member's place to a new member
// id (Kafka's replaceMember): tombstones for the old id, then the new
// member's metadata, its inherited target and current assignment at epoch 0.
func (c *Coordinator) replaceConsumerStaticMember(g *consumerGroup, old *consumerMember, newID string) *consumerMember {
	target := g.target[old.id]
	if target == nil {
		target = partSet{}
	}
	c.writeConsumerMemberTombstones(g, old.id)
	m := old.clone()
	m.id = newID
	m.epoch, m.prevEpoch = 0, 0
	c.write(records.Record{Key: records.ConsumerGroupMemberMetadataKey{GroupID: g.id, MemberID: newID}, Value: consumerMetadataValue(m)})
	c.write(records.Record{Key: records.ConsumerGroupTargetAssignmentMemberKey{GroupID: g.id, MemberID: newID},
		Value: records.ConsumerGroupTargetAssignmentMemberValue{TopicPartitions: target.toTopicPartitions()}})
	c.write(consumerAssignmentRecord(g.id, m))
	c.emit(Event{Kind: EventMemberFenced, Group: g.id, Member: old.id, Reason: ReasonStaticReplacement, Epoch: g.groupEpoch, MemberEpoch: leaveEpoch})
	c.emit(Event{Kind: EventMemberJoined, Group: g.id, Member: newID, Reason: ReasonStaticReplacement, Epoch: g.groupEpoch})
	c.cancelTimer(consumerSessionKey(g.id, old.id))
	c.cancelTimer(consumerRebalanceKey(g.id, old.id))
	return g.members[newID]
}

// writeConsumerMemberTombstones writes the three member tombstones in the
// order replay requires.
func (c *Coordinator) writeConsumerMemberTombstones(g *consumerGroup, id string) {
	c.write(records.Record{Key: records.ConsumerGroupCurrentMemberAssignmentKey{GroupID: g.id, MemberID: id}})
	c.write(records.Record{Key: records.ConsumerGroupTargetAssignmentMemberKey{GroupID: g.id, MemberID: id}})
	c.write(records.Record{Key: records.ConsumerGroupMemberMetadataKey{GroupID: g.id, MemberID: id}})
}

// updateConsumerMember applies the request's fields with Kafka's "null
// means unchanged" rules and writes the member metadata if it changed. It
// reports whether the subscribed topic names or regex changed (a group
// epoch bump).
func (c *Coordinator) updateConsumerMember(hb *consumerHB, m *consumerMember, client ClientInfo) bool {
	req, g := hb.req, hb.g
	u := m.updated(req.InstanceID, req.RackID, req.RebalanceTimeoutMillis)
	if req.ServerAssignor != nil {
		u.serverAssignor = req.ServerAssignor
	}
	if req.SubscribedTopicNames != nil {
		u.topics = normalizeTopics(req.SubscribedTopicNames)
	}
	if req.SubscribedTopicRegex != nil {
		u.regex = req.SubscribedTopicRegex
	}
	u.clientID, u.clientHost = client.ClientID, client.ClientHost
	u.classic = nil // a consumer-protocol heartbeat
	_, exists := g.members[m.id]
	newVal := consumerMetadataValue(u)
	if exists && consumerMetadataEqual(consumerMetadataValue(m), newVal) {
		return false
	}
	c.write(records.Record{Key: records.ConsumerGroupMemberMetadataKey{GroupID: g.id, MemberID: m.id}, Value: newVal})
	if !exists {
		c.emit(Event{Kind: EventMemberJoined, Group: g.id, Member: m.id, Epoch: g.groupEpoch})
	} else {
		c.emit(Event{Kind: EventMemberUpdated, Group: g.id, Member: m.id, Epoch: g.groupEpoch, MemberEpoch: m.epoch})
	}
	return !slices.Equal(u.topics, m.topics) || !ptrEq(u.regex, m.regex)
}

// updated is a copy of m with the given fields, where set (Kafka's
// maybeUpdate*: null and -1 mean unchanged).
func (m *consumerMember) updated(instanceID, rackID *string, rebalanceTimeoutMs int32) *consumerMember {
	u := m.clone()
	if instanceID != nil {
		u.instanceID = instanceID
	}
	if rackID != nil {
		u.rackID = rackID
	}
	if rebalanceTimeoutMs != -1 {
		u.rebalanceTimeoutMs = rebalanceTimeoutMs
	}
	return u
}

func consumerMetadataValue(m *consumerMember) records.ConsumerGroupMemberMetadataValue {
	return records.ConsumerGroupMemberMetadataValue{InstanceID: m.instanceID, RackID: m.rackID, ClientID: m.clientID,
		ClientHost: m.clientHost, SubscribedTopicNames: m.topics, SubscribedTopicRegex: m.regex,
		RebalanceTimeoutMs: m.rebalanceTimeoutMs, ServerAssignor: m.serverAssignor, Classic: m.classic}
}

func consumerMetadataEqual(a, b records.ConsumerGroupMemberMetadataValue) bool {
	return ptrEq(a.InstanceID, b.InstanceID) && ptrEq(a.RackID, b.RackID) && a.ClientID == b.ClientID &&
		a.ClientHost == b.ClientHost && slices.Equal(a.SubscribedTopicNames, b.SubscribedTopicNames) &&
		ptrEq(a.SubscribedTopicRegex, b.SubscribedTopicRegex) && a.RebalanceTimeoutMs == b.RebalanceTimeoutMs &&
		ptrEq(a.ServerAssignor, b.ServerAssignor) && a.Classic.Equal(b.Classic)
}

// consumerResponse builds the heartbeat response; the assignment is sent
// when the member joins, sends a full request, or its assignment changed.
func (c *Coordinator) consumerResponse(hb *consumerHB, m *consumerMember) *kmsg.ConsumerGroupHeartbeatResponse {
	req := hb.req
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version = req.Version
	id := m.id
	resp.MemberID = &id
	resp.MemberEpoch = m.epoch
	resp.HeartbeatIntervalMillis = c.consumerGroupConfig(req.Group).HeartbeatIntervalMs
	full := req.RebalanceTimeoutMillis != -1 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil
	if req.MemberEpoch == joinEpoch || full || !hb.before.assigned.set().equal(m.assigned.set()) {
		a := &kmsg.ConsumerGroupHeartbeatResponseAssignment{Topics: []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}}
		for _, tp := range m.assigned.toTopicPartitions() {
			a.Topics = append(a.Topics, kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{TopicID: tp.TopicID, Partitions: tp.Partitions})
		}
		resp.Assignment = a
	}
	return resp
}
