package core

import (
	"github.com/twmb/franz-go/pkg/kerr"
)

// OffsetCommitTopic lists the partitions of one topic an OffsetCommit
// request commits.
type OffsetCommitTopic struct {
	Topic      string
	Partitions []int32
}

// ValidateStreamsOffsetCommit decides whether a streams member may commit
// offsets (Kafka's StreamsGroup.validateOffsetCommit). It returns a Kafka
// error code (0 to accept) with a message. version is the OffsetCommit
// request version; transactional commits (TxnOffsetCommit) pass
// isTransactional. A negative epoch on an empty group is an admin commit.
func (c *Coordinator) ValidateStreamsOffsetCommit(group, memberID string, epoch int32, version int16, isTransactional bool, topics []OffsetCommitTopic) (int16, string) {
	g, ok := c.groups[group].(*streamsGroup)
	if !ok {
		return kerr.GroupIDNotFound.Code, "Streams group " + group + " not found."
	}
	if memberID == "" && epoch < 0 && len(g.members) == 0 {
		return 0, ""
	}
	if !isTransactional && version < 9 {
		return kerr.UnsupportedVersion.Code, "OffsetCommit version 9 or above must be used by members using the streams group protocol"
	}
	m := g.members[memberID]
	if m == nil {
		e := errf(kerr.UnknownMemberID, "Member %s is not a member of group %s.", memberID, group)
		return e.code, e.msg
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

// validateOlderCommit accepts a commit at an older epoch only for source
// partitions of active tasks the member still holds (assigned or pending
// revocation) that were assigned at or before that epoch.
func (c *Coordinator) validateOlderCommit(g *streamsGroup, m *streamsMember, epoch int32, topics []OffsetCommitTopic) (int16, string) {
	if g.topology == nil {
		return kerr.StaleMemberEpoch.Code, "Topology is not available for offset commit validation."
	}
	for _, t := range topics {
		found := false
		for _, s := range g.topology.Subtopologies {
			if !containsString(s.SourceTopics, t.Topic) && !containsTopicInfo(s.RepartitionSourceTopics, t.Topic) {
				continue
			}
			found = true
			for _, p := range t.Partitions {
				task := TaskID{s.SubtopologyID, p}
				taskEpoch, ok := m.assigned.active[task]
				if !ok {
					taskEpoch, ok = m.pending.active[task]
				}
				if !ok {
					e := errf(kerr.StaleMemberEpoch, "Task %s-%d is not assigned or pending revocation for member.", task.Subtopology, p)
					return e.code, e.msg
				}
				if epoch < taskEpoch {
					e := errf(kerr.StaleMemberEpoch, "Received member epoch %d is older than assignment epoch %d for task %s-%d.", epoch, taskEpoch, task.Subtopology, p)
					return e.code, e.msg
				}
			}
		}
		if !found {
			e := errf(kerr.StaleMemberEpoch, "Topic %s is not a source topic of the topology.", t.Topic)
			return e.code, e.msg
		}
	}
	return 0, ""
}

// ValidateStreamsOffsetFetch checks a member-scoped OffsetFetch: the epoch
// must match the member's exactly.
func (c *Coordinator) ValidateStreamsOffsetFetch(group, memberID string, epoch int32) (int16, string) {
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

func containsString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func containsTopicInfo(l []TopicInfo, s string) bool {
	for _, x := range l {
		if x.Name == s {
			return true
		}
	}
	return false
}
