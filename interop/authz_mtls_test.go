package interop

import (
	"bufio"
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/internal/testtool"
)

// testClientCertificates: coordhost with client certificates required, in
// front of the SASL broker. A client without a certificate is not served;
// with one, it still authenticates with SASL before any group request, and
// the principal authorized is the SASL one (Kafka's SASL_SSL), which the
// audit line names beside the certificate's.
func testClientCertificates(t *testing.T, dir, secure string, pki *testtool.PKI) {
	certFile, keyFile := testtool.WriteCert(t, t.TempDir(), "coordhost", pki.Issue(t, pkix.Name{CommonName: "coordhost"}))
	ch := startCoordhost(t, dir, secure, "--dataplane.sasl.mechanism=SCRAM-SHA-256",
		"--dataplane.sasl.username=admin", "--dataplane.sasl.password="+adminPassword, "--dataplane.authorization.cache.ttl=1s",
		"--kafka.tls.cert.file="+certFile, "--kafka.tls.key.file="+keyFile, "--kafka.tls.client.ca.file="+pki.WriteCA(t, t.TempDir()))
	client := pki.Issue(t, pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}})
	dial := func(certs ...tls.Certificate) *rawConn { return dialTLS(t, ch.addr, pki, certs...) }
	hb := groupRequests("g", 0)[3]

	if c := dial(); c != nil {
		if _, err := c.do(kmsg.NewPtrApiVersionsRequest()); err == nil {
			t.Fatal("a client without a certificate was served")
		}
	}
	c := dial(client)
	if c == nil {
		t.Fatal("TLS handshake with a client certificate failed")
	}
	if _, err := c.do(kmsg.NewPtrApiVersionsRequest()); err != nil {
		t.Fatalf("ApiVersions with a client certificate: %v", err)
	}
	if resp, err := c.do(hb); err == nil {
		t.Fatalf("a group request with a certificate but before SASL was answered: %+v", resp)
	}
	for user, refused := range map[string]bool{"noacl": true, "admin": false} {
		c := dial(client)
		if err := c.login(user, "SCRAM-SHA-256"); err != nil {
			t.Fatalf("login %s over mTLS: %v", user, err)
		}
		resp, err := c.do(hb)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.(*kmsg.HeartbeatResponse).ErrorCode == kerr.GroupAuthorizationFailed.Code; got != refused {
			t.Errorf("heartbeat as %s with a certificate: refused %v, want %v (the SASL principal decides)", user, got, refused)
		}
	}
	lines := ch.proc.grepWithin(5*time.Second, `certificate="User:CN=alice,OU=eng"`)
	if len(lines) != 1 || len(ch.proc.grepWithin(5*time.Second, "principal=User:noacl")) != 1 {
		t.Errorf("audit lines naming the certificate: %q", lines)
	}
}

// dialTLS opens a TLS connection presenting certs (nil when the handshake
// fails).
func dialTLS(t *testing.T, addr string, pki *testtool.PKI, certs ...tls.Certificate) *rawConn {
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, &tls.Config{RootCAs: pki.Pool, Certificates: certs})
	if err != nil {
		return nil
	}
	t.Cleanup(func() { nc.Close() })
	return &rawConn{nc: nc, br: bufio.NewReader(nc)}
}

// certACLs: ACLs of certificate principals, named as the broker's default
// principal mapping names them (User: and the subject's DN).
// Each principal has its own group (a group's state, such as a Streams
// topology another principal's heartbeat created, changes its answers).
var certACLs = []acl{
	{"User:CN=certok", rGroup, "gc-certok", literal, kmsg.ACLOperationRead, allow},
	{"User:CN=certok", rTopic, "t", literal, kmsg.ACLOperationRead, allow},
	{"User:CN=certdeny,OU=eng", rGroup, "gc-", prefixed, kmsg.ACLOperationAll, allow},
	{"User:CN=certdeny,OU=eng", rGroup, "gc-certdeny", literal, kmsg.ACLOperationRead, deny},
}

// testCertificatePrincipals: coordhost with client certificates and
// dataplane.authorization.client.certificates=delegation-tokens, without
// client SASL. A client's certificate principal is the one authorized:
// every group API, and a forwarded Metadata's topic authorized operations,
// get through coordhost the broker's answers to the same certificate on
// its own SSL listener (ssl.client.auth=required); refused commits write
// nothing, and audit lines name the certificate's principal.
func testCertificatePrincipals(t *testing.T, dir, secure, ssl string, pki *testtool.PKI, admin *kgo.Client) {
	createACLs(t, admin, certACLs)
	certFile, keyFile := testtool.WriteCert(t, t.TempDir(), "coordhost", pki.Issue(t, pkix.Name{CommonName: "coordhost"}))
	ch := startCoordhost(t, dir, secure, "--dataplane.sasl.mechanism=SCRAM-SHA-256",
		"--dataplane.sasl.username=admin", "--dataplane.sasl.password="+adminPassword, "--dataplane.authorization.cache.ttl=1s",
		"--kafka.tls.cert.file="+certFile, "--kafka.tls.key.file="+keyFile, "--kafka.tls.client.ca.file="+pki.WriteCA(t, t.TempDir()),
		"--dataplane.authorization.client.certificates=delegation-tokens")
	md := kmsg.NewPtrMetadataRequest()
	md.SetVersion(12)
	md.IncludeTopicAuthorizedOperations = true
	md.Topics = []kmsg.MetadataRequestTopic{{Topic: kmsg.StringPtr("t")}}
	for i, subject := range []pkix.Name{
		{CommonName: "certok"},
		{CommonName: "certdeny", OrganizationalUnit: []string{"eng"}},
		{CommonName: "certno"},
	} {
		t.Run(subject.String(), func(t *testing.T) {
			cert := pki.Issue(t, subject)
			direct, through := dialTLS(t, ssl, pki, cert), dialTLS(t, ch.addr, pki, cert)
			if direct == nil || through == nil {
				t.Fatalf("TLS with a client certificate: broker %v, coordhost %v", direct != nil, through != nil)
			}
			compareGroupAPIs(t, direct, through, admin, "User:"+subject.String(), "gc-"+subject.CommonName, int64(3000+i), true)
			want, err := direct.do(md)
			if err != nil {
				t.Fatal(err)
			}
			got, err := through.do(md)
			if err != nil {
				t.Fatal(err)
			}
			if g, w := authCodes(got), authCodes(want); g != w {
				t.Errorf("Metadata of t: coordhost %s, broker %s", g, w)
			}
		})
	}
	if lines := ch.proc.grepWithin(5*time.Second, `principal="User:CN=certno"`); len(lines) == 0 || !strings.Contains(lines[0], "authorization denied") {
		t.Errorf("no audit line names the certificate's principal: %q", lines)
	}
}
