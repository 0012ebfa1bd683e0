package core

import (
	"encoding/binary"
	"hash/fnv"
	"sort"
)

// TopicMetadata is what core knows about a topic of the data plane. The host
// refreshes it with UpdateTopics.
type TopicMetadata struct {
	Name       string
	ID         [16]byte
	Partitions int32
	// Racks lists, per partition, the racks of its replicas (may be nil).
	Racks [][]string
}

type topicImage struct {
	byName map[string]TopicMetadata
	// version counts the images whose topic names changed; resolved
	// regexes record it (Kafka records the metadata image's offset).
	version int64
	// gen counts the images: every update replaces byName and adds one.
	gen uint64
}

// updateTopics replaces the topic metadata image. Groups whose topology uses
// a topic that changed re-validate their topology on their next heartbeat,
// as Kafka's metadata-image listener requests a refresh.
func (c *Coordinator) updateTopics(now int64, topics []TopicMetadata) Output {
	c.begin(now)
	old := c.topics.byName
	next := make(map[string]TopicMetadata, len(topics))
	for _, t := range topics {
		next[t.Name] = t
	}
	c.topics.byName = next
	c.topics.gen++
	namesChanged := len(old) != len(next)
	for name := range next {
		if _, ok := old[name]; !ok {
			namesChanged = true
		}
	}
	if namesChanged {
		c.topics.version++
	}
	for _, id := range c.groupIDs() {
		switch g := c.groups[id].(type) {
		case *consumerGroup:
			g.metadataRefresh = g.metadataRefresh || topicsChanged(old, next, g.subscribedTopics())
			g.regexTopicsChanged = g.regexTopicsChanged || namesChanged
		case *streamsGroup:
			g.soft.metadataRefresh = g.soft.metadataRefresh || topicsChanged(old, next, g.requiredTopics())
		}
	}
	return c.end()
}

// topicsChanged reports whether any of names differs between two topic
// images (appeared, disappeared or changed metadata).
func topicsChanged(old, next map[string]TopicMetadata, names []string) bool {
	for _, name := range names {
		a, inOld := old[name]
		b, inNew := next[name]
		if inOld != inNew || topicHash(a) != topicHash(b) {
			return true
		}
	}
	return false
}

// topicHash is the deterministic hash of one topic's metadata: FNV-1a 64
// over a version byte, the topic id, the name, the partition count and each
// partition's sorted racks, all length-prefixed. Kafka uses XXH3-64 over the
// same fields; coordhost uses only the standard library and documents the
// difference (docs/RATIONALE.md). The value is persisted in the group
// metadata record but only ever compared with values coordhost computed.
func topicHash(t TopicMetadata) uint64 {
	h := fnv.New64a()
	var buf [8]byte
	putStr := func(s string) {
		binary.BigEndian.PutUint32(buf[:4], uint32(len(s)))
		h.Write(buf[:4])
		h.Write([]byte(s))
	}
	h.Write([]byte{0})
	h.Write(t.ID[:])
	putStr(t.Name)
	binary.BigEndian.PutUint32(buf[:4], uint32(t.Partitions))
	h.Write(buf[:4])
	for p := int32(0); p < t.Partitions; p++ {
		binary.BigEndian.PutUint32(buf[:4], uint32(p))
		h.Write(buf[:4])
		var racks []string
		if int(p) < len(t.Racks) {
			racks = append(racks, t.Racks[p]...)
		}
		sort.Strings(racks)
		binary.BigEndian.PutUint32(buf[:4], uint32(len(racks)))
		h.Write(buf[:4])
		for _, r := range racks {
			putStr(r)
		}
	}
	return h.Sum64()
}

// groupMetadataHash combines the hashes of the named topics that exist,
// sorted by name; 0 when none exists.
func (c *Coordinator) groupMetadataHash(names []string) int64 {
	sorted := append([]string(nil), names...)
	sort.Strings(sorted)
	h := fnv.New64a()
	var buf [8]byte
	n := 0
	last := ""
	for i, name := range sorted {
		if i > 0 && name == last {
			continue
		}
		last = name
		t, ok := c.topics.byName[name]
		if !ok {
			continue
		}
		binary.BigEndian.PutUint64(buf[:], topicHash(t))
		h.Write(buf[:])
		n++
	}
	if n == 0 {
		return 0
	}
	return int64(h.Sum64())
}
