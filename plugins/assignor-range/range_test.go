package rangeassignor_test

import (
	"reflect"
	"testing"

	"github.com/coordhost/coordhost/abi"
	rangeassignor "github.com/coordhost/coordhost/plugins/assignor-range"
)

func parts(ps ...int32) []int32 { return ps }

// TestCoPartitioned is the example of Kafka's RangeAssignor javadoc: two
// members, two topics of three partitions: M0 gets partitions 0 and 1 of
// both, M1 partition 2 of both. With instance ids, the instance-id order
// decides, whatever the member ids.
func TestCoPartitioned(t *testing.T) {
	req := &abi.PartitionAssignRequest{
		Topics: []abi.Topic{{ID: abi.TopicID{1}, Name: "T1", Partitions: 3}, {ID: abi.TopicID{2}, Name: "T2", Partitions: 3}},
		Members: []abi.ConsumerMember{
			{ID: "M1", Subscribed: []int32{0, 1}},
			{ID: "M0", Subscribed: []int32{0, 1}},
		},
	}
	first := []abi.TopicPartitions{{Topic: 0, Partitions: parts(0, 1)}, {Topic: 1, Partitions: parts(0, 1)}}
	second := []abi.TopicPartitions{{Topic: 0, Partitions: parts(2)}, {Topic: 1, Partitions: parts(2)}}
	check := func(want [][]abi.TopicPartitions) {
		t.Helper()
		resp, err := rangeassignor.Assign(req)
		if err != nil || !reflect.DeepEqual(resp.Members, want) {
			t.Fatalf("got %v, %v; want %v", resp.Members, err, want)
		}
	}
	check([][]abi.TopicPartitions{second, first})
	req.Members[0].InstanceID, req.Members[1].InstanceID = "I0", "I1"
	check([][]abi.TopicPartitions{first, second})
}

// TestHeterogeneous: each topic is split among its own subscribers; a
// member without subscriptions gets nothing.
func TestHeterogeneous(t *testing.T) {
	req := &abi.PartitionAssignRequest{Heterogeneous: true,
		Topics: []abi.Topic{{ID: abi.TopicID{1}, Partitions: 5}, {ID: abi.TopicID{2}, Partitions: 1}},
		Members: []abi.ConsumerMember{
			{ID: "a", Subscribed: []int32{0}},
			{ID: "b", Subscribed: []int32{0, 1}},
			{ID: "c"},
		},
	}
	resp, err := rangeassignor.Assign(req)
	want := [][]abi.TopicPartitions{
		{{Topic: 0, Partitions: parts(0, 1, 2)}},
		{{Topic: 0, Partitions: parts(3, 4)}, {Topic: 1, Partitions: parts(0)}},
		nil,
	}
	if err != nil || !reflect.DeepEqual(resp.Members, want) {
		t.Fatalf("got %v, %v; want %v", resp.Members, err, want)
	}
}
