// Package core is coordhost's deterministic group coordinator: classic groups,
// KIP-1071 streams groups and online migration between the two protocols.
//
// core is a pure state machine in the manner of etcd raft. It performs no I/O,
// never reads the clock and starts no goroutines: every entry point takes the
// current wall-clock time in epoch milliseconds from its caller and returns,
// as data, the records to persist, the responses to release once those records
// are durable, the timers to set, the assignor runs to perform and the topics
// to create. Live state changes only by applying records, so replaying the
// record log into an empty coordinator rebuilds the same state.
package core
