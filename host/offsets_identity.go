package host

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/coordhost/coordhost/host/authz"
	"github.com/coordhost/coordhost/host/gateway"
	"github.com/coordhost/coordhost/host/offsets"
	"github.com/coordhost/coordhost/host/wire"
)

// offsetsIdentity sets up whose identity writes offsets to an external
// data plane (dataplane.offsets.identity) and logs it at start.
func (s *Server) offsetsIdentity(ctx context.Context, tokens *authz.Tokens) error {
	dp := s.cfg.DataPlane
	switch {
	case dp.Embedded:
		return nil
	case dp.OffsetsAsClient():
		if err := s.offsetsAsClient(ctx, tokens); err != nil {
			return err
		}
		s.log.Info("offsets are written to the cluster as each client's principal, with a delegation token it owns", "dataplane.offsets.identity", "client")
	case dp.SASLMechanism == "":
		s.log.Info("offsets are written to the cluster by coordhost's own connection: without dataplane.sasl.mechanism the cluster authenticates no one, "+
			"so every upstream session has the same principal", "dataplane.offsets.identity", dp.OffsetsIdentity)
	default:
		s.log.Warn("offsets are written to the cluster under coordhost's own identity, after the cluster allowed each request for the client's principal", "dataplane.offsets.identity", "coordhost")
	}
	return nil
}

// offsetsAsClient prepares dataplane.offsets.identity=client: offsets are
// written by connections logged in as the client's principal with a
// delegation token it owns (gateway.PrincipalClients). It creates one
// token for coordhost's own user first, so a cluster without delegation
// tokens, or a user without CREATE_TOKENS, stops the start with an error
// naming the setting rather than failing every commit later.
func (s *Server) offsetsAsClient(ctx context.Context, tokens *authz.Tokens) error {
	self := "User:" + s.cfg.DataPlane.SASLUser
	if _, _, err := tokens.For(ctx, self); err != nil {
		return fmt.Errorf("dataplane.offsets.identity = \"client\" (the default in front of a cluster with SASL) needs delegation tokens: creating one for %s failed (enable delegation tokens on the cluster with delegation.token.secret.key, "+
			"give dataplane.sasl.username CREATE_TOKENS on the clients' USER resources, or set dataplane.offsets.identity = \"coordhost\"): %w", self, err)
	}
	mech := s.cfg.DataPlane.SASLMechanism
	s.offsetClients = s.dp.PrincipalClients(gateway.PrincipalOpts{
		Login: func(principal string) sasl.Mechanism {
			auth := func(ctx context.Context) (scram.Auth, error) {
				user, pass, err := tokens.For(ctx, principal)
				return scram.Auth{User: user, Pass: pass, IsToken: true}, err
			}
			if mech == "SCRAM-SHA-512" {
				return scram.Sha512(auth)
			}
			return scram.Sha256(auth)
		},
		LoginRefused: tokens.Forget,
	})
	return nil
}

// offsetsAs is LoopDeps.OffsetsAs with dataplane.offsets.identity=client
// (nil otherwise).
func (s *Server) offsetsAs() func(principal string) (offsets.Writer, error) {
	if s.offsetClients == nil {
		return nil
	}
	return func(principal string) (offsets.Writer, error) {
		w, err := s.offsetClients.For(principal)
		if err != nil {
			return nil, err
		}
		return w, nil
	}
}

// groupDeleter deletes groups' offsets in the data plane
// (gateway.DataPlane, as coordhost; gateway.PrincipalOffsets, as a
// principal).
type groupDeleter interface {
	DeleteGroupOffsets(ctx context.Context, groups []string) (map[string]error, error)
}

// principalGroupDeleter deletes groups' offsets as a principal, after
// asking the cluster whether it may (gateway.PrincipalOffsets).
type principalGroupDeleter interface {
	groupDeleter
	MayDeleteGroups(ctx context.Context, groups []string) map[string]error
}

// groupOffsetsDeleter is what deletes the offsets of the groups of a
// DeleteGroups in the data plane (nil: no data plane), the request left
// for core, and the answers of groups refused already. With offsets
// written as the client (LoopDeps.OffsetsAs) it is the principal's
// writer, and the cluster is first asked, as the principal, whether it
// may delete each group: a group it refuses (an ACL revoked within the
// decision cache's TTL), or whose question cannot be sent, is answered
// with the cluster's error, or COORDINATOR_NOT_AVAILABLE, and deleted
// neither in core nor in the data plane. Nothing is ever deleted under
// coordhost's identity then.
func (l *Loop) groupOffsetsDeleter(ctx context.Context, req *wire.Request, body *kmsg.DeleteGroupsRequest) (groupDeleter, *kmsg.DeleteGroupsRequest, []kmsg.DeleteGroupsResponseGroup) {
	switch {
	case l.d.OffsetsAs != nil:
	case l.d.DataPlane == nil:
		return nil, body, nil
	default:
		return l.d.DataPlane, body, nil
	}
	principal := requestPrincipal(req)
	w, err := l.d.OffsetsAs(principal)
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
		l.log.Warn("group not deleted: the cluster did not let the client's principal delete it", "group", g, "principal", principal, "err", e)
		r := kmsg.NewDeleteGroupsResponseGroup()
		r.Group, r.ErrorCode = g, deleteErrorCode(e)
		refused = append(refused, r)
	}
	return pd, &kept, refused
}

// deleteErrorCode is the answer to a group whose deletion in the data
// plane failed with err: the cluster's error (an authorization error
// even when it refused the coordinator lookup), else
// COORDINATOR_NOT_AVAILABLE (not sent: a refused login, a lost
// connection), which clients retry.
func deleteErrorCode(err error) int16 {
	if errors.Is(err, gateway.ErrLoginRefused) {
		return kerr.CoordinatorNotAvailable.Code
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}
