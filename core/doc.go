// Package core is coordhost's deterministic group coordinator: classic groups,
// KIP-1071 streams groups and online migration between the two protocols.
//
// core is a pure state machine in the manner of etcd raft. It performs no I/O,
// never reads the clock and starts no goroutines: every entry point that can
// change state takes the current wall-clock time in epoch milliseconds from
// its caller and returns,
// as data, the records to persist, the responses to release once those records
// are durable, the timers to set, the assignor runs to perform and the topics
// to create, with events saying why it changed what it changed (events.go). Live state changes only by applying records, so replaying the
// record log into an empty coordinator rebuilds the same state.
//
// # Using it (the host's loop)
//
// The Coordinator has three kinds of entry point (step.go), in the manner
// of raft's RawNode:
//
//   - Step(now, in) applies one Input and returns an Output: every change
//     of state goes through it. Inputs are a closed set of structs:
//     Request (a client's JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
//     StreamsGroupHeartbeat, ConsumerGroupHeartbeat, DeleteGroups or
//     OffsetCommit, with its RequestID and ClientInfo; core routes it by
//     its kmsg body), Tick, AssignorResult, ProbeResult, Topics (topic
//     metadata), EndOffsets, and the group settings StreamsGroupConfig,
//     ClassicGroupConfig, ConsumerGroupConfig, StreamsMigrationPolicy and
//     ConsumerMigrationPolicy.
//   - Reads change nothing, timers included: Read(req) answers
//     DescribeGroups, ListGroups, StreamsGroupDescribe,
//     ConsumerGroupDescribe and StreamsGroupTopologyDescriptionUpdate;
//     DecideOffsets(req) decides TxnOffsetCommit, OffsetFetch and
//     OffsetDelete; Group, GroupIDs, Dump, TimerKeys, LastAssignorError,
//     StreamsChangelogs and KnownEndOffsets serve the host's bookkeeping.
//     Call them between batches (right after Commit) to see committed
//     state, as Kafka reads at the last committed offset.
//   - The lifecycle: Replay / ReplayBytes, Loaded, Commit, Seal,
//     CommitSealed, Rollback, NextDeadline (DeadlineBound: a cheaper time
//     no later than it).
//
// An input or request an entry point does not take is ErrUnknownInput,
// never a panic, and changes nothing.
//
// Offsets. Committed offsets live in the data plane; core only decides
// (offsets.go). Every offsets request gets its verdict as OffsetDecision,
// from the entry point of its kind: OffsetCommit through Step, because a
// classic member's valid commit restarts its session timer (the verdict
// is Output.Offsets, beside those timer changes, with no Response); the
// other three through DecideOffsets, which changes nothing.
//
//	c, _ := core.New(core.DefaultConfig())
//	// on start-up: c.Replay(rec) (or c.ReplayBytes(key, value)) for every
//	// durable record in log order, then out := c.Loaded(now).
//	out, err := c.Step(now, core.Request{ID: id, Client: client, Body: req})
//	out, err = c.Step(now, core.Tick{})     // at c.NextDeadline()
//	out, err = c.Step(now, core.AssignorResult{Run: run, Result: res})
//	out, err = c.Step(now, core.Topics{Topics: topics})
//	// Append every out.Records since the last Commit as one batch, then
//	//   success: c.Commit(); release the batch's out.Responses and
//	//            report its out.Events (logs, metrics, history)
//	//   failure: ro := c.Rollback(); fail the batch's responses and
//	//            ro.Failed (parked requests), drop its events; act on
//	//            ro.AssignorRuns.
//
// Classic requests (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, offset
// decisions) for a streams group holding classic members are bridged by
// migration_bridge.go; online migration between the kinds follows
// streams.migration.policy (Config.StreamsMigrationPolicy, the
// StreamsMigrationPolicy input; docs/MIGRATION.md). For a consumer group
// holding classic members they are bridged by consumer_migration_bridge.go,
// and online classic <-> consumer migration follows
// group.consumer.migration.policy (Config.ConsumerMigrationPolicy, the
// ConsumerMigrationPolicy input; docs/CONSUMER.md). DeleteGroups writes
// tombstones and returns a response; StreamsGroupConfig carries per-group
// overrides (validate them first with StreamsGroupOverrides.Validate);
// EndOffsets carries changelog end offsets the host fetched, for warm-up
// lags of every member, classic members of streams groups included
// (docs/WARMUPS.md §2, docs/MIGRATION.md). Records: records.EncodeRecord /
// records.DecodeRecord give Kafka's __consumer_offsets bytes for the
// host's store.
//
// # Extension points
//
// Group kinds. Group (group.go) is the interface every kind implements;
// GroupKind enumerates kinds. The Coordinator holds map[string]Group: one
// group per id, of exactly one kind. Streams groups live in streams_*.go;
// classic groups go in classic*.go, migration in migration*.go.
//
// Records. The record structs and their bytes live in package records
// (core/records, which imports nothing of core): each record type
// registers its key and value decoders there from its kind's file
// (records/streams.go 17 and 19–23, records/classic.go 2,
// records/consumer.go 3–8 and 16), and key and value structs implement
// records.RecordKey / records.RecordValue with the primitive reader/writer
// of records/wire.go. Core registers how it applies each type with
// registerApplier from an init function in its kind's file
// (streams_records.go, classic_records.go, consumer_records.go);
// offsets-related types (0, 1) can be added likewise on both sides.
// Coordinator.write applies a record through the dispatch table and queues
// it; Replay applies it alone.
//
// Undo. Every mutation made while applying a record must be undoable:
// register the inverse with Coordinator.onUndo (see putGroup, putMember,
// saveHeader). Commit forgets the log, Rollback runs it backwards, and a
// request that fails half-way reverts to its savepoint.
//
// Timers. A timer is data (key, deadline, kind, group, member, epoch).
// Each kind registers its handlers with registerTimerKind; streams uses
// kinds 1–15 (1–4 and 9, the probing timer, taken), classic should take
// 16–31; migration uses 32–34 (join, sync, and the sync timer Loaded
// restores for classic members of streams groups).
//
// Group conversion. groupDeleters[kind] writes the tombstones that delete
// an empty group of that kind; a streams join on an empty group of another
// kind uses it (offline migration, Kafka's behaviour), and DeleteGroups
// and online migration can too.
//
// Assignors. assignor.go defines the contract (AssignInput, AssignResult):
// plain data with dense indices, documented for the host to translate to
// the plugin ABI. ReferenceAssign is a simple in-core assignor for tests.
package core
