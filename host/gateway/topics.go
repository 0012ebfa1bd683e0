package gateway

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TopicInfo is what the coordinator needs to know about a data-plane topic.
type TopicInfo struct {
	Name       string
	ID         [16]byte
	Partitions []PartitionInfo
	// Err is the data plane's error for this topic (e.g. UNKNOWN_TOPIC_OR_PARTITION).
	Err error
}

// PartitionInfo is one partition: its leader and its replicas' racks.
type PartitionInfo struct {
	Partition int32
	Leader    int32
	Replicas  []int32
	// Racks are the racks of Replicas, in the same order ("" when unknown).
	Racks []string
}

// Topics fetches metadata (names, ids, partition counts, racks) for the
// named topics, or for every topic when names is empty.
func (d *DataPlane) Topics(ctx context.Context, names ...string) ([]TopicInfo, error) {
	req := kmsg.NewPtrMetadataRequest()
	if len(names) > 0 {
		for _, n := range names {
			t := kmsg.NewMetadataRequestTopic()
			t.Topic = kmsg.StringPtr(n)
			req.Topics = append(req.Topics, t)
		}
	} else {
		req.Topics = nil // all topics
	}
	resp, err := req.RequestWith(ctx, d.admin)
	if err != nil {
		return nil, fmt.Errorf("data-plane metadata: %w", err)
	}
	racks := make(map[int32]string, len(resp.Brokers))
	for _, b := range resp.Brokers {
		if b.Rack != nil {
			racks[b.NodeID] = *b.Rack
		}
	}
	out := make([]TopicInfo, 0, len(resp.Topics))
	for _, t := range resp.Topics {
		ti := TopicInfo{ID: t.TopicID, Err: kerr.ErrorForCode(t.ErrorCode)}
		if t.Topic != nil {
			ti.Name = *t.Topic
		}
		for _, p := range t.Partitions {
			pi := PartitionInfo{Partition: p.Partition, Leader: p.Leader, Replicas: p.Replicas}
			for _, r := range p.Replicas {
				pi.Racks = append(pi.Racks, racks[r])
			}
			ti.Partitions = append(ti.Partitions, pi)
		}
		out = append(out, ti)
	}
	d.learnTopics(out, len(names) == 0)
	return out, nil
}

// TopicSpec describes an internal topic to create.
type TopicSpec struct {
	Name              string
	Partitions        int32
	ReplicationFactor int16 // -1: the data plane's default
	Configs           map[string]string
}

// CreateTopics creates topics in the data plane. The result maps each topic
// to nil (created, or it already existed) or to the data plane's error.
func (d *DataPlane) CreateTopics(ctx context.Context, specs []TopicSpec) (map[string]error, error) {
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(d.cfg.RequestTimeout.Milliseconds())
	for _, s := range specs {
		t := kmsg.NewCreateTopicsRequestTopic()
		t.Topic, t.NumPartitions, t.ReplicationFactor = s.Name, s.Partitions, s.ReplicationFactor
		for k, v := range s.Configs {
			c := kmsg.NewCreateTopicsRequestTopicConfig()
			c.Name, c.Value = k, kmsg.StringPtr(v)
			t.Configs = append(t.Configs, c)
		}
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, d.admin)
	if err != nil {
		return nil, fmt.Errorf("data-plane create topics: %w", err)
	}
	out := make(map[string]error, len(resp.Topics))
	for _, t := range resp.Topics {
		if t.ErrorCode == kerr.TopicAlreadyExists.Code {
			out[t.Topic] = nil
			continue
		}
		out[t.Topic] = kerr.ErrorForCode(t.ErrorCode)
	}
	return out, nil
}

