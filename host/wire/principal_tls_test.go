package wire

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// issue makes a certificate for subject signed by parent (self-signed CA when parent is nil).
func issue(t *testing.T, subject pkix.Name, parent *tls.Certificate, ca bool) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: subject, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	if ca {
		tmpl.IsCA, tmpl.BasicConstraintsValid, tmpl.KeyUsage = true, true, x509.KeyUsageCertSign
	}
	signer, signerKey := tmpl, any(key)
	if parent != nil {
		signer, signerKey = parent.Leaf, parent.PrivateKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, signer, &key.PublicKey, signerKey)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}
}

// TestClientCertificatePrincipal: a listener that requires client
// certificates admits a client whose certificate its CA signed and gives
// each request that certificate's principal; a client without one, or
// with one of another CA, is not served.
func TestClientCertificatePrincipal(t *testing.T) {
	ca := issue(t, pkix.Name{CommonName: "test CA"}, nil, true)
	other := issue(t, pkix.Name{CommonName: "other CA"}, nil, true)
	server := issue(t, pkix.Name{CommonName: "coordhost"}, &ca, false)
	alice := issue(t, pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"Org, Inc."}}, &ca, false)
	mallory := issue(t, pkix.Name{CommonName: "alice", OrganizationalUnit: []string{"eng"}, Organization: []string{"Org, Inc."}}, &other, false)
	pool := x509.NewCertPool()
	pool.AddCert(ca.Leaf)

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
