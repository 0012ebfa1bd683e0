package loop

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/identity"
	"github.com/coordhost/coordhost/host/wire"
)

// groupOffsetsDeleter is what deletes the offsets of the groups of a
// DeleteGroups in the data plane (nil: no data plane), the request left
// for core, and the answers of groups refused already: the data plane,
// or with offsets written as the client (Deps.OffsetsAs) the
// principal's writer (identity.DeleteAs).
func (l *Loop) groupOffsetsDeleter(ctx context.Context, req *wire.Request, body *kmsg.DeleteGroupsRequest) (identity.GroupDeleter, *kmsg.DeleteGroupsRequest, []kmsg.DeleteGroupsResponseGroup) {
	switch {
	case l.d.OffsetsAs != nil:
		return identity.DeleteAs(ctx, l.log, l.d.OffsetsAs, identity.Principal(req), body)
	case l.d.DataPlane == nil:
		return nil, body, nil
	}
	return l.d.DataPlane, body, nil
}

// deleteErrorCode is the answer to a group whose deletion in the data
// plane failed with err (identity.DeleteErrorCode).
func deleteErrorCode(err error) int16 { return identity.DeleteErrorCode(err) }
