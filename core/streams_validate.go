package core

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// kafkaError is a Kafka error code with its message, returned as a value.
type kafkaError struct {
	code int16
	msg  string
}

func errf(e *kerr.Error, format string, args ...any) *kafkaError {
	return &kafkaError{code: e.Code, msg: fmt.Sprintf(format, args...)}
}

// Member epochs with a meaning of their own.
const (
	joinEpoch        int32 = 0
	leaveEpoch       int32 = -1
	staticLeaveEpoch int32 = -2
)

// TopologyEntries counts a heartbeat topology's entries as
// streams.max.topology.size bounds them: each subtopology, each topic name
// it lists and each copartition group's source and repartition-source
// entries count one (0 without a topology). It is cheap next to preparing
// the topology, which a host may want to bound.
func TopologyEntries(t *kmsg.StreamsGroupHeartbeatRequestTopology) int {
	if t == nil {
		return 0
	}
	n := len(t.Subtopologies)
	for _, s := range t.Subtopologies {
		n += len(s.SourceTopics) + len(s.SourceTopicRegex) + len(s.RepartitionSinkTopics) +
			len(s.RepartitionSourceTopics) + len(s.StateChangelogTopics)
		for _, cg := range s.CopartitionGroups {
			n += len(cg.SourceTopics) + len(cg.RepartitionSourceTopics) + len(cg.SourceTopicRegex)
		}
	}
	return n
}

// checkTopologySize refuses a topology of n entries (TopologyEntries)
// when n is over max, before anything is built from it. Kafka has no such
// bound; INVALID_REQUEST is its answer to a heartbeat it will not accept
// as sent.
func checkTopologySize(n int, max int32) *kafkaError {
	if n > int(max) {
		return errf(kerr.InvalidRequest, "The topology has %d entries (subtopologies, topics and copartition-group entries), more than streams.max.topology.size %d.", n, max)
	}
	return nil
}

// validateStreamsHeartbeat applies the request-level rules Kafka checks in
// KafkaApis and GroupCoordinatorService before the group is looked at.
func validateStreamsHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest) *kafkaError {
	if req.Topology != nil { // KafkaApis checks topic names before anything else
		if e := validateTopologyNames(req.Topology); e != nil {
			return e
		}
		for _, s := range req.Topology.Subtopologies { // then unsupported features
			if len(s.SourceTopicRegex) > 0 {
				return errf(kerr.InvalidRequest, "Regular expressions for source topics are not supported yet.")
			}
		}
	}
	switch {
	case req.MemberID == "":
		return errf(kerr.InvalidRequest, "MemberId can't be empty.")
	case req.Group == "":
		return errf(kerr.InvalidRequest, "GroupId can't be empty.")
	case req.InstanceID != nil && *req.InstanceID == "":
		return errf(kerr.InvalidRequest, "InstanceId can't be empty.")
	case req.RackID != nil && *req.RackID == "":
		return errf(kerr.InvalidRequest, "RackId can't be empty.")
	}
	switch {
	case req.MemberEpoch == joinEpoch:
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return errf(kerr.InvalidRequest, "RebalanceTimeoutMs must be provided in first request.")
		// Kafka's throwIfNotEmptyCollection rejects null lists too.
		case req.ActiveTasks == nil || len(req.ActiveTasks) > 0:
			return errf(kerr.InvalidRequest, "ActiveTasks must be empty when (re-)joining.")
		case req.StandbyTasks == nil || len(req.StandbyTasks) > 0:
			return errf(kerr.InvalidRequest, "StandbyTasks must be empty when (re-)joining.")
		case req.WarmupTasks == nil || len(req.WarmupTasks) > 0:
			return errf(kerr.InvalidRequest, "WarmupTasks must be empty when (re-)joining.")
		case req.Topology == nil:
			return errf(kerr.InvalidRequest, "Topology must be non-null when (re-)joining.")
		}
		if e := validateTopologyRequest(req.Topology); e != nil {
			return e
		}
	case req.MemberEpoch == staticLeaveEpoch && req.InstanceID == nil:
		return errf(kerr.InvalidRequest, "InstanceId can't be null.")
	case req.MemberEpoch < staticLeaveEpoch:
		return errf(kerr.InvalidRequest, "MemberEpoch is %d, but must be greater than or equal to -2.", req.MemberEpoch)
	}
	if (req.ActiveTasks != nil || req.StandbyTasks != nil || req.WarmupTasks != nil) &&
		(req.ActiveTasks == nil || req.StandbyTasks == nil || req.WarmupTasks == nil) {
		return errf(kerr.InvalidRequest, "If one task-type is non-null, all must be non-null.")
	}
	if req.MemberEpoch != joinEpoch && req.Topology != nil {
		return errf(kerr.InvalidRequest, "Topology can only be provided when (re-)joining.")
	}
	if e := validateTaskOffsets("TaskOffsets", req.TaskOffsets); e != nil {
		return e
	}
	return validateTaskOffsets("TaskEndOffsets", req.TaskEndOffsets)
}

