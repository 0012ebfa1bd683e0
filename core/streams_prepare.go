package core

import (
	"crypto/sha256"
	"encoding/binary"
	"hash"

	"github.com/coordhost/coordhost/core/records"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// PreparedStreamsHeartbeat is a StreamsGroupHeartbeat request with the
// work that reads no coordinator state already done: the topology's size
// counted, the request-level rules checked and the topology's digest
// taken. A heartbeat carrying a topology near streams.max.topology.size
// costs milliseconds of that work; done before the request waits for its
// partition, it no longer holds the other groups of the partition, and
// the step compares two digests instead of two topologies. The topology
// is converted to its record form only when a group stores it (once per
// group): a join with the stored topology leaves no garbage of it.
type PreparedStreamsHeartbeat struct {
	req      *kmsg.StreamsGroupHeartbeatRequest
	entries  int
	prepared bool
	invalid  *kafkaError // the request-level rules' answer
	digest   topologyDigest
}

// PrepareStreamsHeartbeat prepares req for streamsGroupHeartbeatPrepared.
// It reads no coordinator state and may run on any goroutine (a host runs
// it on the request's connection, before the request is queued); req must
// not change afterwards. A topology with more entries than
// DefaultMaxTopologySize is only counted: the step refuses it, or, where
// the bound was raised, prepares it itself.
func PrepareStreamsHeartbeat(req *kmsg.StreamsGroupHeartbeatRequest) *PreparedStreamsHeartbeat {
	p := &PreparedStreamsHeartbeat{req: req, entries: TopologyEntries(req.Topology)}
	if p.entries <= DefaultMaxTopologySize {
		p.prepare()
	}
	return p
}

// prepare does the state-independent work once.
func (p *PreparedStreamsHeartbeat) prepare() {
	if p.prepared {
		return
	}
	p.prepared = true
	if p.invalid = validateStreamsHeartbeat(p.req); p.invalid == nil && p.req.Topology != nil {
		p.digest = digestRequestTopology(p.req.Topology)
	}
}

// topologyDigest is the SHA-256 of a topology's canonical encoding: two
// topologies have the same digest exactly when topologyEqual holds
// (collisions aside, which SHA-256 makes infeasible to construct).
type topologyDigest [sha256.Size]byte

// storedTopologyDigest remembers the digest of the topology a group
// stores, computed once per stored value (a replayed or rolled-back
// topology is a new value and is digested again on its first comparison).
type storedTopologyDigest struct {
	of  *records.StreamsGroupTopologyValue
	sum topologyDigest
}

// storedDigest is the digest of g's stored topology (non-nil).
func (g *streamsGroup) storedDigest() topologyDigest {
	if g.topoDigest.of != g.topology {
		g.topoDigest = storedTopologyDigest{of: g.topology, sum: digestTopology(g.topology)}
	}
	return g.topoDigest.sum
}

// digestTopology hashes every field topologyEqual compares, each list
// preceded by its length, so an empty list and an absent one hash alike
// and no two different topologies share an encoding.
func digestTopology(t *records.StreamsGroupTopologyValue) topologyDigest {
	d := newDigester(t.Epoch, len(t.Subtopologies))
	for i := range t.Subtopologies {
		s := &t.Subtopologies[i]
		d.str(s.SubtopologyID)
		d.strs(s.SourceTopics)
		d.strs(s.SourceTopicRegex)
		d.topics(s.StateChangelogTopics)
		d.strs(s.RepartitionSinkTopics)
		d.topics(s.RepartitionSourceTopics)
		d.int(int64(len(s.CopartitionGroups)))
		for _, g := range s.CopartitionGroups {
			d.ints(g.SourceTopics)
			d.ints(g.SourceTopicRegex)
			d.ints(g.RepartitionSourceTopics)
		}
	}
	return d.sum()
}

// digestRequestTopology is digestTopology of topologyFromRequest(t),
// taken from the request without converting it (checked against it by
// TestRequestTopologyDigest).
func digestRequestTopology(t *kmsg.StreamsGroupHeartbeatRequestTopology) topologyDigest {
	d := newDigester(t.Epoch, len(t.Subtopologies))
	for i := range t.Subtopologies {
		s := &t.Subtopologies[i]
		d.str(s.SubtopologyID)
		d.strs(s.SourceTopics)
		d.strs(s.SourceTopicRegex)
		d.requestTopics(s.StateChangelogTopics)
		d.strs(s.RepartitionSinkTopics)
		d.requestTopics(s.RepartitionSourceTopics)
		d.int(int64(len(s.CopartitionGroups)))
		for _, g := range s.CopartitionGroups {
			d.ints(g.SourceTopics)
			d.ints(g.SourceTopicRegex)
			d.ints(g.RepartitionSourceTopics)
		}
	}
	return d.sum()
}

// digester buffers a canonical encoding into a hash. Its buffer is part
// of it (one allocation, not two): every join's topology is digested,
// and a buffer of its own, 4 KB, was most of a join's garbage before it
// is queued; the hash takes the encoding in 512-byte writes instead.
type digester struct {
	h    hash.Hash
	buf  []byte
	room [512]byte
}

// newDigester starts the encoding of a topology of subs subtopologies.
func newDigester(epoch int32, subs int) *digester {
	d := &digester{h: sha256.New()}
	d.buf = d.room[:0]
	d.int(int64(epoch))
	d.int(int64(subs))
	return d
}

func (d *digester) sum() topologyDigest {
	var sum topologyDigest
	d.flush()
	d.h.Sum(sum[:0])
	return sum
}

func (d *digester) flush() {
	d.h.Write(d.buf)
	d.buf = d.buf[:0]
}

func (d *digester) int(v int64) {
	if len(d.buf)+binary.MaxVarintLen64 > cap(d.buf) {
		d.flush()
	}
	d.buf = binary.AppendVarint(d.buf, v)
}

func (d *digester) str(s string) {
	d.int(int64(len(s)))
	if len(d.buf)+len(s) > cap(d.buf) {
		d.flush()
		if len(s) > cap(d.buf) {
			d.h.Write([]byte(s))
			return
		}
	}
	d.buf = append(d.buf, s...)
}

func (d *digester) strs(ss []string) {
	d.int(int64(len(ss)))
	for _, s := range ss {
		d.str(s)
	}
}

func (d *digester) ints(vs []int16) {
	d.int(int64(len(vs)))
	for _, v := range vs {
		d.int(int64(v))
	}
}

func (d *digester) topic(name string, partitions int32, rf int16, configs int) {
	d.str(name)
	d.int(int64(partitions))
	d.int(int64(rf))
	d.int(int64(configs))
}

func (d *digester) topics(ts []records.TopicInfo) {
	d.int(int64(len(ts)))
	for _, t := range ts {
		d.topic(t.Name, t.Partitions, t.ReplicationFactor, len(t.TopicConfigs))
		for _, kv := range t.TopicConfigs {
			d.str(kv.Key)
			d.str(kv.Value)
		}
	}
}

func (d *digester) requestTopics(ts []kmsg.TopicInfo) {
	d.int(int64(len(ts)))
	for _, t := range ts {
		d.topic(t.Topic, t.NumPartitions, t.ReplicationFactor, len(t.Configs))
		for _, kv := range t.Configs {
			d.str(kv.Key)
			d.str(kv.Value)
		}
	}
}
