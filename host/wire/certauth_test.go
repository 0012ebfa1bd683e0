package wire

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509/pkix"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/coordhost/coordhost/internal/testtool"
)

// tokenLink is a fake upstream that records the SCRAM login coordhost
// runs on it and refuses it (with an error not retried).
type tokenLink struct {
	mu    sync.Mutex
	mech  string
	first []byte
}

func (l *tokenLink) Forward(_ context.Context, _ *string, req kmsg.Request) (kmsg.Response, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch r := req.(type) {
	case *kmsg.SASLHandshakeRequest:
		l.mech = r.Mechanism
	case *kmsg.SASLAuthenticateRequest:
		l.first = r.SASLAuthBytes
		resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.ErrorCode = kerr.IllegalSaslState.Code // not retried, as SASL_AUTHENTICATION_FAILED is for a fresh token
		return resp, nil
	}
	return ErrorResponse(req, 0), nil
}

func (l *tokenLink) Close() error { return nil }

// TestCertLogin: with CertLogin, a client with a certificate is
// authenticated as its principal without SASL (SASL requests get Kafka's
// ILLEGAL_SASL_STATE, as on an SSL listener), and its upstream connection
// logs in with SCRAM and a delegation token of that principal before
// anything is forwarded; a refused login closes the client connection.
func TestCertLogin(t *testing.T) {
	pki := testtool.NewPKI(t, "test CA")
	server, alice := pki.Issue(t, pkix.Name{CommonName: "coordhost"}), pki.Issue(t, pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	link := &tokenLink{}
	asked := make(chan string, 4)
	got := make(chan *Request, 4)
	ranges := map[int16]VersionRange{int16(kmsg.SASLHandshake): {0, 1}, int16(kmsg.SASLAuthenticate): {0, 2}, int16(kmsg.Metadata): {0, 13}}
	s := NewServer(ln, Config{
		Table: NewTable(ranges), SASLRequired: true,
		TLS:  &tls.Config{Certificates: []tls.Certificate{server}, ClientCAs: pki.Pool, ClientAuth: tls.RequireAndVerifyClientCert},
		Dial: func(context.Context) (Upstream, error) { return link, nil },
		CertLogin: &CertLogin{Mechanism: "SCRAM-SHA-256", Credentials: func(_ context.Context, principal string) (string, string, error) {
			asked <- principal
			return "tok1", "aG1hYw==", nil
		}},
		Group: func(_ context.Context, req *Request) (kmsg.Response, error) {
			got <- req
			return ErrorResponse(req.Body, 0), nil
		},
	})
	defer s.Shutdown(context.Background())
	nc, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ln.Addr().String(), &tls.Config{RootCAs: pki.Pool, ServerName: "127.0.0.1", Certificates: []tls.Certificate{alice}})
	if err != nil {
		t.Fatal(err)
	}
	nc.SetDeadline(time.Now().Add(10 * time.Second))
	c := &client{t: t, c: nc, br: bufio.NewReader(nc)}

	c.heartbeat() // served although SASL is required: the certificate authenticated it
	if r := <-got; !r.Authenticated || !r.CertAuthenticated || r.CertPrincipal != "User:CN=alice,OU=eng" || r.AuthGeneration != 1 {
		t.Fatalf("request: %+v", r)
	}
	if hr := c.handshake("SCRAM-SHA-256"); hr.ErrorCode != kerr.IllegalSaslState.Code {
		t.Fatalf("SaslHandshake: %v, want ILLEGAL_SASL_STATE", kerr.ErrorForCode(hr.ErrorCode))
	}
	md := kmsg.NewPtrMetadataRequest()
	c.send(md, 12, 7)
	c.expectClosed() // the fake cluster refused the token
	if p := <-asked; p != "User:CN=alice,OU=eng" {
		t.Fatalf("token asked for %q", p)
	}
	link.mu.Lock()
	defer link.mu.Unlock()
	if link.mech != "SCRAM-SHA-256" || !bytes.Contains(link.first, []byte("n=tok1,")) || !bytes.Contains(link.first, []byte(",tokenauth=true")) {
		t.Fatalf("upstream login: mechanism %q, first message %q", link.mech, link.first)
	}
}
