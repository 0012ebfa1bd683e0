// Package userdata reads and writes what classic Kafka Streams members put in
// the consumer protocol: the ConsumerProtocol subscription and assignment
// framing of JoinGroup metadata and SyncGroup assignments, and inside them
// Kafka Streams' SubscriptionInfo (versions 1–11) and AssignmentInfo
// (versions 1–11).
//
// The formats follow Kafka Streams 4.4 (SubscriptionInfo, AssignmentInfo,
// ConsumerProtocolUtils, StreamsAssignmentProtocolVersions) and kafka-clients
// 4.4 (ConsumerProtocol), and are proven against bytes made by those Java
// classes (testdata/userdata). Decoders accept exactly what the Java decoders
// accept, except where docs/USERDATA.md records a deliberate difference, and
// return an error wrapping ErrMalformed for anything else; they never panic.
//
// A coordinator serving classic Streams members uses DecodeSubscription and
// DecodeSubscriptionInfo on JoinGroup metadata, Negotiate to pick the
// assignment versions for the group, ActiveTaskList to line tasks up with
// partitions, and (*AssignmentInfo).Encode with EncodeAssignment for each
// SyncGroup response.
package userdata
