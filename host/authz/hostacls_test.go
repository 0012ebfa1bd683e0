package authz_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/host/authz"
	"github.com/coordhost/coordhost/internal/testtool"
)

// aclCluster answers DescribeAcls as a cluster would: its ACLs, or an
// error code.
type aclCluster struct {
	mu    sync.Mutex
	code  int16
	hosts []string // one ALLOW READ ACL on group g<i> per host
}

func (c *aclCluster) set(code int16, hosts ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.code, c.hosts = code, hosts
}

func (c *aclCluster) ask(_ context.Context, req kmsg.Request) (kmsg.Response, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := req.(*kmsg.DescribeACLsRequest)
	if !ok {
		return nil, fmt.Errorf("unexpected %T", req)
	}
	if d.ResourceType != kmsg.ACLResourceTypeAny || d.Operation != kmsg.ACLOperationAny || d.PermissionType != kmsg.ACLPermissionTypeAny ||
		d.ResourcePatternType != kmsg.ACLResourcePatternTypeAny || d.Principal != nil || d.Host != nil || d.ResourceName != nil {
		return nil, errors.New("the filter does not match every ACL")
	}
	resp := d.ResponseKind().(*kmsg.DescribeACLsResponse)
	resp.ErrorCode = c.code
	for i, h := range c.hosts {
		r := kmsg.NewDescribeACLsResponseResource()
		r.ResourceType, r.ResourceName, r.ResourcePatternType = kmsg.ACLResourceTypeGroup, fmt.Sprintf("g%d", i), kmsg.ACLResourcePatternTypeLiteral
		a := kmsg.NewDescribeACLsResponseResourceACL()
		a.Principal, a.Host, a.Operation, a.PermissionType = "User:alice", h, kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		r.ACLs = append(r.ACLs, a)
		resp.Resources = append(resp.Resources, r)
	}
	return resp, nil
}

func TestHostACLsRefuseStart(t *testing.T) {
	c := &aclCluster{}
	for _, tc := range []struct {
		name   string
		code   int16
		hosts  []string
		ignore bool
		want   []string // in the error; none: start
		warn   string   // in the log
	}{
		{name: "only wildcard hosts", hosts: []string{"*", "*"}},
		{name: "no authorizer", code: kerr.SecurityDisabled.Code},
		{name: "one host ACL", hosts: []string{"*", "10.0.0.1"},
			want: []string{"1 of them", "User:alice from host 10.0.0.1 ALLOW READ on GROUP g1 (LITERAL)", "dataplane.authorization.host.acls=ignore"}},
		{name: "many host ACLs", hosts: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5"},
			want: []string{"5 of them", "host 10.0.0.3", "and 2 more"}},
		{name: "describe refused", code: kerr.ClusterAuthorizationFailed.Code,
			want: []string{"CLUSTER_AUTHORIZATION_FAILED", "DESCRIBE on the CLUSTER", "dataplane.authorization.host.acls=ignore"}},
		{name: "ignored", hosts: []string{"10.0.0.1"}, ignore: true, warn: "ignored because dataplane.authorization.host.acls=ignore"},
		{name: "describe refused ignored", code: kerr.ClusterAuthorizationFailed.Code, ignore: true, warn: "starting anyway"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.set(tc.code, tc.hosts...)
			var log bytes.Buffer
			g := authz.NewHostACLGuard(c.ask, tc.ignore, slog.New(slog.NewTextHandler(&log, nil)))
			err := g.Check(context.Background())
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("start refused: %v", err)
				}
			} else {
				if err == nil {
					t.Fatal("started")
				}
				for _, w := range tc.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				if strings.Contains(err.Error(), "host 10.0.0.4") {
					t.Errorf("error names more than three ACLs: %q", err)
				}
			}
			if !strings.Contains(log.String(), tc.warn) || tc.warn != "" && !strings.Contains(log.String(), "level=WARN") {
				t.Errorf("log %q lacks the warning %q", log.String(), tc.warn)
			}
		})
	}
}

// A host-scoped ACL created while running makes the guard fail closed:
// group requests answer COORDINATOR_NOT_AVAILABLE without reaching the
// coordinator or the cluster, readiness fails, an ERROR is logged; once it
// is gone they are served again.
func TestHostACLsFoundLaterFailClosed(t *testing.T) {
	c := &aclCluster{}
	var log testtool.LogBuffer
	g := authz.NewHostACLGuard(c.ask, false, slog.New(slog.NewTextHandler(&log, nil)))
	if err := g.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, 0)
	h.f.grant("GROUP:g", kmsg.ACLOperationRead)
	h.a = authz.New(h.rec, authz.Config{Log: slog.New(slog.DiscardHandler), HostACLs: g})
	g.Start(time.Millisecond)
	defer func() { _ = h.a.Shutdown(context.Background()) }()
	if code := h.do(heartbeat("g")).(*kmsg.HeartbeatResponse).ErrorCode; code != 0 || h.a.Ready() != nil {
		t.Fatalf("before: code %d, ready %v", code, h.a.Ready())
	}
	h.reached()

	c.set(0, "*", "192.0.2.7")
	waitFor(t, func() bool { return g.Blocked() })
	if code := h.do(heartbeat("g")).(*kmsg.HeartbeatResponse).ErrorCode; code != kerr.CoordinatorNotAvailable.Code {
		t.Fatalf("blocked: code %d", code)
	}
	if len(h.reached()) != 0 {
		t.Fatal("a refused request reached the coordinator")
	}
	if err := h.a.Ready(); err == nil || !errors.Is(err, authz.ErrHostACLs) {
		t.Fatalf("ready while blocked: %v", err)
	}
	if g.Found() != 1 || !strings.Contains(log.String(), "level=ERROR") || !strings.Contains(log.String(), "host 192.0.2.7") {
		t.Fatalf("found %d, log %q", g.Found(), log.String())
	}

	c.set(0, "*")
	waitFor(t, func() bool { return !g.Blocked() })
	if code := h.do(heartbeat("g")).(*kmsg.HeartbeatResponse).ErrorCode; code != 0 || h.a.Ready() != nil {
		t.Fatalf("after: code %d, ready %v", code, h.a.Ready())
	}
	_ = h.a.Shutdown(context.Background())
	g.Stop() // twice is safe
}

// With ignore, a host-scoped ACL found while running only warns.
func TestHostACLsIgnoredWhileRunning(t *testing.T) {
	c := &aclCluster{}
	var log testtool.LogBuffer
	g := authz.NewHostACLGuard(c.ask, true, slog.New(slog.NewTextHandler(&log, nil)))
	g.Start(time.Millisecond)
	defer g.Stop()
	c.set(0, "192.0.2.7")
	waitFor(t, func() bool { return g.Found() == 1 && strings.Contains(log.String(), "level=WARN") })
	if g.Blocked() || g.Ready() != nil {
		t.Fatal("an ignored host ACL blocks")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("condition not reached in 5 s")
		}
	}
}
