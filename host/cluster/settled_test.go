package cluster_test

import (
	"testing"

	"github.com/coordhost/coordhost/host/cluster"
)

// TestSettled: two nodes of four partitions are settled only when each
// holds its half actively with a valid lease and both route every
// partition to its holder.
func TestSettled(t *testing.T) {
	node := func(id int32, state string, parts ...int) cluster.Status {
		st := cluster.Status{BrokerID: id, LeaseValid: true}
		for _, p := range parts {
			st.Partitions = append(st.Partitions, cluster.PartitionStatus{Partition: p, State: state})
		}
		return st
	}
	routes := func(a, b []int) []cluster.PeerStatus {
		pa, pb := cluster.PeerStatus{Partitions: a}, cluster.PeerStatus{Partitions: b}
		pa.BrokerID, pb.BrokerID = 1, 2
		return []cluster.PeerStatus{pa, pb}
	}
	settled := func() []cluster.Status {
		a, b := node(1, "active", 0, 1), node(2, "active", 2, 3)
		a.Nodes, b.Nodes = routes([]int{0, 1}, []int{2, 3}), routes([]int{0, 1}, []int{2, 3})
		return []cluster.Status{a, b}
	}
	if !cluster.Settled(settled(), 4) {
		t.Fatal("a settled cluster is not settled")
	}
	for name, spoil := range map[string]func(sts []cluster.Status){
		"lease lost":          func(sts []cluster.Status) { sts[0].LeaseValid = false },
		"still loading":       func(sts []cluster.Status) { sts[1].Partitions[0].State = "loading" },
		"uneven split":        func(sts []cluster.Status) { sts[0].Partitions = sts[0].Partitions[:1] },
		"a stale route":       func(sts []cluster.Status) { sts[1].Nodes = routes([]int{0}, []int{1, 2, 3}) },
		"a node not seen":     func(sts []cluster.Status) { sts[0].Nodes = sts[0].Nodes[:1] },
		"one partition twice": func(sts []cluster.Status) { sts[1].Partitions[0].Partition = 1 },
	} {
		sts := settled()
		spoil(sts)
		if cluster.Settled(sts, 4) {
			t.Errorf("%s: settled", name)
		}
	}
}
