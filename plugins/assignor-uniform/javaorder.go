package uniform

import (
	"cmp"
	"encoding/binary"
	"math/bits"
	"slices"
	"unicode/utf16"

	"github.com/coordhost/coordhost/abi"
)

// Kafka's uniform assignor walks java.util.HashMaps and HashSets keyed by
// member ids, topic ids and partition numbers, and which partitions a
// member keeps or gives up depends on that walk. Iteration order is a
// deterministic function of the keys' hash codes, the table capacity and,
// within a bucket, the insertion order; this file reproduces it for the
// GroupSpec the plugin's parity harness builds (members in a HashMap
// filled in ascending member-id order, subscriptions and current
// assignments in HashMaps/HashSets filled in ascending topic and partition
// order) and for the member order Kafka's coordinator hands over from its
// member map (MemberMap).

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
// member map: a HashMap (default capacity) filled in the order the members
// are handed over: as Kafka's coordinator hands them from its member map
// (mm, else the request's MemberOrder), or, with neither, in ascending
// member id (the parity harness's GroupSpec).
func memberOrder(req *abi.PartitionAssignRequest, mm *MemberMap) []int {
	ms := req.Members
	var handed []int
	switch {
	case mm != nil:
		handed = mm.handOrder(ms, byJavaID(ms))
	case len(req.MemberOrder) == len(ms):
		handed = make([]int, len(ms))
		for i, m := range req.MemberOrder {
			handed[i] = int(m)
		}
	default:
		handed = byJavaID(ms)
	}
	hs := make([]int32, len(ms))
	for i, m := range handed {
		hs[i] = stringHash(ms[m].ID)
	}
	out := make([]int, len(ms))
	for i, j := range hashOrder(hs, grownCapacity(len(ms))) {
		out[i] = handed[j]
	}
	return out
}

// MemberMap is the state of a consumer group's member map in Kafka's
// coordinator when the target assignment is computed; it decides the order
// in which the members are handed to the assignor, and so which member
// keeps or takes the extra partition of an uneven split.
//
// TargetAssignmentBuilder.build copies the members into a new HashMap in
// the iteration order of the map it is given (GroupMetadataManager's
// UpdatedMembersAndTargetAssignmentView): the group's members, a
// TimelineHashMap holding the records replayed before the running request,
// with the member that request updates kept in its place and the member
// it adds handed over after the table. Members whose ids share a HashMap
// bucket stay in that order. A TimelineHashMap (BaseHashTable) starts with
// 2 slots, doubles when a put finds it would be over 3/4 full counting one
// more element (an update counts too), never shrinks, picks a slot from
// the top bits of hashCode * 0x9E3779B97F4A7C15, appends to a slot's chain
// and iterates each chain from its end.
type MemberMap struct {
	// Peak is the most members the table has held (the running request's
	// additions not counted). A member's metadata record is followed by
	// its assignment record, so every size reached also saw an update.
	Peak int
	// Seq[i] orders Members[i]'s insertion into the table (earlier is
	// less); a negative Seq marks a member the running request adds.
	Seq []int64
}

// byJavaID returns the member indices ascending by member id, as Java
// compares strings.
func byJavaID(ms []abi.ConsumerMember) []int {
	ids := make([]int, len(ms))
	for i := range ids {
		ids[i] = i
	}
	slices.SortFunc(ids, func(a, b int) int { return compareJava(ms[a].ID, ms[b].ID) })
	return ids
}

// Order returns the order in which Kafka's coordinator hands the members
// ms to its assignor, as member indices: the request's MemberOrder (ABI
// request tag 0) for a plugin.
func (mm *MemberMap) Order(ms []abi.ConsumerMember) []int32 {
	out := make([]int32, 0, len(ms))
	for _, i := range mm.handOrder(ms, byJavaID(ms)) {
		out = append(out, int32(i))
	}
	return out
}

// TimelineCapacity is the slot count of a TimelineHashMap created empty
// that has held at most peak elements, with a put at that size.
func TimelineCapacity(peak int) int {
	c := 2
	for float64(peak+1)*0.75 > float64(c) {
		c <<= 1
	}
	return c
}

// timelineSlot is BaseHashTable.findSlot for a key hash h in c slots.
func timelineSlot(h int32, c int) uint64 {
	return uint64(int64(h)*-7046029254386353131) >> (65 - bits.Len(uint(c)))
}

// handOrder returns byID (member indices ascending by id) in the order
// the view hands them over: the table's members by slot and, within a
// slot, latest insertion first; then the added ones, in the iteration
// order of the view's HashMap of additions (filled by id, as it is for
// the one member a request adds).
func (mm *MemberMap) handOrder(ms []abi.ConsumerMember, byID []int) []int {
	c := TimelineCapacity(mm.Peak)
	var table, added []int
	for _, i := range byID {
		if mm.Seq[i] < 0 {
			added = append(added, i)
		} else {
			table = append(table, i)
		}
	}
	slot := func(i int) uint64 { return timelineSlot(stringHash(ms[i].ID), c) }
	slices.SortFunc(table, func(a, b int) int {
		if sa, sb := slot(a), slot(b); sa != sb {
			return cmp.Compare(sa, sb)
		}
		return cmp.Compare(mm.Seq[b], mm.Seq[a])
	})
	hs := make([]int32, len(added))
	for i, m := range added {
		hs[i] = stringHash(ms[m].ID)
	}
	for _, j := range hashOrder(hs, grownCapacity(len(added))) {
		table = append(table, added[j])
	}
	return table
}

// compareJava is String.compareTo: UTF-16 code unit order.
func compareJava(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}
