package uniform

import (
	"encoding/binary"
	"slices"
	"unicode/utf16"

	"github.com/coordhost/coordhost/abi"
)

// Kafka's uniform assignor walks java.util.HashMaps and HashSets keyed by
// member ids, topic ids and partition numbers, and which partitions a
// member keeps or gives up depends on that walk. Iteration order is a
// deterministic function of the keys' hash codes, the table capacity and,
// within a bucket, the insertion order; this file reproduces it for the
// GroupSpec the plugin's parity harness builds (and the host will build):
// members in a HashMap filled in ascending member-id order, subscriptions
// and current assignments in HashMaps/HashSets filled in ascending topic
// and partition order.

// stringHash is java.lang.String.hashCode over UTF-16 code units.
func stringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}

// uuidHash is org.apache.kafka.common.Uuid.hashCode.
func uuidHash(id abi.TopicID) int32 {
	h := binary.BigEndian.Uint64(id[:8]) ^ binary.BigEndian.Uint64(id[8:])
	return int32(h>>32) ^ int32(h)
}

// uuidCompare is Uuid.compareTo: signed comparison of the most, then the
// least significant 64 bits.
func uuidCompare(a, b abi.TopicID) int {
	if c := cmpInt64(int64(binary.BigEndian.Uint64(a[:8])), int64(binary.BigEndian.Uint64(b[:8]))); c != 0 {
		return c
	}
	return cmpInt64(int64(binary.BigEndian.Uint64(a[8:])), int64(binary.BigEndian.Uint64(b[8:])))
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// grownCapacity is the table size of a HashMap made with the no-arg
// constructor after n insertions (put resizes once size exceeds 3/4).
func grownCapacity(n int) int {
	c := 16
	for n > c/4*3 {
		c <<= 1
	}
	return c
}

// sizedCapacity is the table size of a HashMap created with initial
// capacity initCap and never grown past it by n insertions.
func sizedCapacity(initCap, n int) int {
	c := 1
	for c < initCap {
		c <<= 1
	}
	for n > c/4*3 {
		c <<= 1
	}
	return c
}

// copyCapacity is the capacity of new HashSet<>(collection of n) on JDK 17.
func copyCapacity(n int) int { return sizedCapacity(max(int(float32(n)/0.75)+1, 16), n) }

// hashOrder returns the iteration order of a hash table of capacity c
// holding keys with hashes hs, inserted in slice order: by bucket
// ((h ^ h>>>16) & (c-1)), and by insertion order within a bucket (resizes
// split buckets preserving it).
func hashOrder(hs []int32, c int) []int {
	order := make([]int, len(hs))
	for i := range order {
		order[i] = i
	}
	bucket := func(i int) int {
		u := uint32(hs[i])
		return int((u ^ u>>16) & uint32(c-1))
	}
	slices.SortStableFunc(order, func(a, b int) int { return bucket(a) - bucket(b) })
	return order
}

// intSetOrder returns the partitions of an ascending set in the iteration
// order of a HashSet<Integer> filled in ascending order.
func intSetOrder(ps []int32) []int32 {
	hs := make([]int32, len(ps))
	copy(hs, ps) // Integer.hashCode is the value
	out := make([]int32, len(ps))
	for i, j := range hashOrder(hs, grownCapacity(len(ps))) {
		out[i] = ps[j]
	}
	return out
}

// topicSetOrder returns topics (ascending indices) in the iteration order
// of a HashSet<Uuid> (or HashMap keyed by Uuid) filled in slice order, of
// capacity c.
func topicSetOrder(topics []abi.Topic, ts []int32, c int) []int32 {
	hs := make([]int32, len(ts))
	for i, t := range ts {
		hs[i] = uuidHash(topics[t].ID)
	}
	out := make([]int32, len(ts))
	for i, j := range hashOrder(hs, c) {
		out[i] = ts[j]
	}
	return out
}

// memberOrder returns member indices in the iteration order of GroupSpec's
// member map: a HashMap filled in ascending member-id order.
func memberOrder(ms []abi.ConsumerMember) []int {
	byID := make([]int, len(ms))
	for i := range byID {
		byID[i] = i
	}
	slices.SortFunc(byID, func(a, b int) int { return compareJava(ms[a].ID, ms[b].ID) })
	hs := make([]int32, len(ms))
	for i, m := range byID {
		hs[i] = stringHash(ms[m].ID)
	}
	out := make([]int, len(ms))
	for i, j := range hashOrder(hs, grownCapacity(len(ms))) {
		out[i] = byID[j]
	}
	return out
}

// compareJava is String.compareTo: UTF-16 code unit order.
func compareJava(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}
