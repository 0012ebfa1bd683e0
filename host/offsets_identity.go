package host

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/coordhost/coordhost/host/authz"
	"github.com/coordhost/coordhost/host/gateway"
	"github.com/coordhost/coordhost/host/offsets"
)

// offsetsAsClient prepares dataplane.offsets.identity=client: offsets are
// written by connections logged in as the client's principal with a
// delegation token it owns (gateway.PrincipalClients). It creates one
// token for coordhost's own user first, so a cluster without delegation
// tokens, or a user without CREATE_TOKENS, stops the start with an error
// naming the setting rather than failing every commit later.
func (s *Server) offsetsAsClient(ctx context.Context, tokens *authz.Tokens) error {
	self := "User:" + s.cfg.DataPlane.SASLUser
	if _, _, err := tokens.For(ctx, self); err != nil {
		return fmt.Errorf("dataplane.offsets.identity = \"client\" needs delegation tokens: creating one for %s failed (enable delegation tokens on the cluster with delegation.token.secret.key, "+
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
