package loop

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/identity"
	"github.com/coordhost/coordhost/host/offsets"
	"github.com/coordhost/coordhost/host/wire"
)

// A group's offset requests are serialized per group by its offset gate
// (host/offsets): core's decision on a request and the request's forward
// to the data plane are one step of the group's queue. This file binds
// the gates to the loop: its data plane, its context and its log.

// offsetGates are the loop's per-group offset queues, and the offset
// plane (nil: the loop's data plane).
type offsetGates struct {
	offsets.Gates
	plane offsets.Plane
}

// offsetStore is the plane offsets are forwarded to (nil: none).
func (l *Loop) offsetStore() offsets.Plane {
	if l.offs.plane != nil {
		return l.offs.plane
	}
	if l.d.DataPlane != nil {
		return l.d.DataPlane
	}
	return nil
}

// gated runs step as one step of the offset queues of groups
// (offsets.Gates.Run).
func (l *Loop) gated(ctx context.Context, groups []string, step func() (kmsg.Response, error)) (kmsg.Response, error) {
	return l.offs.Run(ctx, groups, step)
}

// readBack reads req's offsets from the data plane until a read is
// answered, or the loop stops (nil): offsets.ReadBack.
func (l *Loop) readBack(req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	return offsets.ReadBack(l.ctx, l.offsetStore(), l.log, req)
}

// readBackGroup reads back all of group's offsets (readBack): it settles
// a forward of unknown outcome whose result is not read from the offsets.
func (l *Loop) readBackGroup(group string) {
	l.readBack(offsets.ReadBackRequest(group, false, nil))
}

// settleCommit answers an OffsetCommit whose forward has an unknown
// outcome: offsets.SettleCommit, until the loop stops.
func (l *Loop) settleCommit(req *kmsg.OffsetCommitRequest) kmsg.Response {
	return offsets.SettleCommit(l.ctx, l.offsetStore(), l.log, req)
}

// writeOffsets runs write with req's offset writer: identity.Write over
// Deps.OffsetsAs and the offset store.
func writeOffsets[R any](l *Loop, req *wire.Request, body kmsg.Request, group string, write func(offsets.Writer) (R, error)) (resp R, unsent kmsg.Response, err error) {
	return identity.Write(l.log, l.d.OffsetsAs, l.offsetStore(), req, body, group, write)
}
