package core

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/core/records"
)

// RequestID is the host's token for one request; core echoes it on the
// response so the host can route it back to its connection.
type RequestID uint64

// ClientInfo is what the host knows about a request's client beyond the
// request body (Kafka takes these from the request context).
type ClientInfo struct {
	ClientID   string
	ClientHost string
	// DescribableTopic, when set, says whether the client's principal may
	// DESCRIBE a topic: the regular expressions a consumer heartbeat
	// resolves keep only those topics, as Kafka filters them with the
	// heartbeat's authorization context. nil: no authorizer, every topic.
	DescribableTopic func(topic string) bool
}

// Output is everything an entry point wants done, as data. The host appends
// Records to the log (in order, as one batch with everything else returned
// since the last Commit), then calls Commit and releases Responses; if the
// append fails it calls Rollback and fails those responses instead. Events
// are the batch's account of its changes: the host reports them after
// Commit and drops them with the records on Rollback.
type Output struct {
	// Records to persist, in Kafka's write order. They are already applied
	// to the Coordinator's (speculative) state.
	Records []records.Record
	// Events say why the state changed: an Output with Records carries at
	// least one Event for every group its records touch (events.go).
	Events []Event
	// Responses to release once Records are durable.
	Responses []Response
	// Timers lists timer changes, for hosts that mirror timers; a host may
	// instead call Tick at NextDeadline.
	Timers []TimerChange
	// AssignorRuns are target-assignment computations to perform; each
	// result comes back through AssignorResult.
	AssignorRuns []AssignorRun
	// ProbeChecks ask the host to run a group's probing-policy plugin;
	// each answer comes back through ProbeResult.
	ProbeChecks []ProbeCheck
	// TopicsToCreate are internal topics a streams group needs.
	TopicsToCreate []TopicToCreate
	// Failed lists requests whose responses were withheld (parked) and that a
	// Rollback dropped: the host answers them with NOT_COORDINATOR.
	Failed []RequestID
	// Offsets is the verdict on a stepped OffsetCommit (one decision):
	// the host forwards the commit to the data plane only if it allows it.
	Offsets []OffsetDecision
}

// add appends o's effects to out's.
func (out *Output) add(o Output) {
	out.Records = append(out.Records, o.Records...)
	out.Events = append(out.Events, o.Events...)
	out.Responses = append(out.Responses, o.Responses...)
	out.Timers = append(out.Timers, o.Timers...)
	out.AssignorRuns = append(out.AssignorRuns, o.AssignorRuns...)
	out.ProbeChecks = append(out.ProbeChecks, o.ProbeChecks...)
	out.TopicsToCreate = append(out.TopicsToCreate, o.TopicsToCreate...)
	out.Failed = append(out.Failed, o.Failed...)
	out.Offsets = append(out.Offsets, o.Offsets...)
}

// Response is one response to release after the batch is durable.
type Response struct {
	Request RequestID
	Msg     kmsg.Response
}

// TimerChange reports that a timer was set (Deadline in epoch ms) or
// cancelled.
type TimerChange struct {
	Key      TimerKey
	Deadline int64
	Cancel   bool
}

// TopicToCreate is an internal topic (repartition or changelog) a streams
// group needs before it can be assigned.
type TopicToCreate struct {
	Group             string
	Name              string
	Partitions        int32
	ReplicationFactor int16 // -1: broker default
	Configs           []records.KeyValue
}
