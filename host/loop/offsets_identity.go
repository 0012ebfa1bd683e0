package host

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/authz"
	"github.com/coordhost/coordhost/host/identity"
	"github.com/coordhost/coordhost/host/offsets"
	"github.com/coordhost/coordhost/host/wire"
)

// offsetsIdentity sets up whose identity writes offsets to an external
// data plane (identity.Setup).
func (s *Server) offsetsIdentity(ctx context.Context, tokens *authz.Tokens) (err error) {
	s.offsetClients, err = identity.Setup(ctx, s.cfg.DataPlane, s.dp, tokens, s.log)
	return err
}

// offsetsAs is LoopDeps.OffsetsAs with dataplane.offsets.identity=client
// (nil otherwise).
func (s *Server) offsetsAs() func(principal string) (offsets.Writer, error) {
	return identity.WriterOf(s.offsetClients)
}

// groupOffsetsDeleter is what deletes the offsets of the groups of a
// DeleteGroups in the data plane (nil: no data plane), the request left
// for core, and the answers of groups refused already: the data plane,
// or with offsets written as the client (LoopDeps.OffsetsAs) the
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
