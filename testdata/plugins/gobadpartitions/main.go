// Command gobadpartitions is a broken partition assignor for tests: it
// gives every member partition 0 of each topic it subscribes to, so a
// partition ends up with two owners as soon as two members share a topic.
package main

import (
	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/guest"
)

func init() {
	guest.HandleAssignPartitions(func(req *abi.PartitionAssignRequest) (*abi.PartitionAssignResponse, error) {
		resp := &abi.PartitionAssignResponse{Members: make([][]abi.TopicPartitions, len(req.Members))}
		for i, m := range req.Members {
			for _, t := range m.Subscribed {
				if req.Topics[t].Partitions > 0 {
					resp.Members[i] = append(resp.Members[i], abi.TopicPartitions{Topic: t, Partitions: []int32{0}})
				}
			}
		}
		return resp, nil
	})
}

func main() {}
