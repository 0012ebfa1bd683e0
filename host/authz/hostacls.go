package authz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Host-scoped ACLs: the cluster sees coordhost's address, not the client's,
// so an ACL whose host is not "*" does not apply as it was written (an
// ALLOW for the client's host never matches, a DENY for it is bypassed).
// What coordhost cannot see it does not pretend to enforce: HostACLGuard
// refuses to start while the cluster has such ACLs, unless the operator
// chose to ignore them (dataplane.authorization.host.acls=ignore), and
// re-checks them while running (docs/SECURITY.md).

// Asker sends one request over coordhost's own data-plane connection.
type Asker func(ctx context.Context, req kmsg.Request) (kmsg.Response, error)

// HostACLSetting is the configuration key that decides what host-scoped
// ACLs do.
const HostACLSetting = "dataplane.authorization.host.acls"

// hostACLsShown is how many host-scoped ACLs an error or log line names.
const hostACLsShown = 3

// HostACL is one ACL of the cluster restricted to a client host.
type HostACL struct {
	Principal, Host, Operation, Permission string
	ResourceType, ResourceName, Pattern    string
}

func (a HostACL) String() string {
	return fmt.Sprintf("%s from host %s %s %s on %s %s (%s)", a.Principal, a.Host, a.Permission, a.Operation,
		a.ResourceType, a.ResourceName, a.Pattern)
}

// ErrHostACLs is wrapped by the error of a check that found host-scoped
// ACLs.
var ErrHostACLs = errors.New("the cluster has ACLs restricted to a client host")

// errDescribeRefused is wrapped when the cluster refuses DescribeAcls.
var errDescribeRefused = errors.New("the cluster refused DescribeAcls")

// ListHostACLs lists the cluster's ACLs whose host is not "*". A cluster
// without an authorizer (SECURITY_DISABLED) has none.
func ListHostACLs(ctx context.Context, ask Asker) ([]HostACL, error) {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.ResourceType = kmsg.ACLResourceTypeAny
	req.ResourcePatternType = kmsg.ACLResourcePatternTypeAny
	req.Operation = kmsg.ACLOperationAny
	req.PermissionType = kmsg.ACLPermissionTypeAny
	r, err := ask(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("describing the cluster's ACLs: %w", err)
	}
	resp := r.(*kmsg.DescribeACLsResponse)
	switch resp.ErrorCode {
	case 0:
	case kerr.SecurityDisabled.Code:
		return nil, nil
	case kerr.ClusterAuthorizationFailed.Code:
		return nil, fmt.Errorf("%w (CLUSTER_AUTHORIZATION_FAILED): coordhost's own user (dataplane.sasl.username) needs DESCRIBE on the CLUSTER "+
			"to list the ACLs, or set %s=ignore to start without checking for ACLs restricted to a client host", errDescribeRefused, HostACLSetting)
	default:
		msg := ""
		if resp.ErrorMessage != nil {
			msg = ": " + *resp.ErrorMessage
		}
		return nil, fmt.Errorf("%w: %v%s", errDescribeRefused, kerr.ErrorForCode(resp.ErrorCode), msg)
	}
	var out []HostACL
	for _, res := range resp.Resources {
		for _, a := range res.ACLs {
			if a.Host == "*" {
				continue
			}
			out = append(out, HostACL{Principal: a.Principal, Host: a.Host, Operation: a.Operation.String(),
				Permission: a.PermissionType.String(), ResourceType: res.ResourceType.String(),
				ResourceName: res.ResourceName, Pattern: res.ResourcePatternType.String()})
		}
	}
	return out, nil
}

// describeHostACLs names the first few ACLs and counts the rest.
func describeHostACLs(acls []HostACL) string {
	var b strings.Builder
	for i, a := range acls[:min(len(acls), hostACLsShown)] {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(a.String())
	}
	if n := len(acls) - hostACLsShown; n > 0 {
		fmt.Fprintf(&b, "; and %d more", n)
	}
	return b.String()
}

