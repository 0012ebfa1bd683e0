// Package identity decides whose identity writes a client's offsets to an
// external data plane (dataplane.offsets.identity): coordhost's own
// connection, or connections logged in as each client's principal with a
// delegation token it owns. It sets the principals' connections up at
// start, names a request's principal, answers a write that was not sent
// as that principal, and deletes groups' offsets as the principal after
// asking the cluster whether it may. The event loop's requests call it;
// it knows nothing of the loop.
package identity

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/coordhost/coordhost/host/authz"
	"github.com/coordhost/coordhost/host/config"
	"github.com/coordhost/coordhost/host/gateway"
	"github.com/coordhost/coordhost/host/offsets"
	"github.com/coordhost/coordhost/host/wire"
)

// Setup sets up whose identity writes offsets to the external data plane
// dp (configured as cfg) and logs it. With dataplane.offsets.identity =
// client it returns the connections that write as each client's
// principal; nil otherwise (coordhost's own connection writes).
func Setup(ctx context.Context, cfg config.DataPlane, dp *gateway.DataPlane, tokens *authz.Tokens, log *slog.Logger) (*gateway.PrincipalClients, error) {
	switch {
	case cfg.Embedded:
		return nil, nil
	case cfg.OffsetsAsClient():
		clients, err := asClient(ctx, cfg, dp, tokens)
		if err != nil {
			return nil, err
		}
		log.Info("offsets are written to the cluster as each client's principal, with a delegation token it owns", "dataplane.offsets.identity", "client")
		return clients, nil
	case cfg.SASLMechanism == "":
		log.Info("offsets are written to the cluster by coordhost's own connection: without dataplane.sasl.mechanism the cluster authenticates no one, "+
			"so every upstream session has the same principal", "dataplane.offsets.identity", cfg.OffsetsIdentity)
	default:
		log.Warn("offsets are written to the cluster under coordhost's own identity, after the cluster allowed each request for the client's principal", "dataplane.offsets.identity", "coordhost")
	}
	return nil, nil
}

// asClient prepares dataplane.offsets.identity=client: offsets are
// written by connections logged in as the client's principal with a
// delegation token it owns (gateway.PrincipalClients). It creates one
// token for coordhost's own user first, so a cluster without delegation
// tokens, or a user without CREATE_TOKENS, stops the start with an error
// naming the setting rather than failing every commit later.
func asClient(ctx context.Context, cfg config.DataPlane, dp *gateway.DataPlane, tokens *authz.Tokens) (*gateway.PrincipalClients, error) {
	self := "User:" + cfg.SASLUser
	if _, _, err := tokens.For(ctx, self); err != nil {
		return nil, fmt.Errorf("dataplane.offsets.identity = \"client\" (the default in front of a cluster with SASL) needs delegation tokens: creating one for %s failed (enable delegation tokens on the cluster with delegation.token.secret.key, "+
			"give dataplane.sasl.username CREATE_TOKENS on the clients' USER resources, or set dataplane.offsets.identity = \"coordhost\"): %w", self, err)
	}
	mech := cfg.SASLMechanism
	return dp.PrincipalClients(gateway.PrincipalOpts{
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
	}), nil
}

// WriterOf is the offset writer of each principal over clients (what
// Setup returned), or nil when clients is nil.
func WriterOf(clients *gateway.PrincipalClients) func(principal string) (offsets.Writer, error) {
	if clients == nil {
		return nil
	}
	return func(principal string) (offsets.Writer, error) {
		w, err := clients.For(principal)
		if err != nil {
			return nil, err
		}
		return w, nil
	}
}

// Principal is the principal the cluster authenticated req's connection
// as: a certificate's with delegation tokens, else User: and the SASL
// user ("" when there is none).
func Principal(req *wire.Request) string {
	switch {
	case req.CertAuthenticated:
		return req.CertPrincipal
	case req.Authenticated && req.SASLUser != "":
		return "User:" + req.SASLUser
	}
	return ""
}
