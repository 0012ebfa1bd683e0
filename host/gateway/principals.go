package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
)

// PrincipalClients writes offsets to the data plane as the client's own
// principal (dataplane.offsets.identity=client): each principal gets its
// own client, logged in with a mechanism Login gives for it (a delegation
// token the principal owns, authz.Tokens), so the cluster authorizes
// every offset write for that principal and nothing is written under
// coordhost's identity. The clients are a small pool: at most Max, the
// least recently used closed first, and any idle for Idle closed.
type PrincipalClients struct {
	d     *DataPlane
	login func(principal string) sasl.Mechanism
	// refused is told a principal whose login stayed refused.
	refused func(principal string)
	max     int
	idle    time.Duration
	retry   time.Duration
	now     func() time.Time

	mu sync.Mutex
	m  map[string]*principalClient
}

type principalClient struct {
	cl   *kgo.Client
	used time.Time
	// sending counts the writes in flight; a client taken out of the pool
	// (evicted) while one is is closed when the last ends.
	sending int
	evicted bool
}

// PrincipalOpts configures a pool of principal clients.
type PrincipalOpts struct {
	// Login is the SASL mechanism that logs a connection in as principal;
	// it is asked at every login, so a token is renewed by it.
	Login func(principal string) sasl.Mechanism
	// LoginRefused, when set, is told a principal whose login the cluster
	// kept refusing (its token is then dropped).
	LoginRefused func(principal string)
	// Max bounds the open clients (default 16); Idle closes a client
	// unused that long (default 5 minutes).
	Max  int
	Idle time.Duration
	// Retry bounds the retries of a refused login (default
	// LoginPropagation).
	Retry time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// PrincipalClients returns an empty pool of clients of d that log in as
// their principal.
func (d *DataPlane) PrincipalClients(o PrincipalOpts) *PrincipalClients {
	if o.Max <= 0 {
		o.Max = 16
	}
	if o.Idle <= 0 {
		o.Idle = 5 * time.Minute
	}
	if o.Retry <= 0 {
		o.Retry = LoginPropagation
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &PrincipalClients{d: d, login: o.Login, refused: o.LoginRefused, max: o.Max, idle: o.Idle, retry: o.Retry, now: o.Now, m: map[string]*principalClient{}}
}

// LoginPropagation bounds the retries of a login the cluster refused: a
// delegation token just created reaches every broker with the cluster's
// metadata a moment after CreateDelegationToken answered. A refused login
// sends nothing, so a retry cannot write twice.
const LoginPropagation = 5 * time.Second

// ErrNotSent wraps the error of an offset write as a principal that was
// not sent, so wrote nothing: the cluster refused the principal's login
// (ErrLoginRefused), or refused to find the group's coordinator for it
// (its GROUP_AUTHORIZATION_FAILED or TRANSACTIONAL_ID_AUTHORIZATION_FAILED
// is in the chain).
var ErrNotSent = errors.New("offsets not sent as the client's principal")

// ErrLoginRefused: the cluster refused the principal's login.
var ErrLoginRefused = errors.New("the data plane refused the principal's login")

// For returns the offset writer of principal, opening its client on
// first use.
func (p *PrincipalClients) For(principal string) (*PrincipalOffsets, error) {
	if principal == "" {
		return nil, errors.New("offsets as the client: the connection has no principal")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	for name, c := range p.m {
		if now.Sub(c.used) >= p.idle {
			p.evictLocked(name)
		}
	}
	if c, ok := p.m[principal]; ok {
		c.used = now
		return &PrincipalOffsets{p: p, c: c, principal: principal}, nil
	}
	for len(p.m) >= p.max {
		var oldest string
		for name, c := range p.m {
			if oldest == "" || c.used.Before(p.m[oldest].used) {
				oldest = name
			}
		}
		p.evictLocked(oldest)
	}
	cl, err := kgo.NewClient(append(p.d.clientOpts(), kgo.SASL(p.login(principal)))...)
	if err != nil {
		return nil, fmt.Errorf("offsets as %s: %w", principal, err)
	}
	c := &principalClient{cl: cl, used: now}
	p.m[principal] = c
	return &PrincipalOffsets{p: p, c: c, principal: principal}, nil
}

// evictLocked takes name's client out of the pool, closing it unless a
// write is in flight on it (then the last write closes it).
func (p *PrincipalClients) evictLocked(name string) {
	c := p.m[name]
	delete(p.m, name)
	c.evicted = true
	if c.sending == 0 {
		c.cl.Close()
	}
}

// send runs fn on c's client, which is not closed while fn runs.
func (p *PrincipalClients) send(c *principalClient, fn func(cl *kgo.Client)) {
	p.mu.Lock()
	c.sending++
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		c.sending--
		c.used = p.now()
		if c.evicted && c.sending == 0 {
			c.cl.Close()
		}
	}()
	fn(c.cl)
}

// open is the set of principals with an open client.
func (p *PrincipalClients) open() map[string]bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]bool{}
	for name := range p.m {
		out[name] = true
	}
	return out
}

