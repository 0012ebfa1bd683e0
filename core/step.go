package core

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// The Coordinator's surface has three parts (doc.go):
//
//   - Step applies one Input, a request or an internal input, and returns
//     what it wants done as an Output. Every change of state goes through
//     it.
//   - Read answers a describe or list request, DecideOffsets an offsets
//     request that changes nothing, and a few typed reads (Group, GroupIDs,
//     Dump, TimerKeys, LastAssignorError, StreamsChangelogs,
//     KnownEndOffsets) serve the host's own bookkeeping. None of them
//     changes state or timers.
//   - Replay, ReplayBytes, Loaded, Commit, Seal, CommitSealed, Rollback,
//     NextDeadline and DeadlineBound load the log, end batches and
//     schedule the next Tick.

// ErrUnknownInput is returned by Step, Read and DecideOffsets for an input
// or request they do not take.
var ErrUnknownInput = errors.New("core: unknown input")

// Input is one thing Step applies. The set is closed: the structs of this
// file are all the inputs there are.
type Input interface{ input() }

// Request is a client's group request that changes state: JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup, StreamsGroupHeartbeat,
// ConsumerGroupHeartbeat, DeleteGroups or OffsetCommit. Body is the
// request itself (kmsg already is the sum type of request kinds); ID is
// echoed on its Response, and Client is what the host knows of its
// sender. OffsetCommit's verdict comes back in Output.Offsets (the data
// plane stores offsets, offsets.go), with no Response.
type Request struct {
	ID     RequestID
	Client ClientInfo
	Body   kmsg.Request
	// Prepared, for a StreamsGroupHeartbeat, is PrepareStreamsHeartbeat's
	// work on Body done ahead, off the partition's worker; nil: Step
	// prepares it itself. It must have been prepared from this Body.
	Prepared *PreparedStreamsHeartbeat
}

// Tick fires the timers due at now, earliest first (ties by key): every
// one of them, or with Limit > 0 at most Limit. A host that answers
// assignor runs at once can fire one timer at a time and answer runs
// between them, to sequence timers exactly as Kafka does (each of its
// timers is a separate write whose target assignment is computed inline).
//
// Scratch lends the Output's Records, Events and Timers from arrays the
// Coordinator keeps for the next Tick that asks for them: they are valid
// only until the Coordinator's next entry point, and the caller copies
// what it keeps. A host firing a mass expiry one timer a Tick then
// allocates no output arrays per fenced member.
type Tick struct {
	Limit   int
	Scratch bool
}

// AssignorResult hands back the result (or the failure) of an assignor
// run Output.AssignorRuns asked for.
type AssignorResult struct {
	Run    AssignorRun
	Result AssignResult
	Err    error
	// Prepared is PrepareAssignorResult's work on Run and Result done
	// ahead, off the partition's worker; nil: Step does it itself. It
	// must have been prepared from this Run and Result.
	Prepared *PreparedAssignorResult
}

// ProbeResult hands back the probing policy's answer to a check
// Output.ProbeChecks asked for.
type ProbeResult struct {
	Check    ProbeCheck
	Decision ProbeDecision
}

// Topics replaces the topic metadata image (a metadata refresh).
type Topics struct{ Topics []TopicMetadata }

// EndOffsets supplies the changelog end offsets the host fetched for a
// streams group's tasks (StreamsChangelogs says which).
type EndOffsets struct {
	Group string
	Ends  []TaskEndOffset
}

// StreamsGroupConfig replaces a streams group's overrides (validate them
// first with StreamsGroupOverrides.Validate).
type StreamsGroupConfig struct {
	Group     string
	Overrides StreamsGroupOverrides
}

// ClassicGroupConfig replaces a classic group's overrides.
type ClassicGroupConfig struct {
	Group     string
	Overrides ClassicGroupOverrides
}

// ConsumerGroupConfig replaces a consumer group's overrides.
type ConsumerGroupConfig struct {
	Group     string
	Overrides ConsumerGroupOverrides
}

// StreamsMigrationPolicy sets a group's streams.migration.policy
// override of Config.StreamsMigrationPolicy; a nil Policy clears it.
type StreamsMigrationPolicy struct {
	Group  string
	Policy *MigrationPolicy
}

// ConsumerMigrationPolicy sets a group's group.consumer.migration.policy
// override of Config.ConsumerMigrationPolicy; a nil Policy clears it.
type ConsumerMigrationPolicy struct {
	Group  string
	Policy *MigrationPolicy
}

func (Request) input()                 {}
func (Tick) input()                    {}
func (AssignorResult) input()          {}
func (ProbeResult) input()             {}
func (Topics) input()                  {}
func (EndOffsets) input()              {}
func (StreamsGroupConfig) input()      {}
func (ClassicGroupConfig) input()      {}
func (ConsumerGroupConfig) input()     {}
func (StreamsMigrationPolicy) input()  {}
func (ConsumerMigrationPolicy) input() {}

