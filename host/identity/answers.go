package identity

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/gateway"
	"github.com/coordhost/coordhost/host/offsets"
	"github.com/coordhost/coordhost/host/wire"
)

// Write runs write with the writer of req's offsets: with as (offsets
// written as the client), a connection logged in as the client's
// principal, never coordhost's identity; otherwise store. Reads
// (OffsetFetch, and the read-back that settles an unknown outcome) stay
// on the store: they write nothing, and a read-back the principal could
// no longer make would hold the group's offset queue. When the write was
// not sent as the client's principal, unsent is the answer to body
// (Unsent); otherwise resp and err are write's.
func Write[R any](log *slog.Logger, as func(principal string) (offsets.Writer, error), store offsets.Writer, req *wire.Request, body kmsg.Request, group string, write func(offsets.Writer) (R, error)) (resp R, unsent kmsg.Response, err error) {
	w := store
	if as != nil {
		if w, err = as(Principal(req)); err != nil {
			return resp, Unsent(log, body, group, err), nil
		}
	}
	resp, err = write(w)
	if errors.Is(err, gateway.ErrNotSent) {
		return resp, Unsent(log, body, group, err), nil
	}
	return resp, nil, err
}

// Unsent answers body when its offsets were not sent as the client's
// principal (err says why), so nothing was written: no writer for it, or
// the cluster refused the principal's login (COORDINATOR_NOT_AVAILABLE,
// which clients retry as they do when a coordinator cannot write), or
// refused to find the group's coordinator for it (its own authorization
// error, the one the client gets from the cluster). It logs the refusal.
func Unsent(log *slog.Logger, body kmsg.Request, group string, err error) kmsg.Response {
	code := kerr.CoordinatorNotAvailable.Code
	for _, ke := range []*kerr.Error{kerr.GroupAuthorizationFailed, kerr.TransactionalIDAuthorizationFailed} {
		if errors.Is(err, ke) && !errors.Is(err, gateway.ErrLoginRefused) {
			code = ke.Code
		}
	}
	log.Warn("offsets not written: not sent as the client's principal", "group", group, "api", kmsg.NameForKey(body.Key()), "err", err)
	return wire.ErrorResponse(body, code)
}

// GroupDeleter deletes groups' offsets in the data plane
// (gateway.DataPlane, as coordhost; gateway.PrincipalOffsets, as a
// principal).
type GroupDeleter interface {
	DeleteGroupOffsets(ctx context.Context, groups []string) (map[string]error, error)
}

// principalGroupDeleter deletes groups' offsets as a principal, after
// asking the cluster whether it may (gateway.PrincipalOffsets).
type principalGroupDeleter interface {
	GroupDeleter
	MayDeleteGroups(ctx context.Context, groups []string) map[string]error
}

// DeleteAs is what deletes the offsets of the groups of body, a
// DeleteGroups of principal, in the data plane when offsets are written
// as the client (as, the writer of each principal): the principal's
// writer, after the cluster was asked, as the principal, whether it may
// delete each group. It returns the deleter, the request left for core,
// and the answers of the groups refused: a group the cluster refuses (an
// ACL revoked within the decision cache's TTL), or whose question cannot
// be sent, is answered with the cluster's error, or
// COORDINATOR_NOT_AVAILABLE, and deleted neither in core nor in the data
// plane. Nothing is ever deleted under coordhost's identity then.
func DeleteAs(ctx context.Context, log *slog.Logger, as func(principal string) (offsets.Writer, error), principal string, body *kmsg.DeleteGroupsRequest) (GroupDeleter, *kmsg.DeleteGroupsRequest, []kmsg.DeleteGroupsResponseGroup) {
	w, err := as(principal)
	pd, ok := w.(principalGroupDeleter)
	if err == nil && !ok {
		err = fmt.Errorf("the offset writer of %q cannot delete groups", principal)
	}
	may := map[string]error{}
	if err == nil {
		may = pd.MayDeleteGroups(ctx, body.Groups)
	}
	kept := *body
	kept.Groups = nil
	var refused []kmsg.DeleteGroupsResponseGroup
	for _, g := range body.Groups {
		e := may[g]
		if err != nil {
			e = err
		}
		if e == nil {
			kept.Groups = append(kept.Groups, g)
			continue
		}
		log.Warn("group not deleted: the cluster did not let the client's principal delete it", "group", g, "principal", principal, "err", e)
		r := kmsg.NewDeleteGroupsResponseGroup()
		r.Group, r.ErrorCode = g, DeleteErrorCode(e)
		refused = append(refused, r)
	}
	return pd, &kept, refused
}

// DeleteErrorCode is the answer to a group whose deletion in the data
// plane failed with err: the cluster's error (an authorization error
// even when it refused the coordinator lookup), else
// COORDINATOR_NOT_AVAILABLE (not sent: a refused login, a lost
// connection), which clients retry.
func DeleteErrorCode(err error) int16 {
	if errors.Is(err, gateway.ErrLoginRefused) {
		return kerr.CoordinatorNotAvailable.Code
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}