// EndOffsets returns the end offsets (read_committed, so the last stable
// offset) of the given partitions, topic -> partition -> offset. Partitions
// the data plane could not answer are missing from the result; the first
// such error is returned alongside it.
func (d *DataPlane) EndOffsets(ctx context.Context, parts map[string][]int32) (map[string]map[int32]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.ReplicaID = -1
	req.IsolationLevel = 1
	for topic, ps := range parts {
		t := kmsg.NewListOffsetsRequestTopic()
		t.Topic = topic
		for _, p := range ps {
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -1, -1
			t.Partitions = append(t.Partitions, rp)
		}
		req.Topics = append(req.Topics, t)
	}
	resp, err := req.RequestWith(ctx, d.admin)
	if err != nil {
		return nil, fmt.Errorf("data-plane list offsets: %w", err)
	}
	out := make(map[string]map[int32]int64, len(resp.Topics))
	var first error
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 {
				if first == nil {
					first = fmt.Errorf("end offset of %s[%d]: %w", t.Topic, p.Partition, kerr.ErrorForCode(p.ErrorCode))
				}
				continue
			}
			if out[t.Topic] == nil {
				out[t.Topic] = make(map[int32]int64)
			}
			out[t.Topic][p.Partition] = p.Offset
		}
	}
	return out, first
}

// learnTopics refreshes the topic id <-> name maps used to translate
// OffsetCommit/OffsetFetch v10 (topic ids) for data planes that name topics.
// A listing of every topic (all) replaces them, so that a deleted topic is
// forgotten and a by-name request for it is answered as Kafka answers an
// unknown topic (upstreamName) instead of going upstream under a stale id.
func (d *DataPlane) learnTopics(ts []TopicInfo, all bool) {
	d.topicsMu.Lock()
	defer d.topicsMu.Unlock()
	if d.byID == nil || all {
		d.byID, d.byName = make(map[[16]byte]string, len(ts)), make(map[string][16]byte, len(ts))
	}
	for _, t := range ts {
		if t.Err != nil || t.Name == "" {
			continue
		}
		d.byID[t.ID] = t.Name
		d.byName[t.Name] = t.ID
	}
}

// topicNames resolves ids to names, refreshing metadata once on a miss.
// Unknown ids are absent from the result.
func (d *DataPlane) topicNames(ctx context.Context, ids [][16]byte) (map[[16]byte]string, error) {
	lookup := func() (map[[16]byte]string, bool) {
		d.topicsMu.Lock()
		defer d.topicsMu.Unlock()
		out, all := make(map[[16]byte]string, len(ids)), true
		for _, id := range ids {
			if n, ok := d.byID[id]; ok {
				out[id] = n
			} else {
				all = false
			}
		}
		return out, all
	}
	if out, all := lookup(); all {
		return out, nil
	}
	if _, err := d.Topics(ctx); err != nil {
		return nil, err
	}
	out, _ := lookup()
	return out, nil
}

// knownTopic reports whether the data plane's metadata named topic when
// last asked (its id may be zero: a data plane without topic ids).
func (d *DataPlane) knownTopic(name string) bool {
	d.topicsMu.Lock()
	defer d.topicsMu.Unlock()
	_, ok := d.byName[name]
	return ok
}

// topicID returns the id of a topic name, zero when unknown.
func (d *DataPlane) topicID(name string) [16]byte {
	d.topicsMu.Lock()
	defer d.topicsMu.Unlock()
	return d.byName[name]
}

// ensureIDs learns the ids of the named topics that are not known yet, so
// an upstream request negotiated at a topic-id version (v10) carries them.
func (d *DataPlane) ensureIDs(ctx context.Context, names []string) error {
	var missing []string
	d.topicsMu.Lock()
	for _, n := range names {
		if _, ok := d.byName[n]; !ok && n != "" {
			missing = append(missing, n)
		}
	}
	d.topicsMu.Unlock()
	if len(missing) == 0 {
		return nil
	}
	_, err := d.Topics(ctx, missing...)
	return err
}

// TopicNames resolves topic ids to names (unknown ids are absent),
// refreshing the data plane's metadata once on a miss.
func (d *DataPlane) TopicNames(ctx context.Context, ids [][16]byte) (map[[16]byte]string, error) {
	return d.topicNames(ctx, ids)
}

// KnownTopicName is the name of topic id in the data plane's metadata
// when last asked ("" when unknown); it asks nothing.
func (d *DataPlane) KnownTopicName(id [16]byte) string {
	d.topicsMu.Lock()
	defer d.topicsMu.Unlock()
	return d.byID[id]
}