// Step applies in at time now (epoch milliseconds) and returns what it
// wants done. Group settings (the *Config and *MigrationPolicy inputs)
// write no records and return an empty Output; they apply from the
// group's next request. An input or request body Step does not take is
// ErrUnknownInput, with nothing changed.
func (c *Coordinator) Step(now int64, in Input) (Output, error) {
	switch in := in.(type) {
	case Request:
		return c.stepRequest(now, in)
	case Tick:
		return c.tickUpTo(now, in.Limit, in.Scratch), nil
	case AssignorResult:
		return c.assignorResultPrepared(now, in.Run, in.Result, in.Err, in.Prepared), nil
	case ProbeResult:
		return c.applyProbeResult(now, in.Check, in.Decision), nil
	case Topics:
		return c.updateTopics(now, in.Topics), nil
	case EndOffsets:
		return c.updateEndOffsets(now, in.Group, in.Ends), nil
	case StreamsGroupConfig:
		c.setStreamsGroupConfig(in.Group, in.Overrides)
	case ClassicGroupConfig:
		c.setClassicGroupConfig(in.Group, in.Overrides)
	case ConsumerGroupConfig:
		c.setConsumerGroupConfig(in.Group, in.Overrides)
	case StreamsMigrationPolicy:
		c.setStreamsMigrationPolicy(in.Group, in.Policy)
	case ConsumerMigrationPolicy:
		c.setConsumerMigrationPolicy(in.Group, in.Policy)
	default:
		return Output{}, fmt.Errorf("%w: %T", ErrUnknownInput, in)
	}
	return Output{}, nil
}

// stepRequest dispatches a Request by its body.
func (c *Coordinator) stepRequest(now int64, in Request) (Output, error) {
	switch b := in.Body.(type) {
	case *kmsg.JoinGroupRequest:
		return c.joinGroup(now, in.ID, in.Client, b), nil
	case *kmsg.SyncGroupRequest:
		return c.syncGroup(now, in.ID, b), nil
	case *kmsg.HeartbeatRequest:
		return c.heartbeat(now, in.ID, b), nil
	case *kmsg.LeaveGroupRequest:
		return c.leaveGroup(now, in.ID, b), nil
	case *kmsg.StreamsGroupHeartbeatRequest:
		p := in.Prepared
		if p == nil || p.req != b {
			p = PrepareStreamsHeartbeat(b)
		}
		return c.streamsGroupHeartbeatPrepared(now, in.ID, in.Client, p), nil
	case *kmsg.ConsumerGroupHeartbeatRequest:
		return c.consumerGroupHeartbeat(now, in.ID, in.Client, b), nil
	case *kmsg.DeleteGroupsRequest:
		return c.deleteGroups(now, in.ID, b), nil
	case *kmsg.OffsetCommitRequest:
		d, out := c.decideOffsetCommit(now, b)
		out.Offsets = []OffsetDecision{d}
		return out, nil
	}
	return Output{}, unknownRequest(in.Body)
}

// tickUpTo fires up to limit due timers (all of them for limit <= 0),
// with scratch (and limit > 0) each timer's output in the lent arrays
// (Tick.Scratch).
func (c *Coordinator) tickUpTo(now int64, limit int, scratch bool) Output {
	if limit <= 0 {
		return c.tick(now)
	}
	var all Output
	for i := range limit {
		out, fired := c.tickOne(now, scratch)
		if i == 0 && (!scratch || limit == 1) {
			all = out // one timer's output, not copied (a mass expiry fires one a step)
		} else {
			all.add(out)
		}
		if !fired {
			break
		}
	}
	return all
}

// Read answers a request that reads group state: DescribeGroups,
// ListGroups, StreamsGroupDescribe, ConsumerGroupDescribe and
// StreamsGroupTopologyDescriptionUpdate (which reads none). It changes
// nothing; call it between batches (right after Commit) to see committed
// state, as Kafka reads at the last committed offset.
func (c *Coordinator) Read(req kmsg.Request) (kmsg.Response, error) {
	switch b := req.(type) {
	case *kmsg.DescribeGroupsRequest:
		return c.describeGroups(b), nil
	case *kmsg.ListGroupsRequest:
		return c.listGroups(b), nil
	case *kmsg.StreamsGroupDescribeRequest:
		return c.streamsGroupDescribe(b), nil
	case *kmsg.ConsumerGroupDescribeRequest:
		return c.consumerGroupDescribe(b), nil
	case *kmsg.StreamsGroupTopologyDescriptionUpdateRequest:
		return StreamsGroupTopologyDescriptionUpdate(b), nil
	}
	return nil, unknownRequest(req)
}

// DecideOffsets decides an offsets request that changes nothing:
// TxnOffsetCommit, OffsetFetch (one decision per group it names, in
// request order) or OffsetDelete (its decision lists the subscribed
// topics). OffsetCommit is not one: a classic member's valid commit
// restarts its session timer, so it goes through Step. Like Read it
// changes nothing and sees committed state between batches.
func (c *Coordinator) DecideOffsets(req kmsg.Request) ([]OffsetDecision, error) {
	switch b := req.(type) {
	case *kmsg.TxnOffsetCommitRequest:
		return []OffsetDecision{c.decideTxnOffsetCommit(b)}, nil
	case *kmsg.OffsetFetchRequest:
		return c.decideOffsetFetch(b), nil
	case *kmsg.OffsetDeleteRequest:
		return []OffsetDecision{c.decideOffsetDelete(b)}, nil
	}
	return nil, unknownRequest(req)
}

// GroupIDs lists the ids of every group, sorted.
func (c *Coordinator) GroupIDs() []string { return c.groupIDs() }

func unknownRequest(req kmsg.Request) error {
	if req == nil {
		return fmt.Errorf("%w: no request", ErrUnknownInput)
	}
	return fmt.Errorf("%w: %s", ErrUnknownInput, kmsg.NameForKey(req.Key()))
}
