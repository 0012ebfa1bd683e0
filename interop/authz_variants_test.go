package interop

import (
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// authorizerDir is the Maven project of NameRuleAuthorizer, with the broker.
const authorizerDir = "authorizer"

// TestInteropAuthorizerVariants: the authorization table against brokers
// whose authorizer is not the default StandardAuthorizer setup — a
// StandardAuthorizer with allow.everyone.if.no.acl.found=true, and a custom
// Authorizer class (NameRuleAuthorizer) that decides by principal name and
// keeps no ACLs. Each needs its own broker, so this runs from `make
// interop-authz-variants`, not in CI.
func TestInteropAuthorizerVariants(t *testing.T) {
	needInterop(t)
	t.Run("allow.everyone.if.no.acl.found", func(t *testing.T) {
		admin, secure, chAddr := authzVariant(t, appDir, map[string]string{"allow.everyone.if.no.acl.found": "true"})
		// g has ACLs (READ for User:exact): everyone else is refused on it;
		// gopen, t, tx and the cluster have none: everyone is allowed
		createACLs(t, admin, []acl{{"User:exact", rGroup, "g", literal, kmsg.ACLOperationRead, allow}})
		authzTable(t, secure, chAddr, admin, 2000, []authzRow{
			{"group with ACLs, none for the principal", "noacl", "g", "SCRAM-SHA-256"},
			{"group with the principal's ACL", "exact", "g", "SCRAM-SHA-512"},
			{"group without ACLs", "noacl", "gopen", "SCRAM-SHA-256"},
			{"group without ACLs, OAUTHBEARER", "exact", "gopen", "OAUTHBEARER"},
		})
	})
	t.Run("custom authorizer", func(t *testing.T) {
		admin, secure, chAddr := authzVariant(t, authorizerDir, map[string]string{
			"authorizer.class.name": "io.coordhost.interop.authorizer.NameRuleAuthorizer"})
		authzTable(t, secure, chAddr, admin, 3000, []authzRow{
			{"everything on groups and topics", "opsuser", "g", "SCRAM-SHA-256"},
			{"describe only", "rouser", "g", "SCRAM-SHA-512"},
			{"nothing", "noacl", "g", "SCRAM-SHA-256"},
			{"everything", "admin", "g", "SCRAM-SHA-256"},
			{"describe only, OAUTHBEARER", "rouser", "g", "OAUTHBEARER"},
		})
	})
}

// authzVariant starts a secured broker from project with the authorizer
// settings, creates topic t, and starts coordhost in front of it.
func authzVariant(t *testing.T, project string, authorizer map[string]string) (admin *kgo.Client, secure, chAddr string) {
	start := time.Now()
	dir := logDir(t)
	plain, secure := startSecureBrokerWith(t, project, dir, authorizer)
	admin, err := kgo.NewClient(kgo.SeedBrokers(plain))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	createTopics(t, admin, 1, "t")
	ch := startCoordhost(t, dir, secure, "--dataplane.sasl.mechanism=SCRAM-SHA-256",
		"--dataplane.sasl.username=admin", "--dataplane.sasl.password="+adminPassword, "--dataplane.authorization.cache.ttl=1s")
	t.Logf("broker and coordhost up in %v", time.Since(start).Round(time.Second))
	return admin, secure, ch.addr
}
