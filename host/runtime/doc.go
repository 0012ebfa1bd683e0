// Package runtime runs coordinator partitions: groups map to partitions by
// Kafka's __consumer_offsets rule, each partition has its own coordinator
// instance, timers and group commit, and a pool of workers runs the
// partitions one event at a time each. It knows two interfaces, the
// coordinator of a partition (Shard) and the record log (Log); it knows
// nothing of Kafka's messages or of group logic, as Kafka keeps its
// CoordinatorRuntime apart from the CoordinatorShard.
package runtime
