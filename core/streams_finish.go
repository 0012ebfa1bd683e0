package core

import (
	"fmt"
	"sort"
	"strings"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// finishHeartbeat reconciles the member toward the current target, resets
// its timers and builds the response (steps 11–12 of Kafka's heartbeat).
func (c *Coordinator) finishHeartbeat(hb *hbState) (*kmsg.StreamsGroupHeartbeatResponse, *kafkaError) {
	g, req := hb.g, hb.req
	if g.soft.slices != nil {
		// A heartbeat not parked on the result being written (no assignor
		// wait, a delay or interval holding the assignment back) sees all
		// of it, never a part (streams_target_slices.go).
		c.writeTargetSlices(g, true)
	}
	m := g.members[hb.member]
	updated, e := g.reconcile(m, hb.owned)
	if e != nil {
		return nil, e
	}
	if !sameAssignment(updated, m) {
		c.write(currentAssignmentRecord(g.id, updated))
		c.emitReconciled(g, updated)
		if updated.state == memberUnrevokedTasks {
			c.setTimer(timer{key: rebalanceTimerKey(g.id, m.id), deadline: c.now + int64(updated.rebalanceTimeoutMs),
				kind: timerStreamsRebalance, group: g.id, member: m.id, epoch: updated.epoch})
		} else {
			c.cancelTimer(rebalanceTimerKey(g.id, m.id))
		}
	}
	m = g.members[hb.member]
	cfg := c.streamsConfig(g.id)
	if hb.parked {
		c.scheduleSession(g, m.id)
	}
	if req.ShutdownApplication {
		g.soft.shutdownBy = m.id
	}
	resp := &kmsg.StreamsGroupHeartbeatResponse{Version: req.Version}
	resp.Default()
	resp.MemberID, resp.MemberEpoch = m.id, m.epoch
	resp.HeartbeatIntervalMillis = c.answeredInterval(g, cfg, m)
	resp.TaskOffsetIntervalMillis = cfg.TaskOffsetIntervalMs
	if req.Version >= 1 {
		resp.AcceptableRecoveryLag = cfg.AcceptableRecoveryLag
	}
	tasksChanged := hb.before != m && !hb.before.assigned.sameTasks(m.assigned)
	if req.MemberEpoch == joinEpoch || tasksChanged || fullRequest(req) {
		resp.ActiveTasks = kmsgTasks(m.assigned.active.set())
		resp.StandbyTasks = kmsgTasks(m.assigned.standby)
		resp.WarmupTasks = kmsgTasks(m.assigned.warmup)
	}
	if !ptrEq(hb.before.endpoint, m.endpoint) || tasksChanged && m.endpoint != nil {
		g.soft.endpointEpoch++
	}
	if !hb.created {
		resp.EndpointInformationEpoch = g.soft.endpointEpoch
	}
	if req.EndpointInformationEpoch != g.soft.endpointEpoch {
		resp.PartitionsByUserEndpoint = c.partitionsByEndpoint(g)
	}
	resp.Status = c.heartbeatStatuses(g, m, hb, cfg.RackAwareAssignmentTags)
	return resp, nil
}

// heartbeatInterval is the interval answered to m by the waiting member's
// rule (answeredInterval combines it with the roll's, streams_roll.go).
// Kafka 4.4 answers the configured one to every member. With streams.unreleased.heartbeat.interval.ms
// set (a deliberate difference, docs/RATIONALE.md), a member waiting for
// tasks other members still hold (UNRELEASED_TASKS: they are granted at
// its first heartbeat after their owners released them) is answered the
// shorter of the two, so it learns of a release sooner; once it holds its
// target, or waits for nothing but its own revocation, it is answered the
// configured interval again. The Java client takes the interval from every
// answer (updateHeartbeatIntervalMs), so the change is in effect from the
// answer that carries it.
func heartbeatInterval(cfg StreamsConfig, m *streamsMember) int32 {
	if u := cfg.UnreleasedHeartbeatIntervalMs; u > 0 && m.state == memberUnreleasedTasks && u < cfg.HeartbeatIntervalMs {
		return max(u, MinUnreleasedHeartbeatIntervalMs)
	}
	return cfg.HeartbeatIntervalMs
}

// heartbeatStatuses lists the statuses of a successful heartbeat.
func (c *Coordinator) heartbeatStatuses(g *streamsGroup, m *streamsMember, hb *hbState, rackTags []string) []kmsg.StreamsGroupHeartbeatResponseStatus {
	out := []kmsg.StreamsGroupHeartbeatResponseStatus{}
	if g.topology != nil && m.topologyEpoch < g.topology.Epoch {
		out = append(out, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: statusStaleTopology,
			StatusDetail: fmt.Sprintf("The member's topology epoch %d is behind the group's topology epoch %d.", m.topologyEpoch, g.topology.Epoch)})
	}
	out = append(out, hb.statuses...) // ASSIGNMENT_DELAYED, added while updating the target
	if ct := g.soft.configured; ct != nil && ct.statusCode >= 0 {
		out = append(out, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: ct.statusCode, StatusDetail: ct.statusDetail})
		if ct.statusCode == statusMissingInternal {
			c.out.TopicsToCreate = append(c.out.TopicsToCreate, ct.toCreate...)
		}
	}
	if g.soft.shutdownBy != "" {
		out = append(out, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: statusShutdownApplication,
			StatusDetail: fmt.Sprintf("Streams group member %s encountered a fatal error and requested a shutdown for the entire application.", g.soft.shutdownBy)})
	}
	if missing := missingClientTags(rackTags, m.clientTags); hb.req.Version >= 1 && len(missing) > 0 {
		out = append(out, kmsg.StreamsGroupHeartbeatResponseStatus{StatusCode: statusMissingClientTags,
			StatusDetail: fmt.Sprintf("Missing required client tags for rack-aware standby assignment: [%s]. Configure them via 'client.tag.<tagKey>' in your Streams config.",
				strings.Join(missing, ", "))})
	}
	return out
}

