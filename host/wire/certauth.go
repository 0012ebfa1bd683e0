package wire

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// CertLogin authenticates the upstream connections of clients that
// presented a certificate as the certificate's own principal: Credentials
// gives a delegation token owned by the principal, and the upstream
// connection logs in with it over SCRAM (tokenauth), so the cluster
// authorizes everything the client does for that principal — a Kafka SSL
// listener with ssl.client.auth=required.
type CertLogin struct {
	// Mechanism is SCRAM-SHA-256 or SCRAM-SHA-512.
	Mechanism string
	// Credentials returns the token id and password (base64 HMAC) of a
	// delegation token owned by principal.
	Credentials func(ctx context.Context, principal string) (user, password string, err error)
}

// certAuthenticate marks a connection that presented a certificate as
// authenticated by it (once, at its first request) when the listener
// logs certificates in.
func (c *conn) certAuthenticate() {
	if c.s.cfg.CertLogin == nil || c.sasl.authenticated() || c.sasl.cert {
		return
	}
	if p := c.certPrincipal(); p != "" {
		c.sasl.cert, c.sasl.gen = true, 1
	}
}

// tokenPropagation bounds the retries of a login the cluster refused: a
// delegation token just created reaches every broker with the cluster's
// metadata, a moment after CreateDelegationToken answered.
const tokenPropagation = 5 * time.Second

// certLogin dials an upstream connection and logs it in as the
// certificate's principal.
func (c *conn) certLogin(ctx context.Context, dial func() (Upstream, error)) (Upstream, error) {
	principal := c.certPrincipal()
	if principal == "unknown" {
		return nil, fmt.Errorf("client certificate: its subject has no principal to log in as")
	}
	user, pass, err := c.s.cfg.CertLogin.Credentials(ctx, principal)
	if err != nil {
		return nil, err
	}
	for deadline := time.Now().Add(tokenPropagation); ; {
		up, err := dial()
		if err != nil {
			return nil, err
		}
		err = c.tokenLogin(ctx, up, user, pass)
		if err == nil {
			return up, nil
		}
		up.Close()
		if !errors.Is(err, kerr.SaslAuthenticationFailed) || time.Now().After(deadline) {
			return nil, fmt.Errorf("logging %s in with its delegation token: %w", principal, err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// tokenLogin logs up in with the delegation token user and pass.
func (c *conn) tokenLogin(ctx context.Context, up Upstream, user, pass string) error {
	cl := c.s.cfg.CertLogin
	a := scram.Auth{User: user, Pass: pass, IsToken: true}
	var m sasl.Mechanism
	switch cl.Mechanism {
	case "SCRAM-SHA-256":
		m = a.AsSha256Mechanism()
	case "SCRAM-SHA-512":
		m = a.AsSha512Mechanism()
	default:
		return fmt.Errorf("client certificate login: mechanism %q is not SCRAM", cl.Mechanism)
	}
	return upstreamLogin(ctx, up, c.clientID, m)
}

// upstreamLogin runs SaslHandshake and SaslAuthenticate with m over up.
func upstreamLogin(ctx context.Context, up Upstream, clientID *string, m sasl.Mechanism) error {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.SetVersion(1)
	hs.Mechanism = m.Name()
	resp, err := up.Forward(ctx, clientID, hs)
	if err != nil {
		return err
	}
	if hr, ok := resp.(*kmsg.SASLHandshakeResponse); !ok || hr.ErrorCode != 0 {
		return fmt.Errorf("SaslHandshake %s refused", m.Name())
	}
	sess, msg, err := m.Authenticate(ctx, "")
	if err != nil {
		return err
	}
	for {
		ar := kmsg.NewPtrSASLAuthenticateRequest()
		ar.SetVersion(2)
		ar.SASLAuthBytes = msg
		resp, err := up.Forward(ctx, clientID, ar)
		if err != nil {
			return err
		}
		r, ok := resp.(*kmsg.SASLAuthenticateResponse)
		if !ok {
			return fmt.Errorf("SaslAuthenticate answered with %T", resp)
		}
		if r.ErrorCode != 0 {
			return kerr.ErrorForCode(r.ErrorCode)
		}
		done, next, err := sess.Challenge(r.SASLAuthBytes)
		if err != nil || done {
			return err
		}
		msg = next
	}
}
