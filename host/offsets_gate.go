package host

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/gateway"
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

// writeOffsets runs write with req's offset writer (offsetWriter). When
// the write was not sent as the client's principal, unsent is the answer
// to body (l.unsent); otherwise resp and err are write's.
func writeOffsets[R any](l *Loop, req *wire.Request, body kmsg.Request, group string, write func(offsets.Writer) (R, error)) (resp R, unsent kmsg.Response, err error) {
	w, err := l.offsetWriter(req)
	if err != nil {
		return resp, l.unsent(body, group, err), nil
	}
	resp, err = write(w)
	if errors.Is(err, gateway.ErrNotSent) {
		return resp, l.unsent(body, group, err), nil
	}
	return resp, nil, err
}

// offsetWriter is the writer of req's offsets: with LoopDeps.OffsetsAs, a
// connection logged in as the client's principal (never coordhost's
// identity); otherwise the offset store. Reads (OffsetFetch, and the
// read-back that settles an unknown outcome) stay on the offset store:
// they write nothing, and a read-back the principal could no longer make
// would hold the group's offset queue.
func (l *Loop) offsetWriter(req *wire.Request) (offsets.Writer, error) {
	if l.d.OffsetsAs == nil {
		return l.offsetStore(), nil
	}
	return l.d.OffsetsAs(requestPrincipal(req))
}

// requestPrincipal is the principal the cluster authenticated req's
// connection as: a certificate's with delegation tokens, else User: and
// the SASL user ("" when there is none).
func requestPrincipal(req *wire.Request) string {
	switch {
	case req.CertAuthenticated:
		return req.CertPrincipal
	case req.Authenticated && req.SASLUser != "":
		return "User:" + req.SASLUser
	}
	return ""
}

// unsent answers body when its offsets were not sent as the client's
// principal, so nothing was written: no writer for it, or the cluster
// refused the principal's login (COORDINATOR_NOT_AVAILABLE, which clients
// retry as they do when a coordinator cannot write), or refused to find
// the group's coordinator for it (its own authorization error, the one
// the client gets from the cluster).
func (l *Loop) unsent(body kmsg.Request, group string, err error) kmsg.Response {
	code := kerr.CoordinatorNotAvailable.Code
	for _, ke := range []*kerr.Error{kerr.GroupAuthorizationFailed, kerr.TransactionalIDAuthorizationFailed} {
		if errors.Is(err, ke) && !errors.Is(err, gateway.ErrLoginRefused) {
			code = ke.Code
		}
	}
	l.log.Warn("offsets not written: not sent as the client's principal", "group", group, "api", kmsg.NameForKey(body.Key()), "err", err)
	return wire.ErrorResponse(body, code)
}
