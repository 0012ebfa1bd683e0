package core

import (
	"sort"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// streamsGroupDescribe answers a streamsGroupDescribe request (v0–1) from
// the current state; call it between batches so it reads committed state.
// Authorization is the host's job (GROUP_AUTHORIZATION_FAILED per group).
func (c *Coordinator) streamsGroupDescribe(req *kmsg.StreamsGroupDescribeRequest) *kmsg.StreamsGroupDescribeResponse {
	resp := kmsg.NewPtrStreamsGroupDescribeResponse()
	resp.Version = req.Version
	for _, id := range req.Groups {
		g := c.describeStreamsGroup(id, req.Version)
		if g.ErrorCode == 0 && req.Version >= 1 && req.IncludeTopologyDescription {
			g.TopologyDescriptionStatus = 1 // NOT_STORED: no KIP-1331 description plugin
		}
		resp.Groups = append(resp.Groups, g)
	}
	return resp
}

func (c *Coordinator) describeStreamsGroup(id string, version int16) kmsg.StreamsGroupDescribeResponseGroup {
	out := kmsg.NewStreamsGroupDescribeResponseGroup()
	out.Group = id
	if id == "" {
		out.ErrorCode = kerr.InvalidGroupID.Code
		msg := "GroupId can't be empty."
		out.ErrorMessage = &msg
		return out
	}
	g, ok := c.groups[id].(*streamsGroup)
	if !ok {
		out.ErrorCode = kerr.GroupIDNotFound.Code
		msg := "Group " + id + " not found."
		if _, exists := c.groups[id]; exists {
			msg = "Group " + id + " is not a streams group."
		}
		out.ErrorMessage = &msg
		return out
	}
	out.State, out.Epoch, out.AssignmentEpoch = g.state.String(), g.groupEpoch, g.assignmentEpoch
	out.Topology = c.describeTopology(g)
	if version >= 1 {
		name := c.streamsConfig(id).AssignorName
		out.AssignorName = &name
	}
	out.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{}
	for _, mid := range g.sortedMemberIDs() {
		out.Members = append(out.Members, c.describeMember(g, g.members[mid]))
	}
	return out
}

func (c *Coordinator) describeMember(g *streamsGroup, m *streamsMember) kmsg.StreamsGroupDescribeResponseGroupMember {
	dm := kmsg.NewStreamsGroupDescribeResponseGroupMember()
	dm.MemberID, dm.MemberEpoch, dm.InstanceID, dm.RackID = m.id, m.epoch, m.instanceID, m.rackID
	dm.ClientID, dm.ClientHost, dm.TopologyEpoch, dm.ProcessID = m.clientID, m.clientHost, m.topologyEpoch, m.processID
	dm.IsClassic = m.classic != nil // online migration: a classic (JoinGroup protocol) member
	if m.endpoint != nil {
		dm.UserEndpoint = &kmsg.StreamsGroupDescribeResponseGroupMemberUserEndpoint{Host: m.endpoint.Host, Port: m.endpoint.Port}
	}
	dm.ClientTags = []kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{}
	for _, t := range m.clientTags {
		dm.ClientTags = append(dm.ClientTags, kmsg.StreamsGroupDescribeResponseGroupMemberClientTag{Key: t.Key, Value: t.Value})
	}
	o := g.soft.taskOffsets[m.id]
	dm.TaskOffsets, dm.TaskEndOffsets = kmsgOffsets(o.offsets), kmsgOffsets(o.endOffsets)
	dm.Assignment = kmsg.StreamsAssignment{ActiveTasks: kmsgTasks(m.assigned.active.set()),
		StandbyTasks: kmsgTasks(m.assigned.standby), WarmupTasks: kmsgTasks(m.assigned.warmup)}
	t, ok := g.target[m.id]
	if !ok {
		t = emptyTuple()
	}
	dm.TargetAssignment = kmsg.StreamsAssignment{ActiveTasks: kmsgTasks(t.active), StandbyTasks: kmsgTasks(t.standby), WarmupTasks: kmsgTasks(t.warmup)}
	return dm
}

func kmsgOffsets(m map[TaskID]int64) []kmsg.TaskOffset {
	out := []kmsg.TaskOffset{}
	ts := make(taskSet, len(m))
	for t := range m {
		ts[t] = struct{}{}
	}
	for _, t := range ts.sorted() {
		out = append(out, kmsg.TaskOffset{SubtopologyID: t.Subtopology, Partition: t.Partition, Offset: m[t]})
	}
	return out
}

// describeTopology returns the configured topology (resolved partition
// counts) when ready, otherwise the stored one with sorted lists.
func (c *Coordinator) describeTopology(g *streamsGroup) *kmsg.StreamsGroupDescribeResponseGroupTopology {
	if g.topology == nil {
		return nil
	}
	t := &kmsg.StreamsGroupDescribeResponseGroupTopology{Epoch: g.topology.Epoch}
	ct := g.soft.configured
	for _, s := range g.topology.Subtopologies {
		ds := kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{SubtopologyID: s.SubtopologyID,
			SourceTopics: sortedCopy(s.SourceTopics), RepartitionSinkTopics: sortedCopy(s.RepartitionSinkTopics)}
		var cs *configuredSubtopology
		if ct.ready() {
			cs = ct.subtopology(s.SubtopologyID)
		}
		ds.StateChangelogTopics = describeTopicInfos(s.StateChangelogTopics, func(n string) int32 {
			if cs != nil {
				return cs.changelogs[n]
			}
			return 0
		})
		ds.RepartitionSourceTopics = describeTopicInfos(s.RepartitionSourceTopics, func(n string) int32 {
			if cs != nil {
				return cs.repartitionSources[n]
			}
			return -1
		})
		t.Subtopologies = append(t.Subtopologies, ds)
	}
	sort.Slice(t.Subtopologies, func(i, j int) bool { return t.Subtopologies[i].SubtopologyID < t.Subtopologies[j].SubtopologyID })
	return t
}

func describeTopicInfos(ts []records.TopicInfo, resolved func(string) int32) []kmsg.TopicInfo {
	out := []kmsg.TopicInfo{}
	for _, ti := range ts {
		n := ti.Partitions
		if r := resolved(ti.Name); r >= 0 {
			n = r
		}
		k := kmsg.TopicInfo{Topic: ti.Name, NumPartitions: n, ReplicationFactor: ti.ReplicationFactor, Configs: []kmsg.TopicInfoConfig{}}
		for _, kv := range ti.TopicConfigs {
			k.Configs = append(k.Configs, kmsg.TopicInfoConfig{Key: kv.Key, Value: kv.Value})
		}
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out
}

func sortedCopy(s []string) []string {
	out := append([]string{}, s...)
	sort.Strings(out)
	return out
}
