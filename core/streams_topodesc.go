package core

import (
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// noDescriptionStore is Kafka 4.4's answer to a topology-description push
// when the broker has no description plugin configured.
const noDescriptionStore = "The broker has no streams group topology description plugin configured."

// StreamsGroupTopologyDescriptionUpdate answers a
// StreamsGroupTopologyDescriptionUpdate request (v0; KIP-1331's push of a
// Kafka Streams topology description).
//
// Kafka 4.4 keeps the descriptions in a broker plugin
// (group.streams.topology.description.plugin.class, unset by default), not
// in the group's records: the records hold only the stored and failed
// description epochs of StreamsGroupMetadata, which coordhost keeps and
// replays. Without a plugin, Kafka's coordinator refuses every push with
// UNSUPPORTED_VERSION before it validates the request or looks up the
// group, never asks a member for a push (TopologyDescriptionRequired stays
// false) and describes every group's description as NOT_STORED.
// coordhost has no description store, so it answers as that broker does.
// The answer reads no group state; authorization (READ on the group) is
// the host's, checked first as Kafka's KafkaApis does.
func StreamsGroupTopologyDescriptionUpdate(req *kmsg.StreamsGroupTopologyDescriptionUpdateRequest) *kmsg.StreamsGroupTopologyDescriptionUpdateResponse {
	resp := kmsg.NewPtrStreamsGroupTopologyDescriptionUpdateResponse()
	resp.Version = req.Version
	resp.ErrorCode = kerr.UnsupportedVersion.Code
	msg := noDescriptionStore
	resp.ErrorMessage = &msg
	return resp
}
