package userdata_test

import (
	"fmt"

	"github.com/coordhost/coordhost/core/userdata"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A coordinator serving classic Kafka Streams members: read each member's
// JoinGroup metadata, negotiate the versions for the group, and build one
// member's SyncGroup assignment from its tasks.
func Example() {
	// JoinGroup: what a Kafka Streams 4.4 thread sends (built here for the example).
	sub := &userdata.SubscriptionInfo{Version: 11, LatestSupportedVersion: 11, UserEndPoint: "host1:8080",
		TaskOffsetSums: []userdata.TaskOffsetSum{{Task: userdata.TaskID{Subtopology: 0, Partition: 0}, OffsetSum: userdata.LatestOffset}}}
	subBytes, _ := sub.Encode()
	joinMetadata, _ := userdata.EncodeSubscription(&kmsg.ConsumerMemberMetadata{
		Version: 3, Topics: []string{"input"}, UserData: subBytes, Generation: -1})

	// Decode it as the coordinator receives it.
	member, err := userdata.DecodeSubscription(joinMetadata)
	if err != nil {
		panic(err)
	}
	info, err := userdata.DecodeSubscriptionInfo(member.UserData)
	if err != nil {
		panic(err)
	}
	n := userdata.Negotiate([]*userdata.SubscriptionInfo{info})

	// SyncGroup: tasks 0_0 and 0_1 on "input", with real partition counts.
	counts := map[string]int32{"input": 2}
	tasks := map[userdata.TaskID][]userdata.TopicPartition{}
	for p := int32(0); p < 2; p++ {
		t := userdata.TaskID{Subtopology: 0, Partition: p}
		tasks[t], _ = userdata.TaskPartitions(t, []string{"input"}, counts)
	}
	partitions, active, _ := userdata.ActiveTaskList(tasks)
	asg := &userdata.AssignmentInfo{
		Version: n.Version, CommonlySupportedVersion: n.CommonlySupported, ActiveTasks: active,
		PartitionsByHost: []userdata.HostPartitions{{Host: "host1", Port: 8080, Partitions: partitions}},
		NextRebalanceMs:  userdata.NoRebalance,
	}
	asgBytes, _ := asg.Encode()
	syncAssignment, _ := userdata.EncodeAssignment(&kmsg.ConsumerMemberAssignment{
		Version: member.Version, Topics: userdata.AssignmentTopics(partitions), UserData: asgBytes})

	fmt.Println("versions:", n.Version, n.CommonlySupported)
	fmt.Println("partitions:", partitions, "tasks:", active)
	fmt.Println("assignment bytes:", len(syncAssignment))
	// Output:
	// versions: 11 11
	// partitions: [input-0 input-1] tasks: [0_0 0_1]
	// assignment bytes: 135
}
