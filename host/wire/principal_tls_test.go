package wire

import (
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/internal/testtool"
)

// TestClientCertificatePrincipal: a listener that requires client
// certificates admits a client whose certificate its CA signed and gives
// each request that certificate's principal; a client without one, or
// with one of another CA, is not served.
func TestClientCertificatePrincipal(t *testing.T) {
	pki, other := testtool.NewPKI(t, "test CA"), testtool.NewPKI(t, "other CA")
	server := pki.Issue(t, pkix.Name{CommonName: "coordhost"})
	subject := pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"Org, Inc."}}
	alice, mallory := pki.Issue(t, subject), other.Issue(t, subject)
	pool := pki.Pool

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *Request, 1)
	s := NewServer(ln, Config{
		Table: NewTable(kafka44),
		TLS:   &tls.Config{Certificates: []tls.Certificate{server}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12},
		Group: func(_ context.Context, req *Request) (kmsg.Response, error) {
			got <- req
			return ErrorResponse(req.Body, 0), nil
		},
	})
	defer s.Shutdown(context.Background())

	heartbeat := func(cert *tls.Certificate) error {
		cfg := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
		if cert != nil {
			cfg.Certificates = []tls.Certificate{*cert}
		}
		nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(), cfg)
		if err != nil {
			return err
		}
		defer nc.Close()
		nc.SetDeadline(time.Now().Add(10 * time.Second))
		hb := kmsg.NewPtrHeartbeatRequest()
		hb.SetVersion(4)
		if _, err := nc.Write(kmsg.NewRequestFormatter().AppendRequest(nil, hb, 1)); err != nil {
			return err
		}
		_, err = ReadFrame(nc, 1<<20)
		return err
	}
	if err := heartbeat(&alice); err != nil {
		t.Fatalf("client with a certificate of the CA: %v", err)
	}
	if p, want := (<-got).CertPrincipal, `User:CN=alice,OU=eng,O=Org\, Inc.`; p != want {
		t.Fatalf("principal %q, want %q", p, want)
	}
	for name, cert := range map[string]*tls.Certificate{"no certificate": nil, "another CA's certificate": &mallory} {
		if err := heartbeat(cert); err == nil {
			t.Errorf("client with %s was served", name)
		}
	}
	select {
	case req := <-got:
		t.Errorf("a request without a verified certificate reached the group handler: %+v", req)
	default:
	}
}
