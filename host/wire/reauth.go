package wire

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SASL as passed through, with KIP-368 re-authentication as Kafka 4.4's
// broker runs it (SaslServerAuthenticator, KafkaChannel, SocketServer):
//
//   - An accepted authentication's SaslAuthenticate response carries the
//     session lifetime: the cluster's (its connections.max.reauth.ms and
//     the credential's remaining lifetime) capped by this listener's
//     Config.MaxReauth. The connection's session ends that long after.
//   - A SaslHandshake on an authenticated connection whose session has a
//     lifetime begins a re-authentication (at most one a second, else the
//     handshake is answered ILLEGAL_SASL_STATE, as Kafka's request handler
//     answers it). It runs over a new upstream connection, so the cluster
//     authenticates the client from scratch whatever its own lifetime; on
//     success that connection replaces the old one.
//   - During a re-authentication anything but SaslAuthenticate closes the
//     connection; another mechanism than the session's is answered at the
//     handshake and closed at the first SaslAuthenticate; a failed
//     authentication, or one whose user differs from the session's
//     ("Cannot change principals during re-authentication"), is answered
//     SASL_AUTHENTICATION_FAILED and closes the connection.
//   - Once the session expired, any request but a SaslHandshake closes the
//     connection.
//
// Every accepted authentication starts a new authentication generation;
// authorization decisions cached under an older one are never reused.

// minReauthInterval is Kafka's minimum time between two re-authentications
// of one connection.
const minReauthInterval = time.Second

var (
	errSessionExpired = errors.New("SASL session expired without re-authentication")
	errReauth         = errors.New("re-authentication failed")
)

// saslState is one client connection's SASL state.
type saslState struct {
	// The authentication in progress: its handshake's mechanism, the user
	// its first message claims, and the SaslAuthenticate rounds so far.
	mech, claim string
	rounds      int
	// The accepted session: its mechanism and user, its generation
	// (0: never authenticated) and when it ends (zero: never).
	authMech, user string
	gen            uint64
	expiry         time.Time
	// reauthAt is when the last re-authentication began; reauth is the one
	// in progress.
	reauthAt time.Time
	reauth   *reauthentication
	// cert: the session is the client certificate's (CertLogin), for
	// the life of the connection.
	cert bool
}

// reauthentication is a re-authentication in progress.
type reauthentication struct {
	up      Upstream
	badMech bool // the handshake asked another mechanism than the session's
}

// authenticated reports whether the connection has an accepted session.
func (s *saslState) authenticated() bool { return s.gen > 0 }

// gate closes the connection (an error) for a request a Kafka broker would
// close it for: anything but SaslAuthenticate during a re-authentication,
// and anything but SaslHandshake once the session expired.
func (s *saslState) gate(key int16) error {
	switch {
	case s.reauth != nil && key != int16(kmsg.SASLAuthenticate):
		return fmt.Errorf("%w: %s during re-authentication", errReauth, kmsg.NameForKey(key))
	case s.reauth == nil && s.expiry.IsZero():
		// No session lifetime: nothing expires, and the clock is not read
		// (a request of a connection without one reads it often enough).
	case s.reauth == nil && s.expired(time.Now()) && key != int16(kmsg.SASLHandshake):
		return fmt.Errorf("%w: %s", errSessionExpired, kmsg.NameForKey(key))
	}
	return nil
}

func (s *saslState) expired(now time.Time) bool {
	return s.authenticated() && !s.expiry.IsZero() && now.After(s.expiry)
}

// sessionLifetime is the lifetime the client is told: the cluster's
// (0: none) capped by the listener's maximum (0: none), as Kafka takes the
// smaller of connections.max.reauth.ms and the credential's lifetime.
func sessionLifetime(upstreamMs int64, max time.Duration) int64 {
	local := max.Milliseconds()
	switch {
	case local <= 0:
		return upstreamMs
	case upstreamMs <= 0:
		return local
	}
	return min(upstreamMs, local)
}

// saslDone reports whether a successful SaslAuthenticate response ends the
// exchange of mechanism, the rounds-th of it. Kafka answers a lifetime only
// at the end; otherwise PLAIN takes one round, SCRAM two (client-first,
// client-final), and OAUTHBEARER ends with an empty server message (a
// non-empty one is the error challenge before a failure).
func saslDone(mechanism string, rounds int, resp *kmsg.SASLAuthenticateResponse) bool {
	switch {
	case resp.SessionLifetimeMillis > 0:
		return true
	case strings.HasPrefix(mechanism, "SCRAM-"):
		return rounds >= 2
	case mechanism == "OAUTHBEARER":
		return len(resp.SASLAuthBytes) == 0
	}
	return true
}

