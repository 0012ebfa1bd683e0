package host_test

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/coordhost/coordhost/host"
	"github.com/coordhost/coordhost/internal/testtool"
)

// embeddedSecurityYAML: users (a super user, users with exact, prefixed,
// DENY-over-ALLOW and no ACLs) and ACLs in Kafka's shape, with a User:*
// ACL on its own group.
const embeddedSecurityYAML = `
embedded:
  super.users: [User:admin]
  sasl:
    users:
      - {user: admin, password.file: PWFILE}
      - {user: exact, password: exact-secret, mechanism: SCRAM-SHA-512}
      - {user: prefixed, password: prefixed-secret}
      - {user: denyover, password: denyover-secret}
      - {user: noacl, password: noacl-secret}
  acls:
    - {principal: "User:exact", resource.type: group, name: g, operation: read, permission: allow}
    - {principal: "User:exact", resource.type: topic, name: t, operation: read, permission: allow}
    - {principal: "User:prefixed", resource.type: group, pattern.type: prefixed, name: g, operation: describe, permission: allow}
    - {principal: "User:denyover", resource.type: group, name: g, operation: all, permission: allow}
    - {principal: "User:denyover", resource.type: group, name: g, operation: read, permission: deny}
    - {principal: "User:*", resource.type: group, name: gw, operation: read, permission: allow}
`

func startSecuredEmbedded(t *testing.T, dataDir, adminPassword string) *host.Server {
	t.Helper()
	pw := filepath.Join(t.TempDir(), "admin.password")
	if err := os.WriteFile(pw, []byte(adminPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "coordhost.yaml")
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(embeddedSecurityYAML, "PWFILE", pw)), 0o600); err != nil {
		t.Fatal(err)
	}
	return startLoopHost(t, dataDir, "--config="+cfg)
}

// scramClient logs in to addr as user with mech (256 or 512).
func scramClient(t *testing.T, addr, user, pass string, sha512 bool, opts ...kgo.Opt) *kgo.Client {
	a := scram.Auth{User: user, Pass: pass}
	m := a.AsSha256Mechanism()
	if sha512 {
		m = a.AsSha512Mechanism()
	}
	return newClient(t, addr, append([]kgo.Opt{kgo.SASL(m)}, opts...)...)
}

// heartbeatCode sends a Heartbeat for group to coordhost's node 0 (no
// coordinator lookup) and returns its error code.
func heartbeatCode(t *testing.T, cl *kgo.Client, group string) int16 {
	t.Helper()
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.Generation, req.MemberID = group, 1, "nobody"
	resp, err := req.RequestWith(timeout(t), cl.Broker(0))
	if err != nil {
		t.Fatalf("heartbeat %s: %v", group, err)
	}
	return resp.ErrorCode
}

func describeCode(t *testing.T, cl *kgo.Client, group string) (int16, int32) {
	t.Helper()
	req := kmsg.NewPtrDescribeGroupsRequest()
	req.Groups, req.IncludeAuthorizedOperations = []string{group}, true
	resp, err := req.RequestWith(timeout(t), cl.Broker(0))
	if err != nil {
		t.Fatalf("describe %s: %v", group, err)
	}
	return resp.Groups[0].ErrorCode, resp.Groups[0].AuthorizedOperations
}

