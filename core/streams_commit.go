package core

import (
	"sort"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kerr"
)

// OffsetCommitTopic lists the partitions of one topic an OffsetCommit
// request commits.
type OffsetCommitTopic struct {
	Topic      string
	Partitions []int32
}

// validateStreamsOffsetCommit decides whether a streams member may commit
// offsets, in the order of Kafka 4.4's StreamsGroup.validateOffsetCommit. It
// returns a Kafka error code (0 to accept) with a message. version is the
// OffsetCommit request version; transactional commits (TxnOffsetCommit) pass
// isTransactional. A negative epoch on an empty group is an admin commit; a
// transactional commit with epoch -1 and no member id comes from a producer
// outside the group and is accepted.
func (c *Coordinator) validateStreamsOffsetCommit(group, memberID string, epoch int32, version int16, isTransactional bool, topics []OffsetCommitTopic) (int16, string) {
	g, ok := c.groups[group].(*streamsGroup)
	if !ok {
		return kerr.GroupIDNotFound.Code, "Streams group " + group + " not found."
	}
	if epoch < 0 && len(g.members) == 0 {
		return 0, ""
	}
	if isTransactional && epoch == leaveEpoch && memberID == "" {
		return 0, ""
	}
	m := g.members[memberID]
	if m == nil {
		e := errf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", memberID, group)
		return e.code, e.msg
	}
	if !isTransactional && version < 9 {
		return kerr.UnsupportedVersion.Code, "OffsetCommit version 9 or above must be used by members using the streams group protocol"
	}
	if epoch == m.epoch {
		return 0, ""
	}
	if epoch > m.epoch {
		e := errf(kerr.StaleMemberEpoch, "Received member epoch %d is newer than current member epoch %d.", epoch, m.epoch)
		return e.code, e.msg
	}
	return c.validateOlderCommit(g, m, epoch, topics)
}

// validateOlderCommit accepts a commit at an older epoch only for partitions
// of (repartition) source topics whose task the member still holds active
// (assigned or pending revocation) since that epoch or earlier. Like Kafka,
// a topic read by several subtopologies is checked against one of them (the
// last by subtopology id).
func (c *Coordinator) validateOlderCommit(g *streamsGroup, m *streamsMember, epoch int32, topics []OffsetCommitTopic) (int16, string) {
	if g.topology == nil {
		return kerr.StaleMemberEpoch.Code, "Topology is not available for offset commit validation."
	}
	bySource := map[string]string{}
	subs := append([]records.Subtopology(nil), g.topology.Subtopologies...)
	sort.SliceStable(subs, func(i, j int) bool { return subs[i].SubtopologyID < subs[j].SubtopologyID })
	for _, s := range subs {
		for _, t := range s.SourceTopics {
			bySource[t] = s.SubtopologyID
		}
		for _, t := range s.RepartitionSourceTopics {
			bySource[t.Name] = s.SubtopologyID
		}
	}
	for _, t := range topics {
		sub, ok := bySource[t.Topic]
		if !ok {
			e := errf(kerr.StaleMemberEpoch, "Topic %s is not in the topology.", t.Topic)
			return e.code, e.msg
		}
		for _, p := range t.Partitions {
			task := TaskID{sub, p}
			taskEpoch, ok := m.assigned.active[task]
			if !ok {
				taskEpoch, ok = m.pending.active[task]
			}
			if !ok {
				e := errf(kerr.StaleMemberEpoch, "Task %s-%d is not assigned or pending revocation for member.", sub, p)
				return e.code, e.msg
			}
			if epoch < taskEpoch {
				e := errf(kerr.StaleMemberEpoch, "Received member epoch %d is older than assignment epoch %d for task %s-%d.", epoch, taskEpoch, sub, p)
				return e.code, e.msg
			}
		}
	}
	return 0, ""
}

// validateStreamsOffsetFetch checks a member-scoped OffsetFetch: the epoch
// must match the member's exactly.
func (c *Coordinator) validateStreamsOffsetFetch(group, memberID string, epoch int32) (int16, string) {
	g, ok := c.groups[group].(*streamsGroup)
	if !ok {
		return kerr.GroupIDNotFound.Code, "Streams group " + group + " not found."
	}
	m := g.members[memberID]
	if m == nil {
		e := errf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", memberID, group)
		return e.code, e.msg
	}
	if epoch != m.epoch {
		e := errf(kerr.StaleMemberEpoch, "The received member epoch %d does not match the expected member epoch %d.", epoch, m.epoch)
		return e.code, e.msg
	}
	return 0, ""
}
