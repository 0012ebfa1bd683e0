package interop

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// embeddedSecurityConfig is the embedded.* section giving coordhost's
// embedded data plane the secured broker's users (both SCRAM mechanisms,
// the same passwords), super user and ACLs.
func embeddedSecurityConfig(t *testing.T, acls []acl, allowEveryone bool) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "embedded:\n  super.users: [User:admin]\n  allow.everyone.if.no.acl.found: %v\n  sasl.users:\n", allowEveryone)
	for _, u := range authzUsers {
		fmt.Fprintf(&b, "    - {user: %s, password: %s}\n", u, password(u))
	}
	if len(acls) > 0 {
		b.WriteString("  acls:\n")
	}
	for _, a := range acls {
		perm := "deny"
		if a.perm == allow {
			perm = "allow"
		}
		fmt.Fprintf(&b, "    - {principal: %q, resource.type: %s, pattern.type: %s, name: %q, operation: %s, permission: %s, host: \"*\"}\n",
			a.principal, a.rt, a.pattern, a.name, a.op, perm)
	}
	p := filepath.Join(t.TempDir(), "embedded-security.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// startSecuredEmbedded starts coordhost on its embedded data plane with
// the users and ACLs, creates topic t (one partition, as on the broker)
// there, and returns its address and a super-user client of it.
func startSecuredEmbedded(t *testing.T, dir string, acls []acl, allowEveryone bool) (string, *kgo.Client) {
	t.Helper()
	ch := startCoordhost(t, dir, "", "--config="+embeddedSecurityConfig(t, acls, allowEveryone))
	admin, err := kgo.NewClient(kgo.SeedBrokers(ch.addr), kgo.RetryTimeout(10*time.Second),
		kgo.SASL(scram.Auth{User: "admin", Pass: adminPassword}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	createTopics(t, admin, 1, "t")
	return ch.addr, admin
}

// TestInteropEmbeddedAuthorization: coordhost on its embedded data plane,
// configured with the secured broker's SCRAM users, super user and ACLs,
// gives every group API the authorization verdict the real broker
// (StandardAuthorizer) gives the same principal directly — the table of
// TestInteropAuthorization, its rows that apply to an embedded plane
// (docs/SECURITY.md lists the others) — and a group request before
// authentication closes the connection on both. A commit the embedded
// mode allows is on its data plane; a refused one is not. The allow.everyone.if.no.acl.found
// variant starts a second broker.
func TestInteropEmbeddedAuthorization(t *testing.T) {
	needInterop(t)
	start := time.Now()
	dir := logDir(t)
	plain, secure := startSecureBroker(t, dir)
	broker, err := kgo.NewClient(kgo.SeedBrokers(plain))
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	createACLs(t, broker, authzACLs)
	createTopics(t, broker, 1, "t")
	chAddr, admin := startSecuredEmbedded(t, dir, authzACLs, false)
	t.Logf("broker and embedded coordhost up in %v", time.Since(start).Round(time.Second))

	t.Run("unauthenticated", func(t *testing.T) {
		for name, addr := range map[string]string{"broker": secure, "coordhost": chAddr} {
			c := dialKafka(t, addr)
			if _, err := c.do(kmsg.NewPtrApiVersionsRequest()); err != nil {
				t.Fatalf("%s: ApiVersions before authentication: %v", name, err)
			}
			if resp, err := c.do(groupRequests("g", 0)[3]); err == nil {
				t.Fatalf("%s answered a heartbeat before authentication: %+v", name, resp)
			}
		}
	})
	// admin reads the embedded plane's committed offsets (through coordhost)
	waitGroupCoordinator(t, broker, "g")
	authzTableWith(t, secure, chAddr, admin, 1000, []authzRow{
		{"no ACL", "noacl", "g", "SCRAM-SHA-256"},
		{"exact ACL", "exact", "g", "SCRAM-SHA-512"},
		{"prefixed ACL", "prefixed", "g", "SCRAM-SHA-256"},
		{"DENY over ALLOW", "denyover", "g", "SCRAM-SHA-512"},
		{"wildcard User:*", "noacl", "gw", "SCRAM-SHA-256"},
		{"super user", "admin", "g", "SCRAM-SHA-512"},
	}, false)
	t.Run("consumer group with an undescribable topic", func(t *testing.T) { testConsumerDescribeTopics(t, secure, chAddr) })
	t.Logf("embedded authorization table took %v", time.Since(start).Round(time.Second))

	t.Run("allow.everyone.if.no.acl.found", func(t *testing.T) {
		dir := logDir(t)
		plain, secure := startSecureBrokerWith(t, appDir, dir, map[string]string{"allow.everyone.if.no.acl.found": "true"})
		broker, err := kgo.NewClient(kgo.SeedBrokers(plain))
		if err != nil {
			t.Fatal(err)
		}
		defer broker.Close()
		acls := []acl{{"User:exact", rGroup, "g", literal, kmsg.ACLOperationRead, allow}}
		createACLs(t, broker, acls)
		createTopics(t, broker, 1, "t")
		chAddr, admin := startSecuredEmbedded(t, dir, acls, true)
		waitGroupCoordinator(t, broker, "g")
		authzTableWith(t, secure, chAddr, admin, 2000, []authzRow{
			{"group with ACLs, none for the principal", "noacl", "g", "SCRAM-SHA-256"},
			{"group with the principal's ACL", "exact", "g", "SCRAM-SHA-512"},
			{"group without ACLs", "noacl", "gopen", "SCRAM-SHA-256"},
		}, false)
	})
	t.Logf("embedded authorization interop took %v", time.Since(start).Round(time.Second))
}

// waitGroupCoordinator waits (bounded) until the broker's coordinator of
// group answers DescribeGroups with no retriable error: a fresh broker creates and
// loads its offsets topic on the first group request, and answers the
// table's first requests COORDINATOR_NOT_AVAILABLE or
// COORDINATOR_LOAD_IN_PROGRESS until then, without the group's
// authorized operations.
func waitGroupCoordinator(t *testing.T, broker *kgo.Client, group string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		req := kmsg.NewPtrDescribeGroupsRequest()
		req.Groups = []string{group}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := req.RequestWith(ctx, broker)
		cancel()
		if err == nil && len(resp.Groups) == 1 && !kerr.IsRetriable(kerr.ErrorForCode(resp.Groups[0].ErrorCode)) {
			return // loaded: the group is described, or GROUP_ID_NOT_FOUND
		}
		if time.Now().After(deadline) {
			t.Fatalf("the broker's coordinator of %s: %v %+v", group, err, resp)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
