// Package store is the durable record log behind the coordinator: records
// keyed as in Kafka's __consumer_offsets, group-committed, fsynced and
// replayed in sequence order at start.
package store
