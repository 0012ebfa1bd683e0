package authz

import (
	"context"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/wire"
)

// Local decides group requests in coordhost itself, with an ACLEvaluator,
// for a data plane that has no authorizer to ask (the embedded one). The
// principal is User:<the SASL user> once the connection authenticated,
// else User:ANONYMOUS; the host is the client's address.
type Local struct {
	// Evaluator holds the ACLs and super users.
	Evaluator *ACLEvaluator
	// TopicNames resolves topic ids to names; an id it does not know is
	// let through to the coordinator, which answers the unknown-topic error.
	TopicNames func(ctx context.Context, ids [][16]byte) (map[[16]byte]string, error)
}

// localWho is the principal and host a Local authorizer decides for.
func localWho(req *wire.Request) (principal, host string) {
	principal = "User:ANONYMOUS"
	if req.Authenticated {
		principal = "User:" + req.SASLUser
	}
	return principal, strings.TrimPrefix(req.ClientHost, "/")
}

// decideAll answers op on every resource of rs, locally or by asking the
// cluster (through the cache).
func (c *check) decideAll(rs []resource, op kmsg.ACLOperation) (map[resource]bool, error) {
	l := c.a.cfg.Local
	if l == nil {
		return c.a.cache.decideAll(c.ctx, whoOf(c.req), rs, op)
	}
	principal, host := localWho(c.req)
	names, err := l.idNames(c.ctx, rs)
	if err != nil {
		return nil, err
	}
	out := make(map[resource]bool, len(rs))
	for _, r := range rs {
		name := r.name
		if id, ok := parseTopicID(name); ok && r.rt == kmsg.ACLResourceTypeTopic {
			if name, ok = names[id]; !ok {
				out[r] = true
				continue
			}
		}
		out[r] = bool(l.Evaluator.Evaluate(principal, host, op, r.rt, name))
	}
	return out, nil
}

func (c *check) decide(r resource, op kmsg.ACLOperation) (bool, error) {
	m, err := c.decideAll([]resource{r}, op)
	return m[r], err
}

// idNames resolves the topics of rs named by id.
func (l *Local) idNames(ctx context.Context, rs []resource) (map[[16]byte]string, error) {
	var ids [][16]byte
	for _, r := range rs {
		if id, ok := parseTopicID(r.name); ok && r.rt == kmsg.ACLResourceTypeTopic {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 || l.TopicNames == nil {
		return nil, nil
	}
	return l.TopicNames(ctx, ids)
}
