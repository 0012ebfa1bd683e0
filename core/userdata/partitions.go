package userdata

import (
	"cmp"
	"fmt"
	"slices"
)

// TopicPartition is one partition of one topic.
type TopicPartition struct {
	Topic     string
	Partition int32
}

// String returns the "topic-partition" form Kafka uses in logs.
func (tp TopicPartition) String() string { return fmt.Sprintf("%s-%d", tp.Topic, tp.Partition) }

// compareTopicPartition is Kafka Streams' PARTITION_COMPARATOR: topic in
// Java String order, then partition.
func compareTopicPartition(a, b TopicPartition) int {
	if c := javaCompare(a.Topic, b.Topic); c != 0 {
		return c
	}
	return cmp.Compare(a.Partition, b.Partition)
}

// SortPartitions sorts partitions the way a Kafka Streams client sorts its
// assigned partitions before pairing them with AssignmentInfo.ActiveTasks.
func SortPartitions(tps []TopicPartition) { slices.SortFunc(tps, compareTopicPartition) }

// TaskPartitions returns the source partitions of task t, as Kafka Streams'
// PartitionGrouper assigns them: for every source topic of t's subtopology,
// partition t.Partition if that topic has more than t.Partition partitions
// according to partitionCounts. A source topic missing from partitionCounts
// is an error (its partition count is unknown).
func TaskPartitions(t TaskID, sourceTopics []string, partitionCounts map[string]int32) ([]TopicPartition, error) {
	var out []TopicPartition
	for _, topic := range sourceTopics {
		n, ok := partitionCounts[topic]
		if !ok {
			return nil, fmt.Errorf("task %s: no partition count for source topic %q", t, topic)
		}
		if t.Partition < n {
			out = append(out, TopicPartition{Topic: topic, Partition: t.Partition})
		}
	}
	return out, nil
}

// TaskCount returns how many tasks a subtopology has: the largest partition
// count among its source topics (PartitionGrouper.maxNumPartitions).
func TaskCount(sourceTopics []string, partitionCounts map[string]int32) (int32, error) {
	var most int32
	for _, topic := range sourceTopics {
		n, ok := partitionCounts[topic]
		if !ok {
			return 0, fmt.Errorf("no partition count for source topic %q", topic)
		}
		most = max(most, n)
	}
	return most, nil
}

// ActiveTaskList lines a member's active tasks up with its partitions as the
// classic protocol requires: the returned partitions are sorted by (topic,
// partition) and active[i] is the task that owns partitions[i], so a task
// with k partitions appears k times. Use partitions for the
// ConsumerProtocol assignment and active for AssignmentInfo.ActiveTasks.
// A partition claimed by two tasks is an error.
func ActiveTaskList(taskPartitions map[TaskID][]TopicPartition) (partitions []TopicPartition, active []TaskID, err error) {
	owner := make(map[TopicPartition]TaskID)
	for t, tps := range taskPartitions {
		for _, tp := range tps {
			if prev, dup := owner[tp]; dup && prev != t {
				a, b := prev, t
				if a.Compare(b) > 0 {
					a, b = b, a
				}
				return nil, nil, fmt.Errorf("partition %s belongs to both task %s and task %s", tp, a, b)
			}
			owner[tp] = t
		}
	}
	partitions = make([]TopicPartition, 0, len(owner))
	for tp := range owner {
		partitions = append(partitions, tp)
	}
	SortPartitions(partitions)
	active = make([]TaskID, len(partitions))
	for i, tp := range partitions {
		active[i] = owner[tp]
	}
	return partitions, active, nil
}