// TestEmbeddedUsersAndACLs: with embedded.sasl.users and embedded.acls,
// coordhost in embedded mode authenticates every client with those SCRAM
// users and authorizes group requests as Kafka's StandardAuthorizer would
// (exact, prefixed, DENY over ALLOW, User:*, super user); a request
// before authentication closes the connection; the data plane refuses a
// produce without WRITE; the ACLs cannot be changed over the Kafka
// protocol; after a restart on the same data directory the configured
// password (not the old one) is the one that works.
func TestEmbeddedUsersAndACLs(t *testing.T) {
	dir := t.TempDir()
	srv := startSecuredEmbedded(t, dir, "admin-secret")
	addr := srv.KafkaAddr()
	gaf, none := kerr.GroupAuthorizationFailed.Code, kerr.UnknownMemberID.Code // UNKNOWN_MEMBER_ID: allowed, then refused by the group

	t.Run("unauthenticated", func(t *testing.T) {
		cl := newClient(t, addr)
		req := kmsg.NewPtrHeartbeatRequest()
		req.Group, req.Generation, req.MemberID = "g", 1, "nobody"
		if resp, err := req.RequestWith(timeout(t), cl.Broker(0)); err == nil {
			t.Fatalf("a heartbeat before authentication was answered: %+v", resp)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		cl := scramClient(t, addr, "exact", "not-it", true)
		if err := cl.Ping(timeout(t)); err == nil {
			t.Fatal("a wrong password authenticated")
		}
	})

	admin := scramClient(t, addr, "admin", "admin-secret", false, kgo.AllowAutoTopicCreation(), kgo.DefaultProduceTopic("t"))
	exact := scramClient(t, addr, "exact", "exact-secret", true)
	prefixed := scramClient(t, addr, "prefixed", "prefixed-secret", false)
	denyover := scramClient(t, addr, "denyover", "denyover-secret", true)
	noacl := scramClient(t, addr, "noacl", "noacl-secret", false, kgo.DefaultProduceTopic("t"))
	if err := admin.ProduceSync(timeout(t), kgo.StringRecord("v")).FirstErr(); err != nil {
		t.Fatalf("the super user's produce: %v", err)
	}

	for _, c := range []struct {
		name  string
		cl    *kgo.Client
		group string
		want  int16
	}{
		{"super user", admin, "g", none},
		{"exact ACL", exact, "g", none},
		{"exact ACL, other group", exact, "h", gaf},
		{"prefixed DESCRIBE is not READ", prefixed, "gx", gaf},
		{"DENY over ALLOW", denyover, "g", gaf},
		{"no ACL", noacl, "g", gaf},
		{"wildcard User:*", noacl, "gw", none},
	} {
		if got := heartbeatCode(t, c.cl, c.group); got != c.want {
			t.Errorf("%s: heartbeat %s answered %v, want %v", c.name, c.group, kerr.ErrorForCode(got), kerr.ErrorForCode(c.want))
		}
	}
	read, desc, del := int32(1<<kmsg.ACLOperationRead), int32(1<<kmsg.ACLOperationDescribe), int32(1<<kmsg.ACLOperationDelete)
	dconf, aconf := int32(1<<kmsg.ACLOperationDescribeConfigs), int32(1<<kmsg.ACLOperationAlterConfigs)
	for _, c := range []struct {
		name  string
		cl    *kgo.Client
		group string
		code  int16
		ops   int32
	}{
		{"prefixed DESCRIBE", prefixed, "gx", 0, desc},
		{"DENY of READ keeps the rest of ALL", denyover, "g", 0, desc | del | dconf | aconf},
		{"READ implies DESCRIBE", exact, "g", 0, read | desc},
		{"no ACL", noacl, "g", gaf, 0},
	} {
		code, ops := describeCode(t, c.cl, c.group)
		if code != c.code || code == 0 && ops != c.ops {
			t.Errorf("%s: describe %s answered %v ops %b, want %v ops %b", c.name, c.group, kerr.ErrorForCode(code), ops, kerr.ErrorForCode(c.code), c.ops)
		}
	}

	if err := noacl.ProduceSync(timeout(t), kgo.StringRecord("v")).FirstErr(); err == nil {
		t.Error("a produce without WRITE on t was accepted")
	}
	ca := kmsg.NewPtrCreateACLsRequest()
	ca.Creations = []kmsg.CreateACLsRequestCreation{{ResourceType: kmsg.ACLResourceTypeGroup, ResourceName: "h", ResourcePatternType: kmsg.ACLResourcePatternTypeLiteral,
		Principal: "User:noacl", Host: "*", Operation: kmsg.ACLOperationAll, PermissionType: kmsg.ACLPermissionTypeAllow}}
	if resp, err := ca.RequestWith(timeout(t), admin); err != nil || resp.Results[0].ErrorCode != kerr.SecurityDisabled.Code {
		t.Errorf("CreateACLs over the Kafka protocol: %v %+v, want SECURITY_DISABLED", err, resp)
	}

	stopHost(t, srv)
	srv = startSecuredEmbedded(t, dir, "new-secret")
	addr = srv.KafkaAddr()
	if err := scramClient(t, addr, "admin", "admin-secret", false).Ping(timeout(t)); err == nil {
		t.Error("the old password still works after a restart with a new one")
	}
	again := scramClient(t, addr, "admin", "new-secret", false, kgo.ConsumeTopics("t"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	fs := again.PollFetches(timeout(t))
	if fs.NumRecords() != 1 {
		t.Errorf("after the restart the super user reads %d records of t, want 1 (errors %v)", fs.NumRecords(), fs.Errors())
	}
}

// TestEmbeddedUsersWithClientCertificates: with client certificates
// required as well, the certificate admits the connection and the SASL
// principal is the one authorized, as on a Kafka SASL_SSL listener with
// ssl.client.auth=required.
func TestEmbeddedUsersWithClientCertificates(t *testing.T) {
	dir := t.TempDir()
	pki := testtool.NewPKI(t, "test CA")
	certFile, keyFile := testtool.WriteCert(t, dir, "server", pki.Issue(t, pkix.Name{CommonName: "coordhost"}))
	cert := pki.Issue(t, pkix.Name{CommonName: "alice"})
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("admin-secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "coordhost.yaml")
	if err := os.WriteFile(cfg, []byte(strings.ReplaceAll(embeddedSecurityYAML, "PWFILE", pw)), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := startLoopHost(t, "", "--config="+cfg, "--kafka.tls.cert.file="+certFile, "--kafka.tls.key.file="+keyFile, "--kafka.tls.client.ca.file="+pki.WriteCA(t, dir))
	tlsWith := func(certs []tls.Certificate) kgo.Opt {
		return kgo.DialTLSConfig(&tls.Config{RootCAs: pki.Pool, Certificates: certs})
	}
	if err := scramClient(t, srv.KafkaAddr(), "exact", "exact-secret", true, tlsWith(nil)).Ping(timeout(t)); err == nil {
		t.Fatal("a client without a certificate was served")
	}
	noSASL := newClient(t, srv.KafkaAddr(), tlsWith([]tls.Certificate{cert}))
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group, req.Generation, req.MemberID = "g", 1, "nobody"
	if resp, err := req.RequestWith(timeout(t), noSASL.Broker(0)); err == nil {
		t.Fatalf("a heartbeat with a certificate but before SASL was answered: %+v", resp)
	}
	exact := scramClient(t, srv.KafkaAddr(), "exact", "exact-secret", true, tlsWith([]tls.Certificate{cert}))
	if got := heartbeatCode(t, exact, "g"); got != kerr.UnknownMemberID.Code {
		t.Errorf("exact's heartbeat on g: %v, want UNKNOWN_MEMBER_ID (allowed)", kerr.ErrorForCode(got))
	}
	if got := heartbeatCode(t, exact, "h"); got != kerr.GroupAuthorizationFailed.Code {
		t.Errorf("exact's heartbeat on h: %v, want GROUP_AUTHORIZATION_FAILED", kerr.ErrorForCode(got))
	}
}