func validateTaskOffsets(field string, offs []kmsg.TaskOffset) *kafkaError {
	if !hasDuplicateTask(offs) {
		return nil
	}
	// Name the first entry that repeats an earlier one, as Kafka does.
	seen := make(map[TaskID]bool, len(offs))
	for _, o := range offs {
		t := TaskID{o.SubtopologyID, o.Partition}
		if seen[t] {
			return errf(kerr.InvalidRequest, "%s contains task %s more than once.", field, t)
		}
		seen[t] = true
	}
	return nil
}

// hasDuplicateTask says whether a task appears twice in offs. A member
// with many tasks reports all of them: a list in task order (the common
// case) is checked in one pass, any other by sorting a copy of its tasks
// — no map on this path, which runs for every heartbeat that reports.
func hasDuplicateTask(offs []kmsg.TaskOffset) bool {
	less := func(a, b *kmsg.TaskOffset) bool {
		return a.SubtopologyID < b.SubtopologyID || (a.SubtopologyID == b.SubtopologyID && a.Partition < b.Partition)
	}
	ordered := true
	for i := 1; i < len(offs) && ordered; i++ {
		ordered = less(&offs[i-1], &offs[i])
	}
	if ordered {
		return false
	}
	tasks := make([]TaskID, len(offs))
	for i, o := range offs {
		tasks[i] = TaskID{o.SubtopologyID, o.Partition}
	}
	slices.SortFunc(tasks, func(a, b TaskID) int {
		if c := strings.Compare(a.Subtopology, b.Subtopology); c != 0 {
			return c
		}
		return cmp.Compare(a.Partition, b.Partition)
	})
	for i := 1; i < len(tasks); i++ {
		if tasks[i] == tasks[i-1] {
			return true
		}
	}
	return false
}

// internalTopicNames are Kafka's own topics, which a topology must not use.
var internalTopicNames = map[string]bool{"__consumer_offsets": true, "__transaction_state": true, "__share_group_state": true}

// validateTopologyRequest applies the service-level topology rules.
func validateTopologyRequest(t *kmsg.StreamsGroupHeartbeatRequestTopology) *kafkaError {
	for _, s := range t.Subtopologies {
		for _, c := range s.StateChangelogTopics {
			if c.NumPartitions != 0 {
				return errf(kerr.StreamsInvalidTopology, "Changelog topic %s must have an undefined partition count, but it is set to %d.", c.Topic, c.NumPartitions)
			}
		}
	}
	return nil
}

// validateTopologyNames rejects invalid or Kafka-internal topic names, as
// KafkaApis does before the coordinator sees the request.
func validateTopologyNames(t *kmsg.StreamsGroupHeartbeatRequestTopology) *kafkaError {
	for _, s := range t.Subtopologies {
		// In Kafka's order: source, repartition sink, changelog, then
		// repartition source topics.
		for _, names := range [2][]string{s.SourceTopics, s.RepartitionSinkTopics} {
			for _, n := range names {
				if e := checkTopicName(n); e != nil {
					return e
				}
			}
		}
		for _, infos := range [2][]kmsg.TopicInfo{s.StateChangelogTopics, s.RepartitionSourceTopics} {
			for _, ti := range infos {
				if e := checkTopicName(ti.Topic); e != nil {
					return e
				}
			}
		}
	}
	return nil
}

func checkTopicName(n string) *kafkaError {
	if msg := invalidTopicName(n); msg != "" {
		return errf(kerr.StreamsInvalidTopology, "%s", msg)
	}
	return nil
}

// invalidTopicName applies Kafka's topic-name rules (Topic.validate) and
// rejects Kafka-internal topics.
func invalidTopicName(n string) string {
	switch {
	case n == "" || n == "." || n == "..":
		return fmt.Sprintf("Topic name %q is illegal.", n)
	case len(n) > 249:
		return fmt.Sprintf("Topic name %q is longer than 249 characters.", n)
	case internalTopicNames[n]:
		return fmt.Sprintf("Use of Kafka internal topics %s in a Kafka Streams topology is prohibited.", n)
	}
	if strings.IndexFunc(n, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-')
	}) >= 0 {
		return fmt.Sprintf("Topic name %q contains illegal characters.", n)
	}
	return ""
}
