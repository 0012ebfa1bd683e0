package host

import (
	"slices"

	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/core"
	rangeassignor "github.com/coordhost/coordhost/plugins/assignor-range"
	"github.com/coordhost/coordhost/plugins/assignor-uniform"
)

// consumerHeartbeatMs, when > 0, overrides the consumer-group heartbeat
// interval of the cores NewCoordinator builds (tests: quick rebalances).
var consumerHeartbeatMs int32

// consumerAssignors are the server-side assignors of KIP-848 consumer
// groups, in Kafka 4.4's order (uniform is the default): the native
// builds of the partition-assignor plugins, run inline by core.
func consumerAssignors() []core.NamedPartitionAssignor {
	return []core.NamedPartitionAssignor{
		{Name: "uniform", Assignor: partitionAssignor(uniform.Assign)},
		{Name: "range", Assignor: partitionAssignor(rangeassignor.Assign)},
	}
}

// partitionAssignor adapts a plugin algorithm on the ABI's dense indices
// to core's PartitionAssignor.
type partitionAssignor func(*abi.PartitionAssignRequest) (*abi.PartitionAssignResponse, error)

// AssignPartitions implements core.PartitionAssignor.
func (f partitionAssignor) AssignPartitions(in core.PartitionAssignInput) ([][]core.AssignedTopic, error) {
	resp, err := f(toPartitionABI(in))
	if err != nil {
		return nil, err
	}
	out := make([][]core.AssignedTopic, len(resp.Members))
	for i, tps := range resp.Members {
		for _, tp := range tps {
			out[i] = append(out[i], core.AssignedTopic{Topic: tp.Topic, Partitions: tp.Partitions})
		}
	}
	return out, nil
}

// toPartitionABI translates core's input (topics ascending by id, members
// by id) to a PartitionAssignRequest with its rack table.
func toPartitionABI(in core.PartitionAssignInput) *abi.PartitionAssignRequest {
	req := &abi.PartitionAssignRequest{GroupID: in.Group, GroupEpoch: in.Epoch, Seed: seedOf(in.Group, in.Epoch)}
	for _, t := range in.Topics {
		for _, rs := range t.Racks {
			req.Racks = append(req.Racks, rs...)
		}
	}
	for _, m := range in.Members {
		if m.RackID != "" {
			req.Racks = append(req.Racks, m.RackID)
		}
	}
	slices.Sort(req.Racks)
	req.Racks = slices.Compact(req.Racks)
	rackIdx := func(r string) int32 { i, _ := slices.BinarySearch(req.Racks, r); return int32(i) }
	for _, t := range in.Topics {
		at := abi.Topic{ID: abi.TopicID(t.ID), Name: t.Name, Partitions: t.Partitions}
		if len(t.Racks) == int(t.Partitions) && t.Partitions > 0 {
			for _, rs := range t.Racks {
				idx := []int32{}
				for _, r := range rs {
					idx = append(idx, rackIdx(r))
				}
				slices.Sort(idx)
				at.PartitionRacks = append(at.PartitionRacks, slices.Compact(idx))
			}
		}
		req.Topics = append(req.Topics, at)
	}
	for i, m := range in.Members {
		cm := abi.ConsumerMember{ID: m.MemberID, InstanceID: m.InstanceID, Rack: m.RackID, Subscribed: m.Subscribed}
		for _, a := range m.Assigned {
			cm.Assigned = append(cm.Assigned, abi.TopicPartitions{Topic: a.Topic, Partitions: a.Partitions})
		}
		if i > 0 && !slices.Equal(m.Subscribed, in.Members[0].Subscribed) {
			req.Heterogeneous = true
		}
		req.Members = append(req.Members, cm)
	}
	return req
}
