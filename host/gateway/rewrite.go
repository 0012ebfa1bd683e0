package gateway

import (
	"fmt"
	"net"
	"strconv"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rewrite replaces every broker address in resp (Metadata, DescribeCluster,
// FindCoordinator for transactions, and the leader endpoints of Produce and
// Fetch, KIP-951) by the coordhost listener of the same node, learning the
// node's real address on the way so its listener can reach it.
func (d *DataPlane) rewrite(resp kmsg.Response) error {
	switch r := resp.(type) {
	case *kmsg.MetadataResponse:
		for i := range r.Brokers {
			b := &r.Brokers[i]
			if err := d.rewriteNode(b.NodeID, &b.Host, &b.Port); err != nil {
				return err
			}
		}
		d.addCoordinatorNodes(r)
	case *kmsg.DescribeClusterResponse:
		for i := range r.Brokers {
			b := &r.Brokers[i]
			if err := d.rewriteNode(b.NodeID, &b.Host, &b.Port); err != nil {
				return err
			}
		}
		d.addCoordinatorBrokers(r)
	case *kmsg.FindCoordinatorResponse:
		if r.ErrorCode == 0 && r.Host != "" {
			if err := d.rewriteNode(r.NodeID, &r.Host, &r.Port); err != nil {
				return err
			}
		}
		for i := range r.Coordinators {
			c := &r.Coordinators[i]
			if c.ErrorCode == 0 && c.Host != "" {
				if err := d.rewriteNode(c.NodeID, &c.Host, &c.Port); err != nil {
					return err
				}
			}
		}
	case *kmsg.ProduceResponse:
		for i := range r.Brokers {
			b := &r.Brokers[i]
			if err := d.rewriteNode(b.NodeID, &b.Host, &b.Port); err != nil {
				return err
			}
		}
	case *kmsg.FetchResponse:
		for i := range r.Brokers {
			b := &r.Brokers[i]
			if err := d.rewriteNode(b.NodeID, &b.Host, &b.Port); err != nil {
				return err
			}
		}
	case *kmsg.CreateTopicsResponse:
		nonNullTopicConfigs(r)
	case *kmsg.DescribeTopicPartitionsResponse:
		nonNullELR(r)
	}
	return nil
}

// addCoordinatorNodes appends the coordhost cluster's nodes to r's
// brokers, so clients know the node ids FindCoordinator answers with.
// They lead no partition; an id the data plane uses already is left out.
func (d *DataPlane) addCoordinatorNodes(r *kmsg.MetadataResponse) {
	if d.cfg.CoordinatorNodes == nil {
		return
	}
	have := make(map[int32]bool, len(r.Brokers))
	for _, b := range r.Brokers {
		have[b.NodeID] = true
	}
	for _, b := range d.cfg.CoordinatorNodes() {
		if !have[b.NodeID] {
			have[b.NodeID] = true
			r.Brokers = append(r.Brokers, b)
		}
	}
}

// addCoordinatorBrokers lists the coordhost cluster's nodes in a
// DescribeCluster answer as Metadata lists them (addCoordinatorNodes).
func (d *DataPlane) addCoordinatorBrokers(r *kmsg.DescribeClusterResponse) {
	if d.cfg.CoordinatorNodes == nil || r.EndpointType == 2 { // controllers (KIP-919) are not brokers
		return
	}
	have := make(map[int32]bool, len(r.Brokers))
	for _, b := range r.Brokers {
		have[b.NodeID] = true
	}
	for _, n := range d.cfg.CoordinatorNodes() {
		if !have[n.NodeID] {
			have[n.NodeID] = true
			b := kmsg.NewDescribeClusterResponseBroker()
			b.NodeID, b.Host, b.Port, b.Rack = n.NodeID, n.Host, n.Port, n.Rack
			r.Brokers = append(r.Brokers, b)
		}
	}
}

// nonNullTopicConfigs gives every created topic of a v5+ CreateTopics
// response a config list: Kafka always sends one when it has no topic
// config error, and Java's AdminClient dereferences it (a NullPointerException
// in createTopics otherwise); the embedded data plane (kfake) sends null.
// It also replaces kfake's unknown config source (-1), which Java rejects.
func nonNullTopicConfigs(r *kmsg.CreateTopicsResponse) {
	if r.Version < 5 {
		return
	}
	for i := range r.Topics {
		t := &r.Topics[i]
		if t.ErrorCode == 0 && t.ConfigErrorCode == 0 && t.Configs == nil {
			t.Configs = []kmsg.CreateTopicsResponseTopicConfig{}
		}
		for j := range t.Configs {
			// kfake leaves the source unknown (-1), which Java's
			// ConfigSource.forId rejects; the values are what clients
			// read, so an unknown source is reported as a default.
			if c := &t.Configs[j]; c.Source < 0 {
				c.Source = int8(kmsg.ConfigSourceDefaultConfig)
			}
		}
	}
}

func (d *DataPlane) rewriteNode(node int32, host *string, port *int32) error {
	if node < 0 {
		return nil
	}
	d.mu.Lock()
	d.nodes[node] = net.JoinHostPort(*host, strconv.Itoa(int(*port)))
	d.mu.Unlock()
	h, p, err := d.cfg.Advertise(node)
	if err != nil {
		return fmt.Errorf("advertising a listener for data-plane node %d: %w", node, err)
	}
	*host, *port = h, p
	return nil
}

// nonNullELR gives every partition of a DescribeTopicPartitions response
// eligible-leader-replica lists: Kafka sends empty lists when ELR is off,
// Java's AdminClient.describeTopics (which Kafka Streams uses to set up
// repartition topics) dereferences them, and the embedded data plane
// (kfake) sends null.
func nonNullELR(r *kmsg.DescribeTopicPartitionsResponse) {
	for i := range r.Topics {
		for j := range r.Topics[i].Partitions {
			p := &r.Topics[i].Partitions[j]
			if p.EligibleLeaderReplicas == nil {
				p.EligibleLeaderReplicas = []int32{}
			}
			if p.LastKnownELR == nil {
				p.LastKnownELR = []int32{}
			}
		}
	}
}
