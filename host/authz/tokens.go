package authz

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Tokens lets coordhost authenticate a client certificate's upstream
// connection as the certificate's own principal: it creates, over
// coordhost's own SASL connection to the cluster, a delegation token whose
// owner is that principal (KIP-48, created for another owner per KIP-373),
// and the client's upstream connection then logs in with SCRAM and the
// token, which the cluster authenticates as the owner. Everything the
// client does is then authorized by the cluster for the certificate's
// principal. A token is reused until half its lifetime has passed.
type Tokens struct {
	send func(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
	now  func() time.Time

	mu sync.Mutex
	m  map[string]token
}

type token struct {
	id, password string
	renewAt      time.Time
}

// NewTokens creates tokens with send, a request over coordhost's own
// SASL-authenticated connection to the cluster (creating tokens needs
// CREATE_TOKENS on the owner's USER resource, or a super user); now is the
// clock (nil: time.Now).
func NewTokens(send func(ctx context.Context, req kmsg.Request) (kmsg.Response, error), now func() time.Time) *Tokens {
	if now == nil {
		now = time.Now
	}
	return &Tokens{send: send, now: now, m: map[string]token{}}
}

// For returns the SCRAM user and password (token id and base64 HMAC) of a
// delegation token owned by principal ("User:CN=...").
func (t *Tokens) For(ctx context.Context, principal string) (user, password string, err error) {
	typ, name, ok := strings.Cut(principal, ":")
	if !ok || typ == "" || name == "" {
		return "", "", fmt.Errorf("delegation token for %q: not a principal", principal)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if tok, ok := t.m[principal]; ok && t.now().Before(tok.renewAt) {
		return tok.id, tok.password, nil
	}
	req := kmsg.NewPtrCreateDelegationTokenRequest()
	req.SetVersion(3)
	req.OwnerPrincipalType, req.OwnerPrincipalName, req.MaxLifetimeMillis = &typ, &name, -1
	resp, err := t.send(ctx, req)
	if err != nil {
		return "", "", fmt.Errorf("delegation token for %s: %w", principal, err)
	}
	r, ok := resp.(*kmsg.CreateDelegationTokenResponse)
	switch {
	case !ok:
		return "", "", fmt.Errorf("delegation token for %s: CreateDelegationToken answered with %T", principal, resp)
	case r.ErrorCode != 0:
		return "", "", fmt.Errorf("delegation token for %s: %w", principal, kerr.ErrorForCode(r.ErrorCode))
	case r.TokenID == "" || len(r.HMAC) == 0:
		return "", "", fmt.Errorf("delegation token for %s: no token in the answer", principal)
	}
	issued, expiry := time.UnixMilli(r.IssueTimestamp), time.UnixMilli(r.ExpiryTimestamp)
	tok := token{id: r.TokenID, password: base64.StdEncoding.EncodeToString(r.HMAC), renewAt: issued.Add(expiry.Sub(issued) / 2)}
	t.m[principal] = tok
	return tok.id, tok.password, nil
}

// Forget drops principal's token, so the next For creates another: the
// cluster refused a login with it (expired or deleted before half its
// lifetime).
func (t *Tokens) Forget(principal string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.m, principal)
}
