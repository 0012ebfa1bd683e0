package wire

import (
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Route says who answers an API key.
type Route uint8

const (
	// RouteLocal keys are answered by the listener itself (ApiVersions).
	RouteLocal Route = iota
	// RouteForward keys go to this connection's data-plane link unchanged
	// (responses get their broker addresses rewritten by the gateway).
	RouteForward
	// RouteGroup keys are group coordination: they go to the group
	// coordinator and are never forwarded.
	RouteGroup
	// RouteSplit keys carry both group and data-plane parts; the key's own
	// file (e.g. 10_find_coordinator.go) splits and merges them.
	RouteSplit
)

// spec is one row of the version table: the versions coordhost itself can
// serve for a key. For keys that reach the data plane the served range is
// further clamped to what the data plane advertises.
type spec struct {
	key      kmsg.Key
	min, max int16
	route    Route
}

// specs is THE version table. Group-coordination rows carry Kafka 4.4's
// ranges (from the 4.4.0 kafka-clients *RequestData LOWEST/HIGHEST
// constants); forwarded rows take the data plane's range. Keys missing here
// are not served: never advertised, answered with UNSUPPORTED_VERSION. That
// includes every share-group key: forwarding them would create a second
// coordinator for the same group id.
var specs = []spec{
	{kmsg.ApiVersions, 0, 5, RouteLocal},

	{kmsg.OffsetCommit, 2, 10, RouteGroup},
	{kmsg.OffsetFetch, 1, 10, RouteGroup},
	{kmsg.JoinGroup, 0, 9, RouteGroup},
	{kmsg.Heartbeat, 0, 4, RouteGroup},
	{kmsg.LeaveGroup, 0, 5, RouteGroup},
	{kmsg.SyncGroup, 0, 5, RouteGroup},
	{kmsg.DescribeGroups, 0, 6, RouteGroup},
	{kmsg.ListGroups, 0, 5, RouteGroup},
	{kmsg.TxnOffsetCommit, 0, 6, RouteGroup},
	{kmsg.DeleteGroups, 0, 3, RouteGroup},
	{kmsg.OffsetDelete, 0, 0, RouteGroup},
	{kmsg.StreamsGroupHeartbeat, 0, 1, RouteGroup},
	{kmsg.StreamsGroupDescribe, 0, 1, RouteGroup},
	{kmsg.StreamsGroupTopologyDescriptionUpdate, 0, 0, RouteGroup},
	{kmsg.ConsumerGroupHeartbeat, 0, 1, RouteGroup},
	{kmsg.ConsumerGroupDescribe, 0, 1, RouteGroup},

	{kmsg.FindCoordinator, 0, 6, RouteSplit},
	{kmsg.DescribeConfigs, 1, 4, RouteSplit},
	{kmsg.AlterConfigs, 0, 2, RouteSplit},
	{kmsg.IncrementalAlterConfigs, 0, 1, RouteSplit},
	{kmsg.ListConfigResources, 0, maxV, RouteSplit},

	// Client-facing data-plane keys. Inter-broker and controller keys
	// (LeaderAndISR, Vote, BrokerRegistration, WriteTxnMarkers, share-state
	// keys, ...) are deliberately absent.
	{kmsg.Produce, 0, maxV, RouteForward},
	{kmsg.Fetch, 0, maxV, RouteForward},
	{kmsg.ListOffsets, 0, maxV, RouteForward},
	{kmsg.Metadata, 0, maxV, RouteForward},
	{kmsg.SASLHandshake, 0, maxV, RouteForward},
	{kmsg.CreateTopics, 0, maxV, RouteForward},
	{kmsg.DeleteTopics, 0, maxV, RouteForward},
	{kmsg.DeleteRecords, 0, maxV, RouteForward},
	{kmsg.InitProducerID, 0, maxV, RouteForward},
	{kmsg.OffsetForLeaderEpoch, 0, maxV, RouteForward},
	{kmsg.AddPartitionsToTxn, 0, maxV, RouteForward},
	{kmsg.AddOffsetsToTxn, 0, maxV, RouteForward},
	{kmsg.EndTxn, 0, maxV, RouteForward},
	{kmsg.DescribeACLs, 0, maxV, RouteForward},
	{kmsg.CreateACLs, 0, maxV, RouteForward},
	{kmsg.DeleteACLs, 0, maxV, RouteForward},
	{kmsg.AlterReplicaLogDirs, 0, maxV, RouteForward},
	{kmsg.DescribeLogDirs, 0, maxV, RouteForward},
	{kmsg.SASLAuthenticate, 0, maxV, RouteForward},
	{kmsg.CreatePartitions, 0, maxV, RouteForward},
	{kmsg.CreateDelegationToken, 0, maxV, RouteForward},
	{kmsg.RenewDelegationToken, 0, maxV, RouteForward},
	{kmsg.ExpireDelegationToken, 0, maxV, RouteForward},
	{kmsg.DescribeDelegationToken, 0, maxV, RouteForward},
	{kmsg.ElectLeaders, 0, maxV, RouteForward},
	{kmsg.AlterPartitionAssignments, 0, maxV, RouteForward},
	{kmsg.ListPartitionReassignments, 0, maxV, RouteForward},
	{kmsg.DescribeClientQuotas, 0, maxV, RouteForward},
	{kmsg.AlterClientQuotas, 0, maxV, RouteForward},
	{kmsg.DescribeUserSCRAMCredentials, 0, maxV, RouteForward},
	{kmsg.AlterUserSCRAMCredentials, 0, maxV, RouteForward},
	{kmsg.UpdateFeatures, 0, maxV, RouteForward},
	{kmsg.DescribeCluster, 0, maxV, RouteForward},
	{kmsg.DescribeProducers, 0, maxV, RouteForward},
	{kmsg.DescribeTransactions, 0, maxV, RouteForward},
	{kmsg.ListTransactions, 0, maxV, RouteForward},
	{kmsg.GetTelemetrySubscriptions, 0, maxV, RouteForward},
	{kmsg.PushTelemetry, 0, maxV, RouteForward},
	{kmsg.DescribeTopicPartitions, 0, maxV, RouteForward},
}

// maxV in a spec row means "as far as kmsg can decode".
const maxV = int16(0x7fff)

// NotServed lists the known keys coordhost refuses on purpose (share-group
// APIs): never advertised, never forwarded.
var NotServed = []kmsg.Key{
	kmsg.ShareGroupHeartbeat, kmsg.ShareGroupDescribe, kmsg.ShareFetch, kmsg.ShareAcknowledge,
	kmsg.DescribeShareGroupOffsets, kmsg.AlterShareGroupOffsets, kmsg.DeleteShareGroupOffsets,
	kmsg.InitializeShareGroupState, kmsg.ReadShareGroupState, kmsg.WriteShareGroupState,
	kmsg.DeleteShareGroupState, kmsg.ReadShareGroupStateSummary,
}

// VersionRange is a served [Min, Max] version range of one key.
type VersionRange struct{ Min, Max int16 }

// Entry is one served key in a Table.
type Entry struct {
	Key      int16
	Min, Max int16
	Route    Route
}

// Table is the effective version table: what coordhost serves, and so
// exactly what ApiVersions advertises. It is immutable once built.
type Table struct {
	// entries holds each served key's entry at its index (served[key]
	// true): a lookup on every request is an index, not a map's hash.
	entries [kmsg.MaxKey + 1]Entry
	served  [kmsg.MaxKey + 1]bool
}

// set serves e.
func (t *Table) set(e Entry) {
	t.entries[e.Key], t.served[e.Key] = e, true
}

// NewTable builds the table from the static specs, clamping every key that
// reaches the data plane (forwarded or split) to dataPlane's advertised
// range and to what kmsg can decode; a key the data plane does not
// advertise is not served, so nothing is ever forwarded to a data plane that
// does not register it.
func NewTable(dataPlane map[int16]VersionRange) *Table {
	t := &Table{}
	for _, s := range specs {
		lo, hi := s.min, s.max
		if km := kmsg.RequestForKey(int16(s.key)).MaxVersion(); hi > km {
			hi = km
		}
		if s.route == RouteForward || s.route == RouteSplit {
			dp, ok := dataPlane[int16(s.key)]
			if !ok {
				continue
			}
			lo, hi = max(lo, dp.Min), min(hi, dp.Max)
		}
		if lo > hi {
			continue
		}
		t.set(Entry{Key: int16(s.key), Min: lo, Max: hi, Route: s.route})
	}
	return t
}

// ConsumerGroupKeys are the KIP-848 consumer-group APIs.
var ConsumerGroupKeys = []kmsg.Key{kmsg.ConsumerGroupHeartbeat, kmsg.ConsumerGroupDescribe}

// Without returns a copy of t that does not serve keys.
func (t *Table) Without(keys ...kmsg.Key) *Table {
	out := *t
	for _, k := range keys {
		if int(k) < len(out.served) {
			out.entries[k], out.served[k] = Entry{}, false
		}
	}
	return &out
}

// Lookup returns the entry of a served key.
func (t *Table) Lookup(key int16) (Entry, bool) {
	if key < 0 || int(key) >= len(t.served) || !t.served[key] {
		return Entry{}, false
	}
	return t.entries[key], true
}

// Serves reports whether key at version is served.
func (t *Table) Serves(key, version int16) bool {
	e, ok := t.Lookup(key)
	return ok && version >= e.Min && version <= e.Max
}

// Routes reports whether key at version is served and goes route's way.
func (t *Table) Routes(key, version int16, route Route) bool {
	e, ok := t.Lookup(key)
	return ok && e.Route == route && version >= e.Min && version <= e.Max
}

// Entries returns the served keys in key order.
func (t *Table) Entries() []Entry {
	n := 0
	for _, ok := range t.served {
		if ok {
			n++
		}
	}
	out := make([]Entry, 0, n)
	for k, e := range t.entries {
		if t.served[k] {
			out = append(out, e)
		}
	}
	return out // in key order: the index is the key
}
