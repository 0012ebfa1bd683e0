// Package authz puts authentication and authorization in front of the group
// coordinator when coordhost serves an external Kafka cluster: every group
// request is allowed or refused exactly as the cluster's own authorizer
// decides for the client's principal. Nothing is copied from the cluster:
// each decision is asked over the client's own upstream session (the one
// its pass-through SASL authenticated, or a delegation token of its
// certificate's principal: tokens.go), with requests whose answer reveals
// the authorizer's verdict and that write nothing, and cached per
// (session, resource, operation) for at most Config.TTL.
package authz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/wire"
)

// Handler answers group requests; it is what Coordinator wraps (the event
// loop's Handle).
type Handler interface {
	Handle(ctx context.Context, req *wire.Request) (kmsg.Response, error)
}

// Config configures a Coordinator.
type Config struct {
	// TTL bounds how long a decision is reused for the same session,
	// resource and operation; 0 asks the cluster for every request.
	TTL time.Duration
	// RequireAuth refuses (by closing the connection, as Kafka's SASL
	// listeners do) every group request of a connection whose SASL
	// authentication has not succeeded.
	RequireAuth bool
	// Log receives one audit line per denial.
	Log *slog.Logger
	// Now is the clock (tests); nil is time.Now.
	Now func() time.Time
	// Local, when set, decides every request itself instead of asking the
	// cluster (the embedded data plane's users and ACLs).
	Local *Local
	// HostACLs, when set, refuses group requests (COORDINATOR_NOT_AVAILABLE)
	// while it finds ACLs restricted to a client host on the cluster, and
	// is stopped by Shutdown.
	HostACLs *HostACLGuard
	// CutOver, when set, answers COORDINATOR_NOT_AVAILABLE to the allowed
	// member requests of groups the cluster's own coordinator still runs.
	CutOver *CutOver
}

// ErrUnauthenticated is returned (closing the connection) for a group
// request that arrives before SASL authentication when it is required.
var ErrUnauthenticated = errors.New("request before SASL authentication")

// Coordinator authorizes every group request and hands the allowed part to
// the wrapped Handler.
type Coordinator struct {
	inner  Handler
	cfg    Config
	cache  *cache
	topics *topicLists
}

// New wraps inner.
func New(inner Handler, cfg Config) *Coordinator {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Coordinator{inner: inner, cfg: cfg, cache: newCache(cfg.TTL, cfg.Now), topics: &topicLists{m: map[listKey]topicList{}}}
}

// Shutdown stops the wrapped Handler when it has a Shutdown method.
func (a *Coordinator) Shutdown(ctx context.Context) error {
	if a.cfg.HostACLs != nil {
		a.cfg.HostACLs.Stop()
	}
	if d, ok := a.inner.(interface{ Shutdown(context.Context) error }); ok {
		return d.Shutdown(ctx)
	}
	return nil
}

// Ready fails while host-scoped ACLs are refused, else is the wrapped
// Handler's readiness when it has a Ready method.
func (a *Coordinator) Ready() error {
	if a.cfg.HostACLs != nil {
		if err := a.cfg.HostACLs.Ready(); err != nil {
			return err
		}
	}
	if r, ok := a.inner.(interface{ Ready() error }); ok {
		return r.Ready()
	}
	return nil
}

// Inner is the wrapped Handler.
func (a *Coordinator) Inner() Handler { return a.inner }

// Handle authorizes req as the cluster would and answers the refused part
// itself; an error closes the client's connection.
func (a *Coordinator) Handle(ctx context.Context, req *wire.Request) (kmsg.Response, error) {
	if a.cfg.RequireAuth && !req.Authenticated {
		return nil, fmt.Errorf("%s: %w", kmsg.NameForKey(req.Key), ErrUnauthenticated)
	}
	if req.Session == nil && a.cfg.Local == nil {
		return nil, fmt.Errorf("%s: no upstream session to ask the cluster's authorizer", kmsg.NameForKey(req.Key))
	}
	if a.cfg.HostACLs != nil && a.cfg.HostACLs.Blocked() { // fail closed: logged by the guard
		return wire.ErrorResponse(req.Body, kerr.CoordinatorNotAvailable.Code), nil
	}
	c := &check{a: a, req: req, ctx: ctx}
	resp, err := c.handle()
	if err != nil {
		return nil, fmt.Errorf("authorizing %s: %w", kmsg.NameForKey(req.Key), err)
	}
	return resp, nil
}

// check is the authorization of one request.
type check struct {
	a   *Coordinator
	req *wire.Request
	ctx context.Context
}

// allowed asks (or recalls) whether the session may perform op on the
// resource, logging a denial.
func (c *check) allowed(rt kmsg.ACLResourceType, name string, op kmsg.ACLOperation) (bool, error) {
	ok, err := c.decide(resource{rt, name}, op)
	if err != nil {
		return false, err
	}
	if !ok {
		c.logDenied(rt, name, op)
	}
	return ok, nil
}

// logDenied writes the audit line of one denial.
func (c *check) logDenied(rt kmsg.ACLResourceType, name string, op kmsg.ACLOperation) {
	principal := "User:ANONYMOUS"
	switch {
	case c.req.CertAuthenticated:
		principal = c.req.CertPrincipal
	case c.req.SASLUser != "":
		principal = "User:" + c.req.SASLUser
	case c.req.Authenticated:
		principal = "unknown"
	}
	attrs := []any{"principal", principal, "operation", opName(op), "resource_type", rtName(rt), "resource", name,
		"api", kmsg.NameForKey(c.req.Key), "client_id", c.req.ClientIDString(), "client", c.req.ClientHost,
		"authenticated", c.req.Authenticated}
	if c.req.CertPrincipal != "" && !c.req.CertAuthenticated { // admitted the connection; the SASL principal is the one authorized
		attrs = append(attrs, "certificate", c.req.CertPrincipal)
	}
	c.a.cfg.Log.Info("authorization denied", attrs...)
}

// inner hands body (the allowed part of the request) to the wrapped Handler.
func (c *check) inner(body kmsg.Request) (kmsg.Response, error) {
	return c.innerWith(c.ctx, body)
}

// innerWith is inner with ctx; the member requests of a group the
// cluster's own coordinator still runs are answered by the cut-over.
func (c *check) innerWith(ctx context.Context, body kmsg.Request) (kmsg.Response, error) {
	if co := c.a.cfg.CutOver; co != nil {
		if g, ok := memberGroup(body); ok && co.Pending(ctx, g) {
			return wire.ErrorResponse(body, kerr.CoordinatorNotAvailable.Code), nil
		}
	}
	sub := *c.req
	sub.Body = body
	return c.a.inner.Handle(ctx, &sub)
}

func opName(op kmsg.ACLOperation) string {
	if s := op.String(); s != "" {
		return s
	}
	return fmt.Sprint(int8(op))
}

func rtName(rt kmsg.ACLResourceType) string {
	if s := rt.String(); s != "" {
		return s
	}
	return fmt.Sprint(int8(rt))
}
