package host

import (
	"context"
	"log/slog"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/wire"
)

// GroupCoordinator answers every group-coordination request coordhost
// receives: FindCoordinator for groups, JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup, DescribeGroups, ListGroups, DeleteGroups, StreamsGroupHeartbeat,
// StreamsGroupDescribe, OffsetCommit, TxnOffsetCommit, OffsetFetch,
// OffsetDelete, and the GROUP-resource part of DescribeConfigs, AlterConfigs
// and IncrementalAlterConfigs (the listener splits those and hands over only
// the GROUP resources). It is the one seam between the Kafka listener and
// the core-backed event loop; none of these requests is ever forwarded to
// the data plane. req.Body has its version set; the response must be of
// the same key and version. An error closes the client's connection.
//
// The data-plane helpers an implementation needs are on
// gateway.DataPlane (Server.DataPlane()): CommitOffsets, TxnCommitOffsets,
// FetchOffsets and DeleteOffsets store allowed offset requests in the
// cluster's own offsets log (translating topic ids for OffsetCommit/
// OffsetFetch v10 and TxnOffsetCommit v6); OffsetsOnlyGroups and
// DeleteGroupOffsets give ListGroups/DescribeGroups/DeleteGroups the data
// plane's offsets-only groups; Topics, CreateTopics and EndOffsets serve
// topic metadata, internal topics and lags. FindCoordinator for groups
// answers req.Listener; req.Authenticated tells whether the connection's
// pass-through SASL succeeded.
type GroupCoordinator interface {
	Handle(ctx context.Context, req *wire.Request) (kmsg.Response, error)
}

// Unwired is the GroupCoordinator of a build whose event loop is not wired
// yet: it answers every group request with COORDINATOR_NOT_AVAILABLE (a
// retriable Kafka error), so clients back off instead of failing hard, and
// logs once that group coordination is not available.
type Unwired struct {
	Log  *slog.Logger
	once sync.Once
}

// Handle answers req with COORDINATOR_NOT_AVAILABLE.
func (u *Unwired) Handle(_ context.Context, req *wire.Request) (kmsg.Response, error) {
	u.once.Do(func() {
		if u.Log != nil {
			u.Log.Warn("group coordination is not wired into this build yet: group requests get COORDINATOR_NOT_AVAILABLE",
				"api", kmsg.NameForKey(req.Key), "client_id", req.ClientIDString())
		}
	})
	return wire.ErrorResponse(req.Body, kerr.CoordinatorNotAvailable.Code), nil
}