// Close closes every client.
func (p *PrincipalClients) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name := range p.m {
		p.evictLocked(name)
	}
}

// PrincipalOffsets writes offsets as one principal (offsets.Writer).
type PrincipalOffsets struct {
	p         *PrincipalClients
	c         *principalClient
	principal string
}

// CommitOffsets stores an allowed OffsetCommit as the principal.
func (o *PrincipalOffsets) CommitOffsets(ctx context.Context, req *kmsg.OffsetCommitRequest) (*kmsg.OffsetCommitResponse, error) {
	return asPrincipal(ctx, o, func(cl *kgo.Client) (*kmsg.OffsetCommitResponse, error) { return o.p.d.commitOffsets(ctx, cl, req) })
}

// TxnCommitOffsets stores an allowed TxnOffsetCommit as the principal.
func (o *PrincipalOffsets) TxnCommitOffsets(ctx context.Context, req *kmsg.TxnOffsetCommitRequest) (*kmsg.TxnOffsetCommitResponse, error) {
	return asPrincipal(ctx, o, func(cl *kgo.Client) (*kmsg.TxnOffsetCommitResponse, error) {
		return o.p.d.txnCommitOffsets(ctx, cl, req)
	})
}

// DeleteOffsets deletes the offsets of an allowed OffsetDelete as the principal.
func (o *PrincipalOffsets) DeleteOffsets(ctx context.Context, req *kmsg.OffsetDeleteRequest) (*kmsg.OffsetDeleteResponse, error) {
	return asPrincipal(ctx, o, func(cl *kgo.Client) (*kmsg.OffsetDeleteResponse, error) { return deleteOffsets(ctx, cl, req) })
}

// MayDeleteGroups asks the cluster, as the principal, whether it may
// delete each of groups: an OffsetDelete without partitions, which Kafka
// authorizes with DELETE on the group before anything else and which
// deletes nothing. The result holds the groups the cluster refused (its
// GROUP_AUTHORIZATION_FAILED, wrapped in ErrNotSent), those whose
// question could not be sent (ErrNotSent and the reason) and those it
// answered another error (e.g. COORDINATOR_LOAD_IN_PROGRESS); a group it
// does not know (GROUP_ID_NOT_FOUND) may be deleted.
func (o *PrincipalOffsets) MayDeleteGroups(ctx context.Context, groups []string) map[string]error {
	out := map[string]error{}
	for _, g := range groups {
		probe := kmsg.NewPtrOffsetDeleteRequest()
		probe.Group = g
		resp, err := asPrincipal(ctx, o, func(cl *kgo.Client) (*kmsg.OffsetDeleteResponse, error) { return deleteOffsets(ctx, cl, probe) })
		if err == nil {
			err = kerr.ErrorForCode(resp.ErrorCode)
		}
		switch {
		case err == nil, errors.Is(err, kerr.GroupIDNotFound):
		case errors.Is(err, kerr.GroupAuthorizationFailed) && !errors.Is(err, ErrNotSent):
			out[g] = fmt.Errorf("%w (%s): %w", ErrNotSent, o.principal, err)
		default:
			out[g] = err
		}
	}
	return out
}

// DeleteGroupOffsets deletes groups (their committed offsets) in the data
// plane as the principal, one request per group so that each gets its
// own answer; the result is DataPlane.DeleteGroupOffsets's, and a group
// whose request was not sent has an error wrapping ErrNotSent.
func (o *PrincipalOffsets) DeleteGroupOffsets(ctx context.Context, groups []string) (map[string]error, error) {
	out := make(map[string]error, len(groups))
	for _, g := range groups {
		res, err := asPrincipal(ctx, o, func(cl *kgo.Client) (map[string]error, error) { return deleteGroupOffsets(ctx, cl, []string{g}) })
		switch e, answered := res[g]; {
		case err != nil:
			out[g] = err
		case answered:
			out[g] = e
		default:
			out[g] = fmt.Errorf("data-plane delete group %q: no answer for the group", g)
		}
	}
	return out, nil
}

// asPrincipal runs send, again while the cluster refuses the principal's
// login for up to the pool's Retry; a login still refused is
// ErrLoginRefused.
func asPrincipal[R any](ctx context.Context, o *PrincipalOffsets, send func(cl *kgo.Client) (R, error)) (R, error) {
	deadline := time.Now().Add(o.p.retry)
	for {
		var r R
		var err error
		o.p.send(o.c, func(cl *kgo.Client) { r, err = send(cl) })
		switch {
		case err == nil:
			return r, nil
		case errors.Is(err, kerr.GroupAuthorizationFailed), errors.Is(err, kerr.TransactionalIDAuthorizationFailed):
			return r, fmt.Errorf("%w (%s): %w", ErrNotSent, o.principal, err)
		case !errors.Is(err, kerr.SaslAuthenticationFailed):
			return r, err
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			if o.p.refused != nil {
				o.p.refused(o.principal)
			}
			return r, fmt.Errorf("%w: %w (%s): %w", ErrNotSent, ErrLoginRefused, o.principal, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}
