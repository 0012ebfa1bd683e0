// Command golowest is a distinctive partition assignor for tests: each
// topic's partitions all go to the subscribed member with the lowest
// member id, so a test can tell from an assignment that it ran.
package main

import (
	"github.com/coordhost/coordhost/abi"
	"github.com/coordhost/coordhost/abi/guest"
)

func init() {
	guest.HandleAssignPartitions(func(req *abi.PartitionAssignRequest) (*abi.PartitionAssignResponse, error) {
		resp := &abi.PartitionAssignResponse{Members: make([][]abi.TopicPartitions, len(req.Members))}
		for t, topic := range req.Topics {
			lowest := -1
			for i, m := range req.Members {
				for _, s := range m.Subscribed {
					if int(s) == t && (lowest < 0 || m.ID < req.Members[lowest].ID) {
						lowest = i
					}
				}
			}
			if lowest < 0 || topic.Partitions == 0 {
				continue
			}
			all := make([]int32, topic.Partitions)
			for p := range all {
				all[p] = int32(p)
			}
			resp.Members[lowest] = append(resp.Members[lowest], abi.TopicPartitions{Topic: int32(t), Partitions: all})
		}
		return resp, nil
	})
}

func main() {}
