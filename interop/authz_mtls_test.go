package interop

import (
	"bufio"
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/internal/testtool"
)

// testClientCertificates: coordhost with client certificates required, in
// front of the SASL broker. A client without a certificate is not served;
// with one, it still authenticates with SASL before any group request, and
// the principal authorized is the SASL one (Kafka's SASL_SSL), which the
// audit line names beside the certificate's.
func testClientCertificates(t *testing.T, dir, secure string) {
	pki := testtool.NewPKI(t, "interop CA")
	certFile, keyFile := testtool.WriteCert(t, t.TempDir(), "coordhost", pki.Issue(t, pkix.Name{CommonName: "coordhost"}))
	ch := startCoordhost(t, dir, secure, "--dataplane.sasl.mechanism=SCRAM-SHA-256",
		"--dataplane.sasl.username=admin", "--dataplane.sasl.password="+adminPassword, "--dataplane.authorization.cache.ttl=1s",
		"--kafka.tls.cert.file="+certFile, "--kafka.tls.key.file="+keyFile, "--kafka.tls.client.ca.file="+pki.WriteCA(t, t.TempDir()))
	client := pki.Issue(t, pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}})
	dial := func(certs ...tls.Certificate) *rawConn {
		nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ch.addr, &tls.Config{RootCAs: pki.Pool, Certificates: certs})
		if err != nil {
			return nil
		}
		t.Cleanup(func() { nc.Close() })
		return &rawConn{nc: nc, br: bufio.NewReader(nc)}
	}
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
	lines := ch.proc.grep(`certificate="User:CN=alice,OU=eng"`)
	if len(lines) != 1 || len(ch.proc.grep("principal=User:noacl")) != 1 {
		t.Errorf("audit lines naming the certificate: %q", lines)
	}
}