// handshake starts an authentication, or a re-authentication on an
// authenticated connection.
func (c *conn) handshake(ctx context.Context, req *Request, b *kmsg.SASLHandshakeRequest) (kmsg.Response, error) {
	s := &c.sasl
	if !s.authenticated() {
		up, err := c.upstream(ctx)
		if err != nil {
			return nil, err
		}
		s.mech, s.claim, s.rounds = b.Mechanism, "", 0
		return up.Forward(ctx, req.ClientID, b)
	}
	now := time.Now()
	if s.expiry.IsZero() || (!s.reauthAt.IsZero() && now.Sub(s.reauthAt) < minReauthInterval) {
		resp := b.ResponseKind().(*kmsg.SASLHandshakeResponse)
		resp.ErrorCode = kerr.IllegalSaslState.Code
		return resp, nil
	}
	s.reauthAt = now
	up, err := c.s.cfg.Dial(ctx)
	if err != nil {
		return nil, fmt.Errorf("re-authentication: connecting to the data plane: %w", err)
	}
	resp, err := up.Forward(ctx, req.ClientID, b)
	if err != nil {
		up.Close()
		return nil, fmt.Errorf("re-authentication: %w", err)
	}
	if hr, ok := resp.(*kmsg.SASLHandshakeResponse); !ok || hr.ErrorCode != 0 {
		up.Close()
		c.closeAfter = fmt.Errorf("%w: handshake for %s refused", errReauth, b.Mechanism)
		return resp, nil
	}
	s.mech, s.claim, s.rounds = b.Mechanism, "", 0
	s.reauth = &reauthentication{up: up, badMech: b.Mechanism != s.authMech}
	return resp, nil
}

// authenticate passes one SaslAuthenticate round on, over the upstream
// connection of the (re-)authentication in progress.
func (c *conn) authenticate(ctx context.Context, req *Request, b *kmsg.SASLAuthenticateRequest) (kmsg.Response, error) {
	s := &c.sasl
	r := s.reauth
	if r == nil && s.authenticated() { // Kafka's request handler answers it so
		resp := b.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.ErrorCode = kerr.IllegalSaslState.Code
		resp.ErrorMessage = kmsg.StringPtr("SaslAuthenticate request received after successful authentication")
		return resp, nil
	}
	var err error
	if r != nil && r.badMech {
		return nil, fmt.Errorf("%w: SASL mechanism %q requested by client is not supported for re-authentication of mechanism %q", errReauth, s.mech, s.authMech)
	}
	var up Upstream
	if r != nil {
		up = r.up
	} else if up, err = c.upstream(ctx); err != nil {
		return nil, err
	}
	if s.rounds == 0 {
		s.claim = saslUser(s.mech, b.SASLAuthBytes)
	}
	s.rounds++
	resp, err := up.Forward(ctx, req.ClientID, b)
	if err != nil {
		return nil, err
	}
	a, ok := resp.(*kmsg.SASLAuthenticateResponse)
	switch {
	case !ok:
		return nil, fmt.Errorf("SaslAuthenticate answered with %T", resp)
	case a.ErrorCode != 0: // Kafka closes the connection after a failed authentication
		c.closeAfter = fmt.Errorf("%w: %s", errReauth, kerr.ErrorForCode(a.ErrorCode))
		return a, nil
	case !saslDone(s.mech, s.rounds, a):
		return a, nil
	case r != nil && s.claim != s.user:
		a.ErrorCode, a.SASLAuthBytes, a.SessionLifetimeMillis = kerr.SaslAuthenticationFailed.Code, nil, 0
		a.ErrorMessage = kmsg.StringPtr(fmt.Sprintf("Cannot change principals during re-authentication from User.%s: User.%s", s.user, s.claim))
		c.closeAfter = fmt.Errorf("%w: %s", errReauth, *a.ErrorMessage)
		return a, nil
	}
	if r != nil { // the new upstream session replaces the old one
		c.up.Close()
		c.up, s.reauth = r.up, nil
		c.log.Debug("kafka client re-authenticated", "user", s.user)
	}
	s.authMech, s.user = s.mech, s.claim
	s.gen++
	a.SessionLifetimeMillis = sessionLifetime(a.SessionLifetimeMillis, c.s.cfg.MaxReauth)
	s.expiry = time.Time{}
	if a.SessionLifetimeMillis > 0 {
		s.expiry = time.Now().Add(time.Duration(a.SessionLifetimeMillis) * time.Millisecond)
	}
	return a, nil
}

// closeReauth drops the upstream connection of a re-authentication that
// did not finish.
func (s *saslState) closeReauth() {
	if s.reauth != nil {
		s.reauth.up.Close()
		s.reauth = nil
	}
}
