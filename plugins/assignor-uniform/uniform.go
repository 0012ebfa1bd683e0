// Package uniform is Kafka 4.4's server-side uniform assignor for KIP-848
// consumer groups (org.apache.kafka.coordinator.group.assignor.
// UniformAssignor), working on the dense indices of package abi. Its wasm
// sub-package builds it as a coordhost partition-assignor plugin.
//
// Like Kafka it has two paths: a homogeneous group (every member subscribes
// to the same topics) gets balanced quotas with current partitions kept up
// to each member's quota (UniformHomogeneousAssignmentBuilder); a
// heterogeneous one is balanced topic by topic
// (UniformHeterogeneousAssignmentBuilder). Balance comes before stickiness.
// The results equal Kafka's, including its tie-breaks, which follow Java
// hash-table iteration order (javaorder.go).
package uniform

import (
	"errors"
	"slices"

	"github.com/coordhost/coordhost/abi"
)

// ErrUnassigned is Kafka's PartitionAssignorException "Partitions were left
// unassigned".
var ErrUnassigned = errors.New("partitions were left unassigned")

// Assign computes the uniform assignment of req, with the members handed
// over in the request's MemberOrder, as Kafka's coordinator hands them from
// its member map; a request without one (an older host) is handed over as
// Kafka's parity harness builds its GroupSpec (a HashMap filled in
// ascending member-id order).
func Assign(req *abi.PartitionAssignRequest) (*abi.PartitionAssignResponse, error) {
	return AssignFrom(req, nil)
}

// AssignFrom is Assign with the members handed over from the group's
// member map mm (see MemberMap) instead of the request's MemberOrder; a
// nil mm is Assign.
func AssignFrom(req *abi.PartitionAssignRequest, mm *MemberMap) (*abi.PartitionAssignResponse, error) {
	if len(req.Members) == 0 {
		return &abi.PartitionAssignResponse{}, nil
	}
	var target []assignment
	var err error
	if req.Heterogeneous {
		target, err = heterogeneous(req, memberOrder(req, mm))
	} else {
		target, err = homogeneous(req, memberOrder(req, mm))
	}
	if err != nil {
		return nil, err
	}
	resp := &abi.PartitionAssignResponse{Members: make([][]abi.TopicPartitions, len(req.Members))}
	for i, a := range target {
		resp.Members[i] = a.sorted()
	}
	return resp, nil
}

// assignment is one member's partitions by topic index.
type assignment map[int32][]int32

func current(m *abi.ConsumerMember) assignment {
	a := assignment{}
	for _, tp := range m.Assigned {
		a[tp.Topic] = slices.Clone(tp.Partitions)
	}
	return a
}

func (a assignment) sorted() []abi.TopicPartitions {
	var out []abi.TopicPartitions
	for t, ps := range a {
		if len(ps) > 0 {
			ps = slices.Clone(ps)
			slices.Sort(ps)
			out = append(out, abi.TopicPartitions{Topic: t, Partitions: ps})
		}
	}
	slices.SortFunc(out, func(x, y abi.TopicPartitions) int { return int(x.Topic - y.Topic) })
	return out
}

// tp is one partition.
type tp struct{ topic, partition int32 }

// homogeneous is UniformHomogeneousAssignmentBuilder: quotas of
// total/members, total%members members allowed one more; each member, in
// member-map order, keeps its current partitions up to its quota (in its
// maps' iteration order) and claims an extra partition only if it already
// holds it or too few members are left to take the extras; the unfilled
// members then take the unassigned partitions in order.
func homogeneous(req *abi.PartitionAssignRequest, members []int) ([]assignment, error) {
	first := req.Members[members[0]].Subscribed
	subs := topicSetOrder(req.Topics, first, grownCapacity(len(first)))
	subs = topicSetOrder(req.Topics, subs, copyCapacity(len(subs)))
	target := make([]assignment, len(req.Members))
	if len(subs) == 0 {
		for i := range target {
			target[i] = assignment{}
		}
		return target, nil
	}
	owned := ownedPartitions(req)
	var unassigned []tp
	total := 0
	for _, t := range subs {
		n := req.Topics[t].Partitions
		for p := int32(0); p < n; p++ {
			if !owned[tp{t, p}] {
				unassigned = append(unassigned, tp{t, p})
			}
		}
		total += int(n)
	}
	minQuota, extra := total/len(members), total%len(members)
	type unfilled struct{ member, quota int }
	var open []unfilled
	for pos, mi := range members {
		m := &req.Members[mi]
		quota, hasExtra := minQuota, extra > 0
		if hasExtra {
			quota++
		}
		a := current(m)
		for _, t := range assignedTopicOrder(req, m) {
			ps := a[t]
			if _, ok := slices.BinarySearch(first, t); !ok {
				delete(a, t)
				continue
			}
			if len(ps) <= quota {
				quota -= len(ps)
				continue
			}
			var keep []int32
			for _, p := range intSetOrder(ps) {
				if quota > 0 {
					quota--
					keep = append(keep, p)
				} else {
					unassigned = append(unassigned, tp{t, p})
				}
			}
			a[t] = keep
		}
		// A member that cannot fill its extra partition from what it keeps
		// leaves the extra to a later member while enough are left to
		// take all the extras.
		if quota > 0 && hasExtra && len(members)-pos > extra {
			quota--
			hasExtra = false
		}
		if quota > 0 {
			open = append(open, unfilled{mi, quota})
		}
		if hasExtra {
			extra--
		}
		target[mi] = a
	}
	next := 0
	for _, u := range open {
		for i := 0; i < u.quota && next < len(unassigned); i++ {
			x := unassigned[next]
			next++
			target[u.member][x.topic] = append(target[u.member][x.topic], x.partition)
		}
	}
	if next < len(unassigned) {
		return nil, ErrUnassigned
	}
	return target, nil
}

// ownedPartitions is GroupSpec.isPartitionAssigned: every partition in some
// member's current assignment.
func ownedPartitions(req *abi.PartitionAssignRequest) map[tp]bool {
	owned := map[tp]bool{}
	for _, m := range req.Members {
		for _, a := range m.Assigned {
			for _, p := range a.Partitions {
				owned[tp{a.Topic, p}] = true
			}
		}
	}
	return owned
}

// assignedTopicOrder returns the topics of m's current assignment in the
// iteration order of its map (filled in ascending topic order).
func assignedTopicOrder(req *abi.PartitionAssignRequest, m *abi.ConsumerMember) []int32 {
	ts := make([]int32, len(m.Assigned))
	for i, a := range m.Assigned {
		ts[i] = a.Topic
	}
	return topicSetOrder(req.Topics, ts, grownCapacity(len(ts)))
}
