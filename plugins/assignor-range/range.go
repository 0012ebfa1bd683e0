// Package rangeassignor is Kafka 4.4's server-side range assignor for
// KIP-848 consumer groups (org.apache.kafka.coordinator.group.assignor.
// RangeAssignor), working on the dense indices of package abi. Its wasm
// sub-package builds it as a coordhost partition-assignor plugin.
//
// Members are ordered by instance id (members with one first), then by
// member id; each topic's partitions are cut into contiguous ranges handed
// out in that order, the first partitions%members members getting one more.
// When every member subscribes to the same topics with equal partition
// counts, a member gets the same partition numbers of every topic
// (co-partitioning). The result does not depend on current assignments.
package rangeassignor

import (
	"cmp"
	"slices"

	"github.com/coordhost/coordhost/abi"
)

// topicRange is the state of one topic while ranges are handed out.
type topicRange struct {
	members   int32 // subscribers
	next      int32 // first partition of the next range
	extra     int32 // ranges still to get one more partition
	computed  bool
	minQuota  int32
	partition int32 // partition count
}

// Assign computes the range assignment of req.
func Assign(req *abi.PartitionAssignRequest) (*abi.PartitionAssignResponse, error) {
	resp := &abi.PartitionAssignResponse{Members: make([][]abi.TopicPartitions, len(req.Members))}
	if len(req.Members) == 0 {
		return resp, nil
	}
	order := sortedMembers(req.Members)
	topics := make([]topicRange, len(req.Topics))
	for i := range topics {
		topics[i].partition = req.Topics[i].Partitions
	}
	if req.Heterogeneous {
		for _, m := range req.Members {
			for _, t := range m.Subscribed {
				topics[t].members++
			}
		}
	} else {
		for _, t := range req.Members[order[0]].Subscribed {
			topics[t].members = int32(len(req.Members))
		}
	}
	for _, mi := range order {
		subs := req.Members[mi].Subscribed
		if !req.Heterogeneous {
			subs = req.Members[order[0]].Subscribed
		}
		for _, t := range subs {
			if ps := topics[t].take(); len(ps) > 0 {
				resp.Members[mi] = append(resp.Members[mi], abi.TopicPartitions{Topic: t, Partitions: ps})
			}
		}
	}
	return resp, nil
}

// take returns the next member's range of the topic (empty once the
// partitions ran out).
func (tr *topicRange) take() []int32 {
	if !tr.computed {
		tr.computed = true
		tr.minQuota = tr.partition / tr.members
		tr.extra = tr.partition % tr.members
	}
	if tr.next >= tr.partition {
		return nil
	}
	start := tr.next
	end := min(start+tr.minQuota, tr.partition)
	if tr.extra > 0 {
		end++
		tr.extra--
	}
	tr.next = end
	ps := make([]int32, 0, end-start)
	for p := start; p < end; p++ {
		ps = append(ps, p)
	}
	return ps
}

// sortedMembers orders member indices as Kafka's range assignor does:
// members with an instance id first, by instance id; then the others by
// member id. (Java compares strings by UTF-16 code units, Go by bytes; the
// two orders differ only between supplementary characters and U+E000 to
// U+FFFF.)
func sortedMembers(ms []abi.ConsumerMember) []int32 {
	order := make([]int32, len(ms))
	for i := range order {
		order[i] = int32(i)
	}
	slices.SortFunc(order, func(a, b int32) int {
		ia, ib := ms[a].InstanceID, ms[b].InstanceID
		switch {
		case ia != "" && ib != "":
			return cmp.Compare(ia, ib)
		case ia != "":
			return -1
		case ib != "":
			return 1
		}
		return cmp.Compare(ms[a].ID, ms[b].ID)
	})
	return order
}