// missingClientTags lists the configured rack-aware tag keys a member lacks.
func missingClientTags(required []string, tags []records.KeyValue) []string {
	var missing []string
	for _, k := range required {
		found := false
		for _, t := range tags {
			if t.Key == k {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, k)
		}
	}
	return missing
}

func kmsgTasks(s taskSet) []kmsg.TaskIDs {
	out := []kmsg.TaskIDs{}
	for _, ids := range toTaskIDs(s) {
		out = append(out, kmsg.TaskIDs{SubtopologyID: ids.SubtopologyID, Partitions: ids.Partitions})
	}
	return out
}

func currentAssignmentRecord(group string, m *streamsMember) records.Record {
	return records.Record{Key: records.StreamsGroupCurrentMemberAssignmentKey{GroupID: group, MemberID: m.id}, Value: records.StreamsGroupCurrentMemberAssignmentValue{
		MemberEpoch: m.epoch, PreviousMemberEpoch: m.prevEpoch, State: int8(m.state),
		ActiveTasks: epochsToTaskIDs(m.assigned.active), StandbyTasks: toTaskIDs(m.assigned.standby),
		WarmupTasks:                  toTaskIDs(m.assigned.warmup),
		ActiveTasksPendingRevocation: epochsToTaskIDs(m.pending.active), StandbyTasksPendingRevocation: toTaskIDs(m.pending.standby),
		WarmupTasksPendingRevocation: toTaskIDs(m.pending.warmup),
	}}
}

// partitionsByEndpoint lists, per member with an endpoint, the source and
// repartition-source partitions of its active tasks and of its standby and
// warm-up tasks.
func (c *Coordinator) partitionsByEndpoint(g *streamsGroup) []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint {
	out := []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{}
	ct := g.soft.configured
	for _, id := range g.sortedMemberIDs() {
		m := g.members[id]
		if m.endpoint == nil {
			continue
		}
		e := kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpoint{UserEndpoint: kmsg.Endpoint{Host: m.endpoint.Host, Port: m.endpoint.Port}}
		passive := taskSet{}
		for t := range m.assigned.standby {
			passive[t] = struct{}{}
		}
		for t := range m.assigned.warmup {
			passive[t] = struct{}{}
		}
		for topic, parts := range c.taskPartitions(ct, m.assigned.active.set()) {
			e.ActivePartitions = append(e.ActivePartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{Topic: topic, Partitions: parts})
		}
		for topic, parts := range c.taskPartitions(ct, passive) {
			e.StandbyPartitions = append(e.StandbyPartitions, kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{Topic: topic, Partitions: parts})
		}
		sort.Slice(e.ActivePartitions, func(i, j int) bool { return e.ActivePartitions[i].Topic < e.ActivePartitions[j].Topic })
		sort.Slice(e.StandbyPartitions, func(i, j int) bool { return e.StandbyPartitions[i].Topic < e.StandbyPartitions[j].Topic })
		if e.ActivePartitions == nil {
			e.ActivePartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointActivePartition{}
		}
		if e.StandbyPartitions == nil {
			e.StandbyPartitions = []kmsg.StreamsGroupHeartbeatResponsePartitionsByUserEndpointStandbyPartition{}
		}
		out = append(out, e)
	}
	return out
}

// taskPartitions maps tasks to the partitions of their input topics that
// exist (a partition below the topic's own count).
func (c *Coordinator) taskPartitions(ct *configuredTopology, tasks taskSet) map[string][]int32 {
	out := map[string][]int32{}
	if !ct.ready() {
		return out
	}
	for _, t := range tasks.sorted() {
		s := ct.subtopology(t.Subtopology)
		if s == nil {
			continue
		}
		add := func(topic string, n int32) {
			if t.Partition < n {
				out[topic] = append(out[topic], t.Partition)
			}
		}
		for _, topic := range s.sourceTopics {
			add(topic, c.topics.byName[topic].Partitions)
		}
		for topic, n := range s.repartitionSources {
			add(topic, n)
		}
	}
	return out
}

// fullRequest says whether a heartbeat is a full request: every field a
// Streams client sends only when it changed is set (the rebalance timeout
// and the three owned-task lists). A Java client sends one after a failed
// heartbeat (e.g. a lost response), and then gets its full assignment
// again, as Kafka's consumer-group heartbeat does (isFullRequest); without
// it a member whose response carrying new tasks was lost would never learn
// them while its assignment stays unchanged. Kafka 4.4's streams heartbeat
// sends tasks only on a join or a change (TestHeartbeatParityWithKafka
// checks that a late owned-task report or a previous epoch alone does not
// resend them).
func fullRequest(req *kmsg.StreamsGroupHeartbeatRequest) bool {
	return req.RebalanceTimeoutMillis != -1 && req.ActiveTasks != nil && req.StandbyTasks != nil && req.WarmupTasks != nil
}
