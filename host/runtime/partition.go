package runtime

import "unicode/utf16"

// DefaultPartitions is the partition count of a new store, Kafka's default
// for __consumer_offsets (offsets.topic.num.partitions).
const DefaultPartitions = 50

// PartitionFor returns the partition of group among n partitions with
// Kafka's rule for __consumer_offsets: abs(groupId.hashCode()) % n, where
// hashCode is Java's String.hashCode over UTF-16 code units and abs is
// Kafka's Utils.abs, which maps Integer.MIN_VALUE to 0 (Math.abs would
// leave it negative).
func PartitionFor(group string, n int) int {
	if n <= 1 {
		return 0
	}
	h := javaStringHash(group)
	if h == -1<<31 {
		return 0
	}
	if h < 0 {
		h = -h
	}
	return int(h % int32(n))
}

// javaStringHash is java.lang.String.hashCode: s[0]*31^(n-1) + ... over the
// UTF-16 code units, in int32 arithmetic. Each byte that is not part of
// valid UTF-8 counts as one U+FFFD (Java's decoder may group such bytes
// differently; Kafka clients send UTF-8).
func javaStringHash(s string) int32 {
	var h int32
	for _, r := range s {
		if r >= 0x10000 {
			hi, lo := utf16.EncodeRune(r)
			h = 31*h + int32(hi)
			h = 31*h + int32(lo)
			continue
		}
		h = 31*h + int32(r)
	}
	return h
}