// HostACLGuard checks the cluster for host-scoped ACLs at start and every
// interval while running. With ignore unset, finding one fails start, and
// while running makes the guard block: Blocked reports it, Ready fails
// and group requests are answered COORDINATOR_NOT_AVAILABLE (fail closed)
// until a check finds none again.
type HostACLGuard struct {
	ask    Asker
	ignore bool
	log    *slog.Logger

	found   atomic.Int64 // host-scoped ACLs at the last successful check
	blocked atomic.Bool

	stopOnce sync.Once
	stop     context.CancelFunc
	done     chan struct{}
}

// NewHostACLGuard makes a guard asking over ask; ignore is the setting's
// "ignore".
func NewHostACLGuard(ask Asker, ignore bool, log *slog.Logger) *HostACLGuard {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &HostACLGuard{ask: ask, ignore: ignore, log: log}
}

// Check runs the start-up check: an error means coordhost must not start.
func (g *HostACLGuard) Check(ctx context.Context) error {
	acls, err := ListHostACLs(ctx, g.ask)
	if err != nil {
		if g.ignore {
			g.log.Warn("cannot check the cluster for ACLs restricted to a client host; starting anyway because "+HostACLSetting+"=ignore", "err", err)
			return nil
		}
		return err
	}
	g.found.Store(int64(len(acls)))
	if len(acls) == 0 {
		return nil
	}
	if g.ignore {
		g.log.Warn("the cluster has ACLs restricted to a client host, which coordhost cannot enforce (the cluster sees coordhost's address); ignored because "+HostACLSetting+"=ignore",
			"count", len(acls), "acls", describeHostACLs(acls))
		return nil
	}
	return fmt.Errorf("%w, which coordhost cannot enforce (the cluster sees coordhost's address, not the client's): %d of them: %s. "+
		"Remove them or make their host \"*\", or set %s=ignore to start anyway", ErrHostACLs, len(acls), describeHostACLs(acls), HostACLSetting)
}

// recheck is one periodic check.
func (g *HostACLGuard) recheck(ctx context.Context) {
	acls, err := ListHostACLs(ctx, g.ask)
	if err != nil {
		if ctx.Err() == nil {
			g.log.Warn("re-checking the cluster for ACLs restricted to a client host failed; keeping the last result", "err", err, "blocked", g.blocked.Load())
		}
		return
	}
	g.found.Store(int64(len(acls)))
	switch {
	case len(acls) > 0 && g.ignore:
		g.log.Warn("the cluster has ACLs restricted to a client host, which coordhost cannot enforce; ignored because "+HostACLSetting+"=ignore",
			"count", len(acls), "acls", describeHostACLs(acls))
	case len(acls) > 0:
		g.log.Error("the cluster has ACLs restricted to a client host, which coordhost cannot enforce: group requests are answered COORDINATOR_NOT_AVAILABLE until they are gone "+
			"(or restart with "+HostACLSetting+"=ignore)", "count", len(acls), "acls", describeHostACLs(acls))
		g.blocked.Store(true)
	case g.blocked.Swap(false):
		g.log.Info("the cluster has no more ACLs restricted to a client host: group requests are served again")
	}
}

// Start re-checks every interval until Stop.
func (g *HostACLGuard) Start(interval time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	g.stop, g.done = cancel, make(chan struct{})
	go func() {
		defer close(g.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
				g.recheck(cctx)
				ccancel()
			}
		}
	}()
}

// Stop ends the periodic checks; it is safe to call more than once, and
// without Start.
func (g *HostACLGuard) Stop() {
	g.stopOnce.Do(func() {
		if g.stop != nil {
			g.stop()
			<-g.done
		}
	})
}

// Found is the number of host-scoped ACLs the last successful check found.
func (g *HostACLGuard) Found() int64 { return g.found.Load() }

// Blocked reports whether group requests are refused (fail closed).
func (g *HostACLGuard) Blocked() bool { return g.blocked.Load() }

// Ready fails while the guard blocks.
func (g *HostACLGuard) Ready() error {
	if g.Blocked() {
		return fmt.Errorf("%w (%d), which coordhost cannot enforce: group requests are refused", ErrHostACLs, g.Found())
	}
	return nil
}
